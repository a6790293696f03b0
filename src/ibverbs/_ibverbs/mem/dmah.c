/*
 * dmah.c - DMAH: a DMA handle (ibv_alloc_dmah, rdma-core 59), a child of
 * Context: the CPU and PCIe TLP processing hints that MRs registered with
 * it (PD.reg_mr_ex(dmah=...), mr.c) steer their DMA by.  Those MRs use
 * it: close() refuses with EBUSY while one is registered.
 *
 * No provider of this machine has the op (libibverbs answers
 * EOPNOTSUPP); the success path is checked against the recording double.
 */
#include "ibverbs.h"
#include "mem/mem.h"
#include <stdio.h>
#include <string.h>

#define DMAHO(self) ((DMAHObject *)(self))

HANDLE_KIND(dmah_kind, "DMAH", "ibv_dealloc_dmah", IBV.dealloc_dmah, NULL);

/* Context.alloc_dmah(*, cpu_id=None, ph=None, tph_mem_type=None) */
METHOD_DOC(context_alloc_dmah,
	   "Allocate a DMA handle: steering hints for MRs' DMA.\n"
	   "\n"
	   "Each keyword given sets its bit of ``comp_mask``\n"
	   "(``DMAHInitAttrMask``). Give the DMAH to\n"
	   "``PD.reg_mr_ex(dmah=...)``. Never run on hardware here;\n"
	   "checked against the recording double (Soft-RoCE: EOPNOTSUPP).\n"
	   "\n"
	   "Wraps ``ibv_alloc_dmah`` (man page ibv_alloc_dmah(3), rdma-core\n"
	   "59).\n"
	   "\n"
	   "Args:\n"
	   "    cpu_id: the CPU whose cache the DMA should target, or None.\n"
	   "    ph: the PCIe TLP processing hint (0..3), or None.\n"
	   "    tph_mem_type: ``TPHMemType`` (VM, PM), or None.\n"
	   "\n"
	   "Returns:\n"
	   "    The new DMAH (a child of this Context).\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: a value is not an int.\n"
	   "    ValueError: a value is out of range.\n"
	   "    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	   "        when libibverbs lacks the verb (rdma-core < 59) or the\n"
	   "        provider cannot; else the verb failed (``errno``).");

/* Each keyword given (not None) sets its bit of comp_mask. */
#define DMAH_OPT(bit) \
	.flags = ARG_KWOPT | ARG_NONE, .mask = IBV_DMAH_INIT_ATTR_MASK_##bit
#define ALLOC_DMAH_ARGS(X, S)                                       \
	X(S, UINT, uint32_t, cpu_id, DMAH_OPT(CPU_ID))              \
	X(S, UINT, uint8_t, ph, DMAH_OPT(PH))                       \
	X(S, ENUM, uint8_t, tph_mem_type, TPHMemType, 0, UINT8_MAX, \
	  DMAH_OPT(TPH_MEM_TYPE))
ARGS_METHOD_MASK(extern, context_alloc_dmah, "Context.alloc_dmah",
		 ALLOC_DMAH_ARGS, parent, a)
{
	ContextObject *ctx = (ContextObject *)parent;
	struct ibv_dmah_init_attr attr;
	struct ibv_dmah *d;
	DMAHObject *self;
	uint32_t mask;
	int err;

	mask = (uint32_t)a->mask;
	IBV_REQUIRE_OPTIONAL(alloc_dmah, ibv_alloc_dmah, "rdma-core 59");
	memset(&attr, 0, sizeof(attr));
	attr.comp_mask = mask;
	attr.cpu_id = a->cpu_id;
	attr.ph = a->ph;
	attr.tph_mem_type = a->tph_mem_type;
	errno = 0;
	d = IBV.alloc_dmah((struct ibv_context *)HANDLE(ctx)->obj, &attr);
	err = errno_or(EINVAL);
	if (d == NULL)
		return verbs_error_fmt(err, "ibv_alloc_dmah",
				       "comp_mask=0x%x cpu_id=%u ph=%u "
				       "tph_mem_type=%u",
				       (unsigned int)mask,
				       (unsigned int)a->cpu_id,
				       (unsigned int)a->ph,
				       (unsigned int)a->tph_mem_type);
	self = (DMAHObject *)handle_adopt(ST.DMAH_type, &dmah_kind, HANDLE(ctx),
					  d);
	if (self == NULL)
		return NULL;
	self->comp_mask = mask;
	self->cpu_id = attr.cpu_id;
	self->ph = attr.ph;
	self->tph_mem_type = attr.tph_mem_type;
	return (PyObject *)self;
}

/* The fields asked for at allocation; None for one not given. */
static PyObject *dmah_get_field(PyObject *self, void *closure)
{
	DMAHObject *d = DMAHO(self);
	uint32_t bit = (uint32_t)(uintptr_t)closure;

	if (!(d->comp_mask & bit))
		Py_RETURN_NONE;
	if (bit == IBV_DMAH_INIT_ATTR_MASK_CPU_ID)
		return PyLong_FromUnsignedLong(d->cpu_id);
	if (bit == IBV_DMAH_INIT_ATTR_MASK_PH)
		return PyLong_FromLong(d->ph);
	return enum_from_int("TPHMemType", d->tph_mem_type);
}

static PyObject *dmah_get_comp_mask(PyObject *self, void *closure)
{
	return enum_from_int("DMAHInitAttrMask", (long)DMAHO(self)->comp_mask);
}

static PyObject *dmah_repr(PyObject *self)
{
	if (HANDLE(self)->obj == NULL)
		return PyUnicode_FromString("<ibverbs.DMAH closed>");
	return PyUnicode_FromFormat("<ibverbs.DMAH comp_mask=0x%x>",
				    (unsigned int)DMAHO(self)->comp_mask);
}

PyDoc_STRVAR(
	dmah__doc__,
	"A DMA handle (``struct ibv_dmah``): DMA steering hints.\n"
	"\n"
	"Made by ``Context.alloc_dmah()``; given to\n"
	"``PD.reg_mr_ex(dmah=...)``. ``close()`` wraps\n"
	"``ibv_dealloc_dmah`` (man page ibv_alloc_dmah(3)) and refuses with\n"
	"EBUSY while an MR registered with it is open. Never run on\n"
	"hardware here; checked against the recording double.");

static PyMethodDef dmah_methods[] = { HANDLE_METHODS_END };

static PyGetSetDef dmah_getset[] = {
	{ "comp_mask", dmah_get_comp_mask, NULL,
	  "The ``DMAHInitAttrMask`` of the fields given at allocation.", NULL },
	{ "cpu_id", dmah_get_field, NULL,
	  "The CPU whose cache the DMA targets, or None.",
	  (void *)(uintptr_t)IBV_DMAH_INIT_ATTR_MASK_CPU_ID },
	{ "ph", dmah_get_field, NULL, "The TLP processing hint, or None.",
	  (void *)(uintptr_t)IBV_DMAH_INIT_ATTR_MASK_PH },
	{ "tph_mem_type", dmah_get_field, NULL,
	  "The ``TPHMemType`` (VM, PM), or None.",
	  (void *)(uintptr_t)IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE },
	{ "context", handle_get_parent, NULL,
	  "The Context it was allocated on.", NULL },
	HANDLE_GETSETS_END
};

HANDLE_TYPE_SPEC(DMAH_spec, "DMAH", DMAHObject, 0, dmah__doc__,
		 handle_tp_dealloc, handle_tp_traverse, dmah_repr, dmah_methods,
		 dmah_getset);
