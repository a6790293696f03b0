/*
 * ah.c - AH: an address handle (ibv_ah), the destination of a UD send.
 * A SendWR that names an AH holds a reference to it (wr.c).  Also the
 * address of a UD sender from its receive completion and GRH
 * (PD.create_ah_from_wc, Context.init_ah_from_wc).
 */
#include "ibverbs.h"
#include "cq/cq.h"
#include "qp/qp.h"

HANDLE_KIND(ah_kind, "AH", "ibv_destroy_ah", IBV.destroy_ah, NULL);

/* The AH object for a new ibv_ah of pd (destroyed if that fails). */
static PyObject *ah_wrap(PDObject *pd, struct ibv_ah *ah)
{
	return handle_adopt(ST.AH_type, &ah_kind, HANDLE(pd), ah);
}

/* PD.create_ah(attr): attr is an AHAttr or any object with its fields. */
METHOD_DOC(
	pd_create_ah,
	"Create an address handle, the destination of UD sends.\n"
	"\n"
	"``attr`` is an ``AHAttr`` (or any object with some of its\n"
	"fields: dlid, sl, port_num, dgid, sgid_index, hop_limit, ...);\n"
	"a ``dgid`` makes the address global (RoCE needs one) unless\n"
	"``is_global`` says otherwise.\n"
	"\n"
	"Wraps ``ibv_create_ah`` (man page ibv_create_ah(3)).\n"
	"\n"
	"Args:\n"
	"    attr: an AHAttr, or any object with some of its fields.\n"
	"\n"
	"Returns:\n"
	"    The new AH.\n"
	"\n"
	"Raises:\n"
	"    TypeError: attr has none of AHAttr's fields, or a field\n"
	"        has the wrong type.\n"
	"    ValueError: a field is out of range or dgid is no GID.\n" DOC_RAISES_VERB_AS(
		"PD", ", e.g. EINVAL for a bad sgid_index"));

#define CREATE_AH_ARGS(X, S) X(S, RECORD, PyObject *, attr, AHAttr)
ARGS_DECLARE(create_ah, CREATE_AH_ARGS);
METHOD_ARGS(pd_create_ah, "PD.create_ah", create_ah_params);

PyObject *pd_create_ah(PyObject *self, PyObject *args, PyObject *kw)
{
	PDObject *pd = (PDObject *)self;
	struct create_ah_args a;
	struct ibv_ah_attr attr;
	struct ibv_ah *ah;

	HANDLE_CHECK(self);
	if (args_parse(&pd_create_ah_args, self, args, kw, &a) < 0 ||
	    ah_attr_from_py(a.attr, &attr) < 0)
		return NULL;
	/* That ran Python code (Gid(), attribute reads), which may have
	 * closed the PD: check again right before the verb. */
	if (handle_check(HANDLE(pd)) < 0)
		return NULL;
	errno = 0;
	ah = IBV.create_ah((struct ibv_pd *)HANDLE(pd)->obj, &attr);
	if (ah == NULL)
		return verbs_error_errno("ibv_create_ah");
	return ah_wrap(pd, ah);
}

/* ------------------------------------------------------------------ */
/* Replies to a UD sender: the address from its receive completion     */
/* ------------------------------------------------------------------ */

/* The GRH bytes a UD receive put in front of the payload: for RoCE v2
 * over IPv4 the last 20 hold the IPv4 header. */
#define GRH_LEN ((size_t)sizeof(struct ibv_grh))

/* The arguments of both verbs. */
struct from_wc_args {
	uint8_t port;
	PyObject *wc, *grh;
};
#define FROM_WC_PORT ARG_INT(struct from_wc_args, port, 1, UINT8_MAX)
#define FROM_WC_WC ARG_RECORD(struct from_wc_args, wc, WC)
#define FROM_WC_GRH ARG_BUFFER(struct from_wc_args, grh, 40)

/* Both verbs' inputs: the arguments, and the completion and GRH they
 * name in C. */
struct from_wc {
	struct from_wc_args a;
	struct ibv_wc wc;
	struct ibv_grh grh;
};

