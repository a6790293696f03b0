/*
 * cq/cq.h - what CQ and CQEx share beyond ibverbs.h: the poll
 * storage (cq.c).
 */
#ifndef IBVERBS_CQ_CQ_H
#define IBVERBS_CQ_CQ_H

#include "ibverbs.h"

/* CQ.poll()/CQEx.poll(): a list of build(elem) for the first n elements
 * (size bytes each) of a CQ's poll storage *store, which is taken from
 * the CQ for the loop and given back after it.  NULL on an error. */
PyObject *list_from_store(void **store, int *store_len, size_t size, int n,
			  PyObject *(*build)(const void *elem));

#endif /* IBVERBS_CQ_CQ_H */
