/*
 * efa_cq.c - efa.CQ: an extended CQ made by efadv_create_cq, a subclass
 * of CQEx, whose current entry (in a start_poll() session) also tells
 * the sender's GID (efadv_wc_read_sgid) and whether an RDMA WRITE with
 * immediate arrived unsolicited (efadv_wc_is_unsolicited): static
 * inlines of efadv.h over the struct efadv_cq that
 * efadv_cq_from_ibv_cq_ex returns; and the ring's layout
 * (efadv_query_cq).
 *
 * efadv_cq_from_ibv_cq_ex is a bare container_of in libefa: it is only
 * ever called on an efa.CQ, whose CQ libefa made.  libefa sets a reader
 * only when its wc_flags bit was asked for: a NULL one is refused.
 */
#include "efa/efa.h"
#include "cq/cq.h"
#include <string.h>

/* ------------------------------------------------------------------ */
/* efa.create_cq                                                       */
/* ------------------------------------------------------------------ */

struct efa_cq_args {
	PyObject *context;
	PyObject *init_attr;
	uint64_t efa_wc_flags;
};

static struct ibv_cq_ex *efa_cq_make(struct ibv_context *ctx,
				     struct ibv_cq_init_attr_ex *a, void *arg)
{
	const struct efa_cq_args *x = arg;
	struct efa_m_cq_init_attr ea;

	memset(&ea, 0, sizeof(ea));
	ea.wc_flags = x->efa_wc_flags;
	return EFA.create_cq(ctx, a, &ea, sizeof(ea));
}

METHOD_DOC(efa_mod_create_cq,
	   "Create an EFA extended CQ, whose entries can also tell the\n"
	   "sender's GID and whether they arrived unsolicited.\n"
	   "\n"
	   "Wraps ``efadv_create_cq`` (efadv.h, rdma-core 43).\n"
	   "\n"
	   "Args:\n"
	   "    context: an open Context of an EFA device.\n"
	   "    init_attr: a CQInitAttrEx, as ``Context.create_cq_ex()``\n"
	   "        takes.\n"
	   "    efa_wc_flags: ``WCFlags`` bits (WITH_SGID,\n"
	   "        WITH_IS_UNSOLICITED): the readers the CQ offers.\n"
	   "\n"
	   "Returns:\n"
	   "    The new efa.CQ.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: an argument has the wrong type.\n"
	   "    ValueError: a value is out of range, or the channel is of\n"
	   "        another Context.\n" EFA_RAISES_LIB);

static const ArgSpec efa_cq_params[] = {
	ARG_HANDLE(struct efa_cq_args, context, Context, ARG_ANY_PARENT),
	ARG_RECORD(struct efa_cq_args, init_attr, CQInitAttrEx),
	ARG_FLAGS(struct efa_cq_args, efa_wc_flags, WCFlags, .flags = ARG_OPT),
	ARG_END
};
METHOD_ARGS(efa_mod_create_cq, "_efa_create_cq", efa_cq_params);

ARGS_FUNCTION_OF(extern, efa_mod_create_cq, mod, struct efa_cq_args, a)
{
	if (EFA_NEED(create_cq, "rdma-core 43") < 0)
		return NULL;
	return cqex_create(a->context, a->init_attr, ST.EfaCQ_type,
			   "efadv_create_cq", efa_cq_make, a);
}

/* ------------------------------------------------------------------ */
/* The readers of the current entry                                    */
/* ------------------------------------------------------------------ */

/* The struct efadv_cq of the efa.CQ self in a session on an entry, or
 * NULL with an error set. */
static struct efa_m_cq *efa_cq_entry(PyObject *self, const char *verb)
{
	struct ibv_cq_ex *cq;

	if (EFA_NEED(cq_from_ibv_cq_ex, "rdma-core 43") < 0)
		return NULL;
	cq = cqex_entry(self, verb, 0);
	if (cq == NULL)
		return NULL;
	return EFA.cq_from_ibv_cq_ex(cq);
}

PyDoc_STRVAR(efa_cq_read_sgid__doc__,
	     "The sender's GID of the current entry (a receive).\n"
	     "\n"
	     "Wraps ``efadv_wc_read_sgid`` (a static inline of efadv.h, over\n"
	     "``efadv_cq_from_ibv_cq_ex``; rdma-core 43).  Reads the current\n"
	     "entry of the open start_poll() session.\n"
	     "\n"
	     "Returns:\n"
	     "    A ``Gid``, or None when the entry carries none (the\n"
	     "    sender has an AH here: its number is ``wc.slid``).\n"
	     "\n"
	     "Raises:\n"
	     "    ValueError: no session is open, or no current entry.\n"
	     "    ImportError: libefa.so.1 cannot be loaded.\n"
	     "    VerbsError: EOPNOTSUPP when the CQ was made without\n"
	     "        ``WCFlags.WITH_SGID``; EBADF once closed.");

static PyObject *efa_cq_read_sgid(PyObject *self, PyObject *unused)
{
	static const char verb[] = "efadv_wc_read_sgid";
	struct efa_m_cq *dv;
	union ibv_gid gid;
	int rc;

	HANDLE_CHECK(self);
	dv = efa_cq_entry(self, verb);
	if (dv == NULL)
		return NULL;
	if (dv->wc_read_sgid == NULL)
		return verbs_error_fmt(EOPNOTSUPP, verb,
				       "the CQ was created without "
				       "WCFlags.WITH_SGID");
	memset(&gid, 0, sizeof(gid));
	rc = dv->wc_read_sgid(dv, &gid);
	if (rc != 0)
		Py_RETURN_NONE;
	return PyObject_CallFunction(ST.Gid, "y#", (const char *)gid.raw,
				     (Py_ssize_t)sizeof(gid.raw));
}