/* The arguments parsed by m, the verb (fn, named sym, libibverbs 1.1)
 * checked, wc and grh converted and checked, then self's handle again
 * (reading the buffer may have run Python code that closed it); 0 or
 * -1. */
static int from_wc_read(PyObject *self, const MethodArgs *m, PyObject *args,
			PyObject *kw, void *fn, const char *sym,
			struct from_wc *f)
{
	if (args_parse(m, self, args, kw, &f->a) < 0 ||
	    lib_need(fn, "libibverbs", sym, "libibverbs 1.1") < 0 ||
	    wc_to_c(f->a.wc, "wc", &f->wc) < 0 ||
	    arg_bytes_prefix(f->a.grh, "grh", &f->grh, GRH_LEN) < 0)
		return -1;
	return handle_check(HANDLE(self));
}

/* The verb's failure: err (else dflt), with the port and the WC's. */
static PyObject *from_wc_error(int err, int dflt, const char *sym,
			       const struct from_wc *f)
{
	return verbs_error_fmt(err ? err : dflt, sym,
			       "port %u, src_qp %u, wc_flags 0x%x", f->a.port,
			       f->wc.src_qp, f->wc.wc_flags);
}

const char context_init_ah_from_wc__doc__[] = PyDoc_STR(
	"The address of the sender of a UD receive, to reply to it.\n"
	"\n"
	"libibverbs reads the completion (slid, sl, dlid_path_bits and\n"
	"the GRH flag of ``wc_flags``) and, when the GRH flag is set, the\n"
	"GRH bytes the receive wrote in front of the payload: the sender's\n"
	"GID becomes ``dgid``, and the local GID the packet was sent to\n"
	"gives ``sgid_index`` (for RoCE v2 over IPv4 the last 20 of the 40\n"
	"bytes are the IPv4 header). Runs with the GIL released; no\n"
	"provider op is called.\n"
	"\n"
	"Wraps ``ibv_init_ah_from_wc`` (man page ibv_init_ah_from_wc(3)).\n"
	"\n"
	"Args:\n"
	"    port: the port the receive came in on, 1..255.\n"
	"    wc: the receive's WC (or WCEx), from ``CQ.poll()``.\n"
	"    grh: the receive buffer, or any bytes-like object that starts\n"
	"        with its 40 GRH bytes (bytes, bytearray, memoryview, a\n"
	"        numpy array, ...; C-contiguous); only the first 40 bytes\n"
	"        are read. ``memoryview(buf)[offset:]`` names a GRH inside\n"
	"        a larger buffer.\n"
	"\n"
	"Returns:\n"
	"    An AHAttr for ``PD.create_ah``.\n"
	"\n"
	"Raises:\n"
	"    TypeError: wc is not a WC, or grh not bytes-like.\n"
	"    ValueError: port out of range, or grh under 40 bytes.\n"
	"    VerbsError: EBADF once the Context is closed; else the verb\n"
	"        failed (``errno``: EINVAL for a GRH addressed to a\n"
	"        multicast group, EPROTONOSUPPORT for bytes that are no\n"
	"        GRH, or the local GID the packet names was not found).");

static const ArgSpec init_ah_from_wc_params[] = { FROM_WC_PORT, FROM_WC_WC,
						  FROM_WC_GRH, ARG_END };
METHOD_ARGS(context_init_ah_from_wc, "Context.init_ah_from_wc",
	    init_ah_from_wc_params);

PyObject *context_init_ah_from_wc(PyObject *self, PyObject *args, PyObject *kw)
{
	struct ibv_ah_attr attr;
	struct from_wc f;
	int rc, err;

	HANDLE_CHECK(self);
	if (from_wc_read(self, &context_init_ah_from_wc_args, args, kw,
			 (void *)IBV.init_ah_from_wc, "ibv_init_ah_from_wc",
			 &f) < 0)
		return NULL;
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	rc = IBV.init_ah_from_wc((struct ibv_context *)HANDLE(self)->obj,
				 f.a.port, &f.wc, &f.grh, &attr);
	err = errno;
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
	if (rc != 0)
		return from_wc_error(err, rc > 0 ? rc : EINVAL,
				     "ibv_init_ah_from_wc", &f);
	return ah_attr_to_py(&attr);
}

