/*
 * rate_limit_ece.c - the QP verbs only hardware providers implement:
 * packet pacing (QP.modify_rate_limit, ibv_modify_qp_rate_limit, a static
 * inline over a verbs_context op) and enhanced connection establishment
 * (QP.query_ece / QP.set_ece, exported since rdma-core 31, found with
 * dlsym).  rxe answers EOPNOTSUPP to all three; the recording double
 * (tests/fakes/recording) checks what is passed.
 *
 * A feature file: qp.c's method table names these functions, and nothing
 * here calls into qp.c.
 */
#include "ibverbs.h"
#include "qp/qp.h"
#include <string.h>

const char qp_modify_rate_limit__doc__[] = PyDoc_STR(
	"Set the QP's send rate limit (packet pacing).\n"
	"\n"
	"Wraps ``ibv_modify_qp_rate_limit`` (man page\n"
	"ibv_modify_qp_rate_limit(3)), comp_mask 0. Never run on\n"
	"hardware here; checked against the recording double.\n"
	"\n"
	"Args:\n"
	"    rate_limit: the rate in kbps, 0 for unlimited.\n"
	"    max_burst_sz: the burst size in bytes, 0 for the default.\n"
	"    typical_pkt_sz: the typical packet size in bytes, 0 for the\n"
	"        default (the path MTU).\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int.\n"
	"    ValueError: an argument is out of range (32 bits; 16 for\n"
	"        typical_pkt_sz).\n"
	"    VerbsError: EBADF once the QP is closed; EOPNOTSUPP when the\n"
	"        provider has no packet pacing (rxe); else the verb\n"
	"        failed (``errno``).");

#define RATE_LIMIT_ARGS(X, S)                                \
	X(S, UINT, uint32_t, rate_limit)                     \
	X(S, UINT, uint32_t, max_burst_sz, .flags = ARG_OPT) \
	X(S, UINT, uint16_t, typical_pkt_sz, .flags = ARG_OPT)
ARGS_METHOD(extern, qp_modify_rate_limit, "QP.modify_rate_limit",
	    RATE_LIMIT_ARGS, self, a)
{
	struct ibv_qp_rate_limit_attr attr;
	int rc;

	memset(&attr, 0, sizeof(attr));
	attr.rate_limit = a->rate_limit;
	attr.max_burst_sz = a->max_burst_sz;
	attr.typical_pkt_sz = a->typical_pkt_sz;
	if (handle_check(HANDLE(self)) < 0)
		return NULL;
	rc = ibv_modify_qp_rate_limit(QPP(self), &attr);
	if (rc != 0)
		return verbs_error_fmt(rc, "ibv_modify_qp_rate_limit",
				       "QP %u: rate_limit=%u max_burst_sz=%u "
				       "typical_pkt_sz=%u",
				       QPP(self)->qp_num, attr.rate_limit,
				       attr.max_burst_sz, attr.typical_pkt_sz);
	Py_RETURN_NONE;
}

const char qp_query_ece__doc__[] = PyDoc_STR(
	"Read the ECE options the QP's connection accepted.\n"
	"\n"
	"Wraps ``ibv_query_ece`` (man page ibv_query_ece(3)). Never run on\n"
	"hardware here; checked against the recording double.\n"
	"\n"
	"Returns:\n"
	"    An ECE record (``vendor_id``, ``options``, ``comp_mask``).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBADF once the QP is closed; EOPNOTSUPP when the\n"
	"        provider has no ECE (rxe) or libibverbs lacks the verb\n"
	"        (rdma-core < 31); else the verb failed (``errno``).");

PyObject *qp_query_ece(PyObject *self, PyObject *unused)
{
	struct ibv_ece ece;
	PyObject *mod, *cls, *res;
	int rc;

	HANDLE_CHECK(self);
	IBV_REQUIRE_OPTIONAL(query_ece, ibv_query_ece, "rdma-core 31");
	memset(&ece, 0, sizeof(ece));
	rc = IBV.query_ece(QPP(self), &ece);
	if (rc != 0)
		return verbs_error_fmt(rc < 0 ? -rc : rc, "ibv_query_ece",
				       "QP %u", QPP(self)->qp_num);
	mod = module_cached(&ST.mod_objects, "ibverbs._objects");
	if (mod == NULL)
		return NULL;
	cls = PyObject_GetAttrString(mod, "ECE");
	if (cls == NULL)
		return NULL;
	res = PyObject_CallFunction(cls, "kkk", (unsigned long)ece.vendor_id,
				    (unsigned long)ece.options,
				    (unsigned long)ece.comp_mask);
	Py_DECREF(cls);
	return res;
}

/* ece.<name> as a u32. */
static int ece_u32(PyObject *ece, const char *name, uint32_t *out)
{
	PyObject *v = PyObject_GetAttrString(ece, name);
	char what[24];
	int rc;

	if (v == NULL) {
		if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
			PyErr_Clear();
			snprintf(what, sizeof(what), "no %s", name);
			arg_type_error_hint("ece", "ECE", 0, ece, what);
		}
		return -1;
	}
	snprintf(what, sizeof(what), "ece.%s", name);
	rc = arg_u32(v, what, out);
	Py_DECREF(v);
	return rc;
}

const char qp_set_ece__doc__[] = PyDoc_STR(
	"Offer ECE options for the QP's connection (before it is\n"
	"connected; the CM or the out-of-band exchange carries them).\n"
	"\n"
	"Wraps ``ibv_set_ece`` (man page ibv_set_ece(3)). Never run on\n"
	"hardware here; checked against the recording double.\n"
	"\n"
	"Args:\n"
	"    ece: an ECE record (``vendor_id``, ``options``,\n"
	"        ``comp_mask``), e.g. from the peer's ``query_ece()``.\n"
	"\n"
	"Raises:\n"
	"    TypeError: ece lacks a field or one is not an int.\n"
	"    ValueError: a field is out of range (32 bits).\n"
	"    VerbsError: EBADF once the QP is closed; EOPNOTSUPP when the\n"
	"        provider has no ECE (rxe) or libibverbs lacks the verb\n"
	"        (rdma-core < 31); else the verb failed (``errno``).");

PyObject *qp_set_ece(PyObject *self, PyObject *arg)
{
	struct ibv_ece ece;
	int rc;

	HANDLE_CHECK(self);
	IBV_REQUIRE_OPTIONAL(set_ece, ibv_set_ece, "rdma-core 31");
	memset(&ece, 0, sizeof(ece));
	if (ece_u32(arg, "vendor_id", &ece.vendor_id) < 0 ||
	    ece_u32(arg, "options", &ece.options) < 0 ||
	    ece_u32(arg, "comp_mask", &ece.comp_mask) < 0)
		return NULL;
	if (handle_check(HANDLE(self)) < 0)
		return NULL;
	rc = IBV.set_ece(QPP(self), &ece);
	if (rc != 0)
		return verbs_error_fmt(rc < 0 ? -rc : rc, "ibv_set_ece",
				       "QP %u: vendor_id=0x%x options=0x%x",
				       QPP(self)->qp_num, ece.vendor_id,
				       ece.options);
	Py_RETURN_NONE;
}