PyDoc_STRVAR(efa_cq_is_unsolicited__doc__,
	     "Whether the current entry is an RDMA WRITE with immediate\n"
	     "that consumed no posted receive (``QPFlags.\n"
	     "UNSOLICITED_WRITE_RECV``).\n"
	     "\n"
	     "Wraps ``efadv_wc_is_unsolicited`` (a static inline of efadv.h,\n"
	     "over ``efadv_cq_from_ibv_cq_ex``; rdma-core 52).  Reads the\n"
	     "current entry of the open start_poll() session.\n"
	     "\n"
	     "Returns:\n"
	     "    A bool.\n"
	     "\n"
	     "Raises:\n"
	     "    ValueError: no session is open, or no current entry.\n"
	     "    ImportError: libefa.so.1 cannot be loaded.\n"
	     "    VerbsError: EOPNOTSUPP when the CQ was made without\n"
	     "        ``WCFlags.WITH_IS_UNSOLICITED``; EBADF once closed.");

static PyObject *efa_cq_is_unsolicited(PyObject *self, PyObject *unused)
{
	static const char verb[] = "efadv_wc_is_unsolicited";
	struct efa_m_cq *dv;

	HANDLE_CHECK(self);
	dv = efa_cq_entry(self, verb);
	if (dv == NULL)
		return NULL;
	if (dv->wc_is_unsolicited == NULL)
		return verbs_error_fmt(EOPNOTSUPP, verb,
				       "the CQ was created without "
				       "WCFlags.WITH_IS_UNSOLICITED");
	return PyBool_FromLong(dv->wc_is_unsolicited(dv));
}

/* ------------------------------------------------------------------ */
/* efa.CQ.query                                                        */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(efa_cq_query__doc__,
	     "The CQ's ring and doorbell, for code that polls without\n"
	     "libefa.\n"
	     "\n"
	     "Wraps ``efadv_query_cq`` (efadv.h, rdma-core 59).  The record\n"
	     "keeps the CQ object alive; its memoryviews are read-only and\n"
	     "valid until the CQ's ``close()``.\n"
	     "\n"
	     "Returns:\n"
	     "    An ``EfaCQAttr``: ``buffer`` and ``doorbell`` (addresses,\n"
	     "    ints), ``ring`` and ``doorbell_view`` (read-only\n"
	     "    memoryviews, or None), ``entry_size``, ``num_entries``\n"
	     "    and ``cq``.\n"
	     "\n" EFA_RAISES_RING);

static PyObject *efa_cq_query(PyObject *self, PyObject *unused)
{
	struct efa_m_cq_attr c;
	Py_ssize_t len;
	PyObject *d;
	int rc;

	HANDLE_CHECK(self);
	if (EFA_NEED(query_cq, "rdma-core 59") < 0)
		return NULL;
	memset(&c, 0, sizeof(c));
	rc = EFA.query_cq((struct ibv_cq *)HANDLE(self)->obj, &c, sizeof(c));
	if (rc != 0)
		return verbs_error(rc, "efadv_query_cq");
	len = (Py_ssize_t)c.entry_size * c.num_entries;
	d = PyDict_New();
	if (d == NULL || dict_set_u64(d, "buffer", (uintptr_t)c.buffer) < 0 ||
	    dict_set_u64(d, "entry_size", c.entry_size) < 0 ||
	    dict_set_u64(d, "num_entries", c.num_entries) < 0 ||
	    dict_set_u64(d, "doorbell", (uintptr_t)c.doorbell) < 0 ||
	    dict_set_steal(d, "ring",
			   c.buffer && len ?
				   PyMemoryView_FromMemory((char *)c.buffer,
							   len, PyBUF_READ) :
				   obj_or_none(NULL)) < 0 ||
	    dict_set_steal(d, "doorbell_view",
			   c.doorbell ?
				   PyMemoryView_FromMemory((char *)c.doorbell,
							   4, PyBUF_READ) :
				   obj_or_none(NULL)) < 0 ||
	    dict_set_steal(d, "cq", (Py_INCREF(self), self)) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return objects_record("EfaCQAttr", d);
}

PyDoc_STRVAR(efa_cq__doc__,
	     "An EFA extended CQ made by ``efa.create_cq()``: a CQEx, plus\n"
	     "``read_sgid()``, ``is_unsolicited()`` and ``query()``.");

static PyMethodDef efa_cq_methods[] = {
	METHOD_NOARGS("read_sgid", efa_cq_read_sgid),
	METHOD_NOARGS("is_unsolicited", efa_cq_is_unsolicited),
	METHOD_NOARGS("query", efa_cq_query),
	{ NULL, NULL, 0, NULL }
};

/* The base's traverse (a GC type's spec must name one). */
static int efa_cq_traverse(PyObject *self, visitproc visit, void *arg)
{
	traverseproc base =
		(traverseproc)PyType_GetSlot(ST.CQEx_type, Py_tp_traverse);

	return base(self, visit, arg);
}

static PyType_Slot EfaCQ_slots[] = { { Py_tp_traverse, efa_cq_traverse },
				     { Py_tp_doc, (void *)efa_cq__doc__ },
				     { Py_tp_methods, efa_cq_methods },
				     { 0, NULL } };

PyType_Spec EfaCQ_spec = { "ibverbs.efa.CQ", 0, 0,
			   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
			   EfaCQ_slots };