const char pd_create_ah_from_wc__doc__[] = PyDoc_STR(
	"Create an address handle to the sender of a UD receive.\n"
	"\n"
	"What ``Context.init_ah_from_wc`` computes, then\n"
	"``ibv_create_ah``, in one verb: the answer to a UD request needs\n"
	"no address exchange. Send it to ``wc.src_qp`` with the Q_Key the\n"
	"two sides agreed on.\n"
	"\n"
	"Wraps ``ibv_create_ah_from_wc`` (man page ibv_create_ah_from_wc(3)).\n"
	"\n"
	"Args:\n"
	"    wc: the receive's WC (or WCEx), from ``CQ.poll()``.\n"
	"    grh: the receive buffer, or any bytes-like object that starts\n"
	"        with its 40 GRH bytes (see ``Context.init_ah_from_wc``).\n"
	"    port: the port the receive came in on, 1..255.\n"
	"\n"
	"Returns:\n"
	"    The new AH, a child of this PD.\n"
	"\n"
	"Raises:\n"
	"    TypeError: wc is not a WC, or grh not bytes-like.\n"
	"    ValueError: port out of range, or grh under 40 bytes.\n" DOC_RAISES_VERB_AS(
		"PD", ", as for ``Context.init_ah_from_wc``"));

static const ArgSpec create_ah_from_wc_params[] = { FROM_WC_WC, FROM_WC_GRH,
						    FROM_WC_PORT, ARG_END };
METHOD_ARGS(pd_create_ah_from_wc, "PD.create_ah_from_wc",
	    create_ah_from_wc_params);

PyObject *pd_create_ah_from_wc(PyObject *self, PyObject *args, PyObject *kw)
{
	struct from_wc f;
	struct ibv_ah *ah;
	int err;

	HANDLE_CHECK(self);
	if (from_wc_read(self, &pd_create_ah_from_wc_args, args, kw,
			 (void *)IBV.create_ah_from_wc, "ibv_create_ah_from_wc",
			 &f) < 0)
		return NULL;
	HANDLE_BUSY_ENTER(self);
	Py_BEGIN_ALLOW_THREADS
	errno = 0;
	ah = IBV.create_ah_from_wc((struct ibv_pd *)HANDLE(self)->obj, &f.wc,
				   &f.grh, f.a.port);
	err = errno;
	Py_END_ALLOW_THREADS
	HANDLE_BUSY_EXIT(self);
	if (ah == NULL)
		return from_wc_error(err, EINVAL, "ibv_create_ah_from_wc", &f);
	return ah_wrap((PDObject *)self, ah);
}

static PyObject *ah_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(
		((struct ibv_ah *)HANDLE(self)->obj)->handle);
}

static PyObject *ah_repr(PyObject *self)
{
	struct ibv_ah *ah = HANDLE(self)->obj;

	if (ah == NULL)
		return PyUnicode_FromString("<ibverbs.AH closed>");
	return PyUnicode_FromFormat("<ibverbs.AH handle=%u>", ah->handle);
}

static PyMethodDef ah_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef ah_getset[] = {
	{ "pd", handle_get_parent, NULL, "The PD the AH was created in.",
	  NULL },
	{ "handle", ah_get_handle, NULL,
	  "The AH's kernel handle (``ibv_ah.handle``); EBADF once closed.",
	  NULL },
	HANDLE_GETSETS_END
};

PyDoc_STRVAR(ah__doc__,
	     "An address handle (``struct ibv_ah``): a UD destination.\n"
	     "\n"
	     "Made by ``PD.create_ah(AHAttr(...))``; a ``SendWR(ah=...)``\n"
	     "or ``QPEx.wr_set_ud_addr()`` names it. ``close()`` wraps\n"
	     "``ibv_destroy_ah`` (man page ibv_create_ah(3)).");

HANDLE_TYPE_SPEC(AH_spec, "AH", AHObject, 0, ah__doc__, handle_tp_dealloc,
		 handle_tp_traverse, ah_repr, ah_methods, ah_getset);
