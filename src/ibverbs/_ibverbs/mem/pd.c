/*
 * pd.c - PD: a protection domain, and the factories of its children
 * (MR, QP, SRQ, AH), which live in their own files.
 */
#include "ibverbs.h"
#include "mem/mem.h"

static int pd_destroy(Handle *h)
{
	return IBV.dealloc_pd((struct ibv_pd *)h->obj);
}

const HandleKind pd_kind = { "PD", "ibv_dealloc_pd", pd_destroy, NULL };

#define PDP(self) ((struct ibv_pd *)HANDLE(self)->obj)

PyDoc_STRVAR(pd_reg_mr__doc__,
	     "Register ``length`` bytes of memory at ``addr`` for RDMA.\n"
	     "\n"
	     "The memory is given as an integer address (host or GPU\n"
	     "virtual address); ``owner`` is any object that keeps it alive\n"
	     "(an array, a tensor, an mmap), held until the MR is closed.\n"
	     "Pinning runs with the GIL released; the PD's ``close()``\n"
	     "refuses with EBUSY meanwhile. Access bits of the optional\n"
	     "range (``AccessFlags.RELAXED_ORDERING``, ...) register through\n"
	     "``ibv_reg_mr_iova2``, as verbs.h does.\n"
	     "\n"
	     "Wraps ``ibv_reg_mr`` (man page ibv_reg_mr(3)).\n"
	     "\n"
	     "Args:\n"
	     "    addr: start address of the region (an int).\n"
	     "    length: bytes, 1 or more.\n"
	     "    access: ``AccessFlags`` (LOCAL_WRITE, REMOTE_READ, ...).\n"
	     "    owner: the object whose memory this is, or None.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR (a child of this PD).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: addr, length or access is not an int (use\n"
	     "        ``ibverbs.reg_tensor()`` for arrays and tensors).\n"
	     "    ValueError: length is 0, addr + length overflows, or a\n"
	     "        value is out of range.\n"
	     "    VerbsError: EBADF once the PD is closed; EOPNOTSUPP for\n"
	     "        optional-range bits without ``ibv_reg_mr_iova2``\n"
	     "        (rdma-core < 29); else the verb failed (``errno``, e.g.\n"
	     "        EFAULT for unmapped memory, ENOMEM past the pin limit).");

/* The factory methods: each checks the PD open and calls the new
 * type's constructor (in that type's file). */
static PyObject *pd_reg_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_create((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_reg_mr_iova__doc__,
	     "Register ``length`` bytes at ``addr``, addressed as ``iova``.\n"
	     "\n"
	     "As ``reg_mr()``, but work requests, local (SGEs) and remote\n"
	     "(``remote_addr``), name the first byte ``iova``, not ``addr``:\n"
	     "``MR.addr`` and ``MR.iova`` hold it, so ``mr.sge()`` and a\n"
	     "peer's ``remote_addr = mr.iova + offset`` work unchanged.\n"
	     "Linux wants ``iova`` at the same offset within a page as\n"
	     "``addr`` (EINVAL otherwise).\n"
	     "\n"
	     "Wraps ``ibv_reg_mr_iova`` (man page ibv_reg_mr(3)).\n"
	     "\n"
	     "Args:\n"
	     "    addr: start address of the region (an int).\n"
	     "    length: bytes, 1 or more.\n"
	     "    iova: the address work requests use for its first byte.\n"
	     "    access: ``AccessFlags``.\n"
	     "    owner: the object whose memory this is, or None.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR (a child of this PD).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int.\n"
	     "    ValueError: length is 0, addr + length or iova + length\n"
	     "        overflows, or a value is out of range.\n"
	     "    VerbsError: EBADF once the PD is closed; EOPNOTSUPP when\n"
	     "        libibverbs lacks the verb (rdma-core < 25); else the\n"
	     "        verb failed (``errno``: EINVAL for an iova at another\n"
	     "        page offset than addr).");

static PyObject *pd_reg_mr_iova(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_create_iova((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_reg_dmabuf_mr__doc__,
	     "Register ``length`` bytes of a dma-buf (GPU memory) for RDMA.\n"
	     "\n"
	     "The region starts ``offset`` bytes into the dma-buf ``fd`` and\n"
	     "is addressed as ``iova`` in work requests (``MR.addr``).\n"
	     "``owner`` (e.g. the tensor) is held until the MR is closed.\n"
	     "The verb runs with the GIL released.\n"
	     "\n"
	     "Wraps ``ibv_reg_dmabuf_mr`` (man page ibv_reg_mr(3)).\n"
	     "\n"
	     "Args:\n"
	     "    offset: start of the region within the dma-buf.\n"
	     "    length: bytes, 1 or more.\n"
	     "    iova: the address work requests use for its first byte.\n"
	     "    fd: the dma-buf file descriptor.\n"
	     "    access: ``AccessFlags``.\n"
	     "    owner: the object that owns the memory, or None.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR (``is_dmabuf`` is True).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int.\n"
	     "    ValueError: length is 0 or a value is out of range.\n"
	     "    VerbsError: EBADF for a negative fd or once the PD is\n"
	     "        closed; EOPNOTSUPP when libibverbs lacks the verb\n"
	     "        (rdma-core < 34); else the verb failed (``errno``).");

static PyObject *pd_reg_dmabuf_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_create_dmabuf((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_create_qp__doc__,
	     "Create a queue pair in this PD.\n"
	     "\n"
	     "``init_attr`` is a ``QPInitAttr`` (or any object with its\n"
	     "fields): send_cq (required), recv_cq (default: send_cq),\n"
	     "qp_type (default RC), srq, the capacities (max_send_wr=128,\n"
	     "max_recv_wr=128, max_send_sge=1, max_recv_sge=1,\n"
	     "max_inline_data=0) and sq_sig_all. The QP uses its CQs and\n"
	     "SRQ: they refuse ``close()`` (EBUSY) until the QP is closed.\n"
	     "``QP.cap`` holds the capacities the provider granted.\n"
	     "\n"
	     "Wraps ``ibv_create_qp`` (man page ibv_create_qp(3)).\n"
	     "\n"
	     "Args:\n"
	     "    init_attr: a QPInitAttr, or any object with its fields.\n"
	     "\n"
	     "Returns:\n"
	     "    The new QP, in the RESET state.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: a CQ or SRQ field has the wrong type, or\n"
	     "        send_cq is None.\n"
	     "    ValueError: a CQ of another Context, an SRQ of another PD,\n"
	     "        or a capacity out of range.\n"
	     "    VerbsError: EBADF if the PD, a CQ or the SRQ is closed;\n"
	     "        else the verb failed (``errno``, e.g. EINVAL for\n"
	     "        capacities beyond the device's limits).");

static PyObject *pd_create_qp(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return qp_create((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_create_srq__doc__,
	     "Create a shared receive queue in this PD.\n"
	     "\n"
	     "Wraps ``ibv_create_srq`` (man page ibv_create_srq(3)).\n"
	     "\n"
	     "Args:\n"
	     "    max_wr: receive work requests it holds.\n"
	     "    max_sge: scatter entries per work request.\n"
	     "    srq_limit: the SRQ_LIMIT_REACHED threshold (0: none).\n"
	     "\n"
	     "Returns:\n"
	     "    The new SRQ.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: an argument is not an int.\n"
	     "    ValueError: a value is outside ``0..2**32-1``.\n"
	     "    VerbsError: EBADF once the PD is closed; else the verb\n"
	     "        failed (``errno``, e.g. EINVAL past the device limits).");

static PyObject *pd_create_srq(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return srq_create((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_create_ah__doc__,
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
	     "    ValueError: a field is out of range or dgid is no GID.\n"
	     "    VerbsError: EBADF once the PD is closed; else the verb\n"
	     "        failed (``errno``, e.g. EINVAL for a bad sgid_index).");

static PyObject *pd_create_ah(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return ah_create((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_reg_dm_mr__doc__,
	     "Register part of a device memory allocation as an MR.\n"
	     "\n"
	     "The MR is zero-based: SGEs address it by the offset from its\n"
	     "start, and ``access`` must include ``AccessFlags.ZERO_BASED``.\n"
	     "It holds the DM (``MR.owner``) and uses it, so ``dm.close()``\n"
	     "refuses with EBUSY until the MR is closed.\n"
	     "\n"
	     "Wraps ``ibv_reg_dm_mr`` (man page ibv_alloc_dm(3)).\n"
	     "\n"
	     "Args:\n"
	     "    dm: a DM of this PD's Context.\n"
	     "    offset: start within the DM.\n"
	     "    length: bytes, 1 or more, within the DM.\n"
	     "    access: ``AccessFlags``.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: dm is not a DM, or a value is not an int.\n"
	     "    ValueError: dm is of another Context, length is 0, or the\n"
	     "        range passes the DM's end.\n"
	     "    VerbsError: EBADF if the PD or the DM is closed;\n"
	     "        EOPNOTSUPP when the provider has no device memory;\n"
	     "        else the verb failed (``errno``).");

static PyObject *pd_reg_dm_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return dm_reg_mr((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_reg_implicit_odp_mr__doc__,
	     "Register the whole address space as an implicit ODP MR.\n"
	     "\n"
	     "Calls ``ibv_reg_mr(pd, NULL, SIZE_MAX, access | ON_DEMAND)``:\n"
	     "pages are mapped on demand as work requests touch them.\n"
	     "The MR's ``addr`` is 0 and its ``length`` SIZE_MAX.\n"
	     "\n"
	     "Wraps ``ibv_reg_mr`` (man page ibv_reg_mr(3)).\n"
	     "\n"
	     "Args:\n"
	     "    access: ``AccessFlags``; ON_DEMAND is added.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: access is not an int.\n"
	     "    ValueError: access is out of range.\n"
	     "    VerbsError: EBADF once the PD is closed; else the verb\n"
	     "        failed (``errno``, e.g. EINVAL or EOPNOTSUPP where the\n"
	     "        device has no implicit ODP).");

static PyObject *pd_reg_implicit_odp_mr(PyObject *self, PyObject *args,
					PyObject *kw)
{
	HANDLE_CHECK(self);
	return odp_reg_implicit((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_advise_mr__doc__,
	     "Give the provider advice about ODP memory (prefetch it).\n"
	     "\n"
	     "Wraps ``ibv_advise_mr`` (man page ibv_advise_mr(3)).\n"
	     "\n"
	     "Args:\n"
	     "    advice: ``AdviseMRAdvice`` (PREFETCH, PREFETCH_WRITE,\n"
	     "        PREFETCH_NO_FAULT).\n"
	     "    flags: ``AdviseMRFlags`` (FLUSH waits for the prefetch).\n"
	     "    sg_list: a list or tuple of SGEs over MRs of this PD.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: sg_list is not a list or tuple of SGEs.\n"
	     "    ValueError: sg_list is empty or an SGE's MR belongs to\n"
	     "        another PD.\n"
	     "    VerbsError: EBADF if the PD or an SGE's MR is closed;\n"
	     "        EOPNOTSUPP when the provider has no such op; else the\n"
	     "        verb failed (``errno``).");

static PyObject *pd_advise_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return odp_advise_mr((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_alloc_mw__doc__,
	     "Allocate a memory window in this PD.\n"
	     "\n"
	     "A type 1 window is bound with ``QP.bind_mw()``, a type 2 one\n"
	     "with a ``SendWR(opcode=BIND_MW, ...)`` or "
	     "``QPEx.wr_bind_mw()``.\n"
	     "\n"
	     "Wraps ``ibv_alloc_mw`` (man page ibv_alloc_mw(3)).\n"
	     "\n"
	     "Args:\n"
	     "    type: ``MWType.TYPE_1`` or ``MWType.TYPE_2``.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MW.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: type is not an int.\n"
	     "    ValueError: type is neither 1 nor 2.\n"
	     "    VerbsError: EBADF once the PD is closed; else the verb\n"
	     "        failed (``errno``, e.g. EOPNOTSUPP without windows).");

static PyObject *pd_alloc_mw(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mw_create((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_create_qp_ex__doc__,
	     "Create an extended QP that posts with the ``ibv_wr_*`` calls.\n"
	     "\n"
	     "``init_attr`` is a ``QPInitAttrEx``: QPInitAttr's fields plus\n"
	     "``send_ops_flags`` (``QPCreateSendOpsFlags``: the builders the\n"
	     "QP may use; SEND when None), ``create_flags`` and ``pd``\n"
	     "(None or this PD).\n"
	     "\n"
	     "Wraps ``ibv_create_qp_ex`` and ``ibv_qp_to_qp_ex`` (man page\n"
	     "ibv_create_qp_ex(3)).\n"
	     "\n"
	     "Args:\n"
	     "    init_attr: a QPInitAttrEx, or any object with its fields.\n"
	     "\n"
	     "Returns:\n"
	     "    The new QPEx, in the RESET state.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: a field has the wrong type.\n"
	     "    ValueError: init_attr.pd is another PD, a CQ or SRQ is of\n"
	     "        another Context or PD, or a value is out of range.\n"
	     "    VerbsError: EBADF if the PD, a CQ or the SRQ is closed;\n"
	     "        EOPNOTSUPP when libibverbs lacks ``ibv_qp_to_qp_ex`` or\n"
	     "        the provider makes no extended QP; else the verb failed\n"
	     "        (``errno``).");

static PyObject *pd_create_qp_ex(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return qpex_create((PDObject *)self, args, kw);
}

/* ---- memory and import verbs (issue 32) ---- */

PyDoc_STRVAR(pd_reg_mr_ex__doc__,
	     "Register memory described by ``struct ibv_mr_init_attr``.\n"
	     "\n"
	     "Each keyword given sets its bit of ``comp_mask``\n"
	     "(``MRInitAttrMask``): ``addr`` (ADDR) and ``iova`` (IOVA)\n"
	     "for host memory at a chosen iova, ``fd`` and ``fd_offset``\n"
	     "(FD, FD_OFFSET; with IOVA) for a dma-buf, ``dmah`` (DMAH) for\n"
	     "DMA hints, ``buf`` (BUF; with ADDR inside it) for a Buf.\n"
	     "``MR.addr`` is the address work requests use: ``iova`` when\n"
	     "given, else ``addr``, else ``fd_offset``. The MR uses its Buf\n"
	     "and DMAH (their ``close()`` refuses with EBUSY until it is\n"
	     "closed). Pinning runs with the GIL released. Soft-RoCE\n"
	     "registers ADDR/IOVA through libibverbs' translation to\n"
	     "``reg_mr``; DMAH is checked against the recording double only.\n"
	     "\n"
	     "Wraps ``ibv_reg_mr_ex`` (man page ibv_reg_mr(3), rdma-core 59).\n"
	     "\n"
	     "Args:\n"
	     "    length: bytes, 1 or more.\n"
	     "    access: ``AccessFlags``.\n"
	     "    addr: start address of host memory (an int), or None.\n"
	     "    iova: the address work requests use, or None.\n"
	     "    fd: a dma-buf file descriptor, or None.\n"
	     "    fd_offset: the start within the dma-buf, or None.\n"
	     "    dmah: a DMAH of this PD's Context, or None.\n"
	     "    buf: a Buf of this PD, or None.\n"
	     "    owner: the object whose memory this is, or None.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: a value is not an int, dmah is not a DMAH or buf\n"
	     "        not a Buf.\n"
	     "    ValueError: length is 0, addr + length overflows, a value\n"
	     "        is out of range, or dmah/buf belongs elsewhere.\n"
	     "    VerbsError: EBADF once the PD, dmah or buf is closed;\n"
	     "        EOPNOTSUPP when libibverbs lacks the verb (rdma-core\n"
	     "        < 59) or the provider cannot (a DMAH on Soft-RoCE);\n"
	     "        else the verb failed (``errno``, EINVAL for a mask\n"
	     "        combination libibverbs refuses).");

static PyObject *pd_reg_mr_ex(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_create_ex((PDObject *)self, args, kw);
}

PyDoc_STRVAR(
	pd_alloc_buf__doc__,
	"Allocate a buffer the way the provider prefers for this PD.\n"
	"\n"
	"libibverbs' own allocator (the one Soft-RoCE gets) returns\n"
	"page-aligned host memory; a provider may back it with a\n"
	"dma-buf. Register it with ``reg_buf_mr()``.\n"
	"\n"
	"Wraps ``ibv_alloc_buf`` (man page ibv_alloc_buf(3), rdma-core 64).\n"
	"\n"
	"Args:\n"
	"    size: bytes, 1 or more.\n"
	"\n"
	"Returns:\n"
	"    The new Buf (a child of this PD).\n"
	"\n"
	"Raises:\n"
	"    TypeError: size is not an int.\n"
	"    ValueError: size is 0 or out of range.\n"
	"    VerbsError: EBADF once the PD is closed; EOPNOTSUPP when\n"
	"        libibverbs lacks the verb (rdma-core < 64); else the\n"
	"        verb failed (``errno``, e.g. ENOMEM).");

static PyObject *pd_alloc_buf(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return buf_create((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_reg_buf_mr__doc__,
	     "Register ``length`` bytes at ``addr`` within a Buf.\n"
	     "\n"
	     "``addr`` is ``buf.addr`` or an address inside the buffer; the\n"
	     "range must stay inside it (libibverbs answers EINVAL). The MR\n"
	     "uses the Buf: ``buf.close()`` refuses with EBUSY until the MR\n"
	     "is closed. Runs with the GIL released.\n"
	     "\n"
	     "Wraps ``ibv_reg_buf_mr`` (man page ibv_alloc_buf(3), rdma-core\n"
	     "64).\n"
	     "\n"
	     "Args:\n"
	     "    buf: a Buf of this PD.\n"
	     "    addr: the start address, inside the buffer.\n"
	     "    length: bytes, 1 or more.\n"
	     "    access: ``AccessFlags``.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR (``MR.buf`` is the Buf).\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: buf is not a Buf, or a value is not an int.\n"
	     "    ValueError: buf was allocated for another PD, length is\n"
	     "        0, or a value is out of range.\n"
	     "    VerbsError: EBADF once the PD or buf is closed; else the\n"
	     "        verb failed (``errno``: EINVAL outside the buffer).");

static PyObject *pd_reg_buf_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_create_buf((PDObject *)self, args, kw);
}

PyDoc_STRVAR(pd_alloc_null_mr__doc__,
	     "Allocate a null MR: reads through it give zeros, writes are\n"
	     "dropped.\n"
	     "\n"
	     "Wraps ``ibv_alloc_null_mr`` (man page ibv_alloc_null_mr(3)).\n"
	     "Soft-RoCE has no such op (EOPNOTSUPP); never run on hardware\n"
	     "here, checked against the recording double.\n"
	     "\n"
	     "Returns:\n"
	     "    The new MR (its lkey goes into SGEs).\n"
	     "\n"
	     "Raises:\n"
	     "    VerbsError: EBADF once the PD is closed; else the verb\n"
	     "        failed (``errno``: EOPNOTSUPP without the op).");

static PyObject *pd_alloc_null_mr(PyObject *self, PyObject *unused)
{
	HANDLE_CHECK(self);
	return mr_alloc_null((PDObject *)self);
}

PyDoc_STRVAR(pd_import_mr__doc__,
	     "Import an MR of another process into this PD.\n"
	     "\n"
	     "``mr_handle`` is the exporter's ``MR.handle``; this PD is the\n"
	     "import of its PD (``Context.import_pd()``). The MR's addr,\n"
	     "length and keys are the exporter's; ``MR.imported`` is True\n"
	     "and its ``close()`` wraps ``ibv_unimport_mr`` (the exporter\n"
	     "still owns the registration and must keep it until every\n"
	     "importer has closed). Never run on hardware here; checked\n"
	     "against the recording double (Soft-RoCE: EOPNOTSUPP).\n"
	     "\n"
	     "Wraps ``ibv_import_mr`` (man page ibv_import_mr(3)).\n"
	     "\n"
	     "Args:\n"
	     "    mr_handle: the MR's kernel handle (an int).\n"
	     "\n"
	     "Returns:\n"
	     "    The imported MR.\n"
	     "\n"
	     "Raises:\n"
	     "    TypeError: mr_handle is not an int.\n"
	     "    ValueError: mr_handle is outside 0..2**32-1.\n"
	     "    VerbsError: EBADF once the PD is closed; EOPNOTSUPP when\n"
	     "        libibverbs lacks the verb (rdma-core < 31) or the\n"
	     "        provider cannot; else the verb failed (``errno``).");

static PyObject *pd_import_mr(PyObject *self, PyObject *args, PyObject *kw)
{
	HANDLE_CHECK(self);
	return mr_import((PDObject *)self, args, kw);
}

static PyObject *pd_get_imported(PyObject *self, void *closure)
{
	return PyBool_FromLong(handle_is_imported(HANDLE(self)));
}

static PyObject *pd_get_handle(PyObject *self, void *closure)
{
	HANDLE_CHECK(self);
	return PyLong_FromUnsignedLong(PDP(self)->handle);
}

static PyObject *pd_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.PD closed>");
	return PyUnicode_FromFormat("<ibverbs.PD handle=%u>",
				    PDP(self)->handle);
}

PyDoc_STRVAR(pd__doc__,
	     "A protection domain (``struct ibv_pd``).\n"
	     "\n"
	     "Made by ``Context.alloc_pd()``; the parent of the MRs, QPs,\n"
	     "SRQs, AHs and MWs made by its factory methods. ``close()``\n"
	     "wraps ``ibv_dealloc_pd`` (man page ibv_alloc_pd(3)).");

static PyMethodDef pd_methods[] = {
	{ "reg_mr", KW pd_reg_mr, METH_VARARGS | METH_KEYWORDS,
	  pd_reg_mr__doc__ },
	{ "reg_mr_iova", KW pd_reg_mr_iova, METH_VARARGS | METH_KEYWORDS,
	  pd_reg_mr_iova__doc__ },
	{ "reg_dmabuf_mr", KW pd_reg_dmabuf_mr, METH_VARARGS | METH_KEYWORDS,
	  pd_reg_dmabuf_mr__doc__ },
	{ "create_qp", KW pd_create_qp, METH_VARARGS | METH_KEYWORDS,
	  pd_create_qp__doc__ },
	{ "create_srq", KW pd_create_srq, METH_VARARGS | METH_KEYWORDS,
	  pd_create_srq__doc__ },
	{ "create_ah", KW pd_create_ah, METH_VARARGS | METH_KEYWORDS,
	  pd_create_ah__doc__ },
	{ "create_ah_from_wc", KW pd_create_ah_from_wc,
	  METH_VARARGS | METH_KEYWORDS, pd_create_ah_from_wc__doc__ },
	{ "reg_dm_mr", KW pd_reg_dm_mr, METH_VARARGS | METH_KEYWORDS,
	  pd_reg_dm_mr__doc__ },
	{ "reg_implicit_odp_mr", KW pd_reg_implicit_odp_mr,
	  METH_VARARGS | METH_KEYWORDS, pd_reg_implicit_odp_mr__doc__ },
	{ "advise_mr", KW pd_advise_mr, METH_VARARGS | METH_KEYWORDS,
	  pd_advise_mr__doc__ },
	{ "alloc_mw", KW pd_alloc_mw, METH_VARARGS | METH_KEYWORDS,
	  pd_alloc_mw__doc__ },
	{ "create_qp_ex", KW pd_create_qp_ex, METH_VARARGS | METH_KEYWORDS,
	  pd_create_qp_ex__doc__ },
	{ "reg_mr_ex", KW pd_reg_mr_ex, METH_VARARGS | METH_KEYWORDS,
	  pd_reg_mr_ex__doc__ },
	{ "alloc_buf", KW pd_alloc_buf, METH_VARARGS | METH_KEYWORDS,
	  pd_alloc_buf__doc__ },
	{ "reg_buf_mr", KW pd_reg_buf_mr, METH_VARARGS | METH_KEYWORDS,
	  pd_reg_buf_mr__doc__ },
	{ "alloc_null_mr", pd_alloc_null_mr, METH_NOARGS,
	  pd_alloc_null_mr__doc__ },
	{ "import_mr", KW pd_import_mr, METH_VARARGS | METH_KEYWORDS,
	  pd_import_mr__doc__ },
	HANDLE_METHODS_END
};

static PyGetSetDef pd_getset[] = {
	{ "handle", pd_get_handle, NULL,
	  "The PD's kernel handle (``ibv_pd.handle``).", NULL },
	{ "context", handle_get_parent, NULL, "The Context this PD belongs to.",
	  NULL },
	{ "imported", pd_get_imported, NULL,
	  "True for a PD of ``Context.import_pd()``: ``close()`` then\n"
	  "wraps ``ibv_unimport_pd`` (the exporting process owns it).",
	  NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(PD_spec, "PD", PDObject, Py_TPFLAGS_BASETYPE, pd__doc__,
		 handle_tp_dealloc, handle_tp_traverse, pd_repr, pd_methods,
		 pd_getset);
