/*
 * device_ex.c - Context.query_device_ex() -> DeviceAttrEx.
 *
 * ibv_query_device_ex is static inline in verbs.h: it calls the
 * provider's query_device_ex op and falls back to ibv_query_device (an
 * exported verb, called here through the dlsym table) when the op is
 * missing or answers EOPNOTSUPP/ENOSYS.  This file does the same.
 *
 * The nested structs become small records of ibverbs._objects
 * (ODPCaps, TSOCaps, RSSCaps, PacketPacingCaps, TMCaps,
 * CQModerationCaps, PCIAtomicCaps), looked up by name.
 */
#include "ibverbs.h"
#include "device/device.h"
#include <string.h>

/* ibverbs._objects.<name>(**d); steals d. */
static PyObject *record(const char *name, PyObject *d)
{
	return objects_record(name, d);
}

/* d[key] = record(name, sub); steals sub.  0 / -1. */
static int set_record(PyObject *d, const char *key, const char *name,
		      PyObject *sub)
{
	return dict_set_steal(d, key, record(name, sub));
}

/* clang-format off */
#define U(d, s, f) if (dict_set_u64(d, #f, (uint64_t)(s).f) < 0) goto fail;
/* clang-format on */

static PyObject *orig_attr_dict(const struct ibv_device_attr *a)
{
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (dict_set_str(d, "fw_ver", a->fw_ver) < 0 ||
	    dict_set_u64(d, "node_guid", be64toh(a->node_guid)) < 0 ||
	    dict_set_u64(d, "sys_image_guid", be64toh(a->sys_image_guid)) < 0)
		goto fail;
	/* clang-format off */
	U(d, *a, max_mr_size) U(d, *a, page_size_cap) U(d, *a, vendor_id)
	U(d, *a, vendor_part_id) U(d, *a, hw_ver) U(d, *a, max_qp)
	U(d, *a, max_qp_wr) U(d, *a, device_cap_flags) U(d, *a, max_sge)
	U(d, *a, max_sge_rd) U(d, *a, max_cq) U(d, *a, max_cqe)
	U(d, *a, max_mr) U(d, *a, max_pd) U(d, *a, max_qp_rd_atom)
	U(d, *a, max_ee_rd_atom) U(d, *a, max_res_rd_atom)
	U(d, *a, max_qp_init_rd_atom) U(d, *a, max_ee_init_rd_atom)
	U(d, *a, atomic_cap) U(d, *a, max_ee) U(d, *a, max_rdd)
	U(d, *a, max_mw) U(d, *a, max_raw_ipv6_qp) U(d, *a, max_raw_ethy_qp)
	U(d, *a, max_mcast_grp) U(d, *a, max_mcast_qp_attach)
	U(d, *a, max_total_mcast_qp_attach) U(d, *a, max_ah) U(d, *a, max_fmr)
	U(d, *a, max_map_per_fmr) U(d, *a, max_srq) U(d, *a, max_srq_wr)
	U(d, *a, max_srq_sge) U(d, *a, max_pkeys)
	U(d, *a, local_ca_ack_delay) U(d, *a, phys_port_cnt)
		/* clang-format on */
		return d;
fail:
	Py_DECREF(d);
	return NULL;
}

/* The nested structs: one dict each, then a record. */
static int add_caps(PyObject *d, const struct ibv_device_attr_ex *a)
{
	PyObject *s;

	/* clang-format off */
#define SUB(key, cls, body) \
	if ((s = PyDict_New()) == NULL) return -1; \
	body \
	if (set_record(d, key, cls, s) < 0) return -1;
#define F(st, f) if (dict_set_u64(s, #f, (uint64_t)(st).f) < 0) goto fail;
	SUB("odp_caps", "ODPCaps",
	    F(a->odp_caps, general_caps)
	    F(a->odp_caps.per_transport_caps, rc_odp_caps)
	    F(a->odp_caps.per_transport_caps, uc_odp_caps)
	    F(a->odp_caps.per_transport_caps, ud_odp_caps))
	SUB("tso_caps", "TSOCaps",
	    F(a->tso_caps, max_tso) F(a->tso_caps, supported_qpts))
	SUB("rss_caps", "RSSCaps",
	    F(a->rss_caps, supported_qpts)
	    F(a->rss_caps, max_rwq_indirection_tables)
	    F(a->rss_caps, max_rwq_indirection_table_size)
	    F(a->rss_caps, rx_hash_fields_mask)
	    F(a->rss_caps, rx_hash_function))
	SUB("packet_pacing_caps", "PacketPacingCaps",
	    F(a->packet_pacing_caps, qp_rate_limit_min)
	    F(a->packet_pacing_caps, qp_rate_limit_max)
	    F(a->packet_pacing_caps, supported_qpts))
	SUB("tm_caps", "TMCaps",
	    F(a->tm_caps, max_rndv_hdr_size) F(a->tm_caps, max_num_tags)
	    F(a->tm_caps, flags) F(a->tm_caps, max_ops)
	    F(a->tm_caps, max_sge))
	SUB("cq_mod_caps", "CQModerationCaps",
	    F(a->cq_mod_caps, max_cq_count) F(a->cq_mod_caps, max_cq_period))
	SUB("pci_atomic_caps", "PCIAtomicCaps",
	    F(a->pci_atomic_caps, fetch_add) F(a->pci_atomic_caps, swap)
	    F(a->pci_atomic_caps, compare_swap))
#undef F
#undef SUB
	/* clang-format on */
	return 0;
fail:
	Py_DECREF(s);
	return -1;
}

METHOD_DOC(context_query_device_ex,
	   "Query the device's extended attributes and capabilities.\n"
	   "\n"
	   "Falls back to ``ibv_query_device`` when the provider has no\n"
	   "extended query or answers EOPNOTSUPP/ENOSYS, as verbs.h does;\n"
	   "``legacy`` is True then and the extended fields read 0.\n"
	   "\n"
	   "Wraps ``ibv_query_device_ex`` (man page\n"
	   "ibv_query_device_ex(3)).\n"
	   "\n"
	   "Returns:\n"
	   "    A DeviceAttrEx: ``orig_attr`` (a DeviceAttr), odp_caps,\n"
	   "    tso_caps, rss_caps, ..., max_dm_size, phys_port_cnt_ex.\n"
	   "\n"
	   "Raises:\n"
	   "    VerbsError: EBADF once the Context is closed; else the\n"
	   "        verb failed (``errno``).");

PyObject *context_query_device_ex(PyObject *self, PyObject *unused)
{
	ContextObject *ctx = (ContextObject *)self;
	struct ibv_context *c = HANDLE(ctx)->obj;
	struct ibv_device_attr_ex a;
	struct verbs_context *vctx;
	PyObject *d, *orig;
	int rc = EOPNOTSUPP, legacy = 0;

	HANDLE_CHECK(self);
	memset(&a, 0, sizeof(a));
	vctx = verbs_get_ctx_op(c, query_device_ex);
	if (vctx != NULL)
		rc = vctx->query_device_ex(c, NULL, &a, sizeof(a));
	if (rc == EOPNOTSUPP || rc == ENOSYS) {
		memset(&a, 0, sizeof(a));
		rc = IBV.query_device(c, &a.orig_attr);
		legacy = 1;
	}
	if (rc != 0)
		return verbs_error(rc, legacy ? "ibv_query_device" :
						"ibv_query_device_ex");
	d = PyDict_New();
	if (d == NULL)
		return NULL;
	orig = orig_attr_dict(&a.orig_attr);
	if (orig == NULL || set_record(d, "orig_attr", "DeviceAttr", orig) < 0)
		goto fail;
	if (add_caps(d, &a) < 0)
		goto fail;
	/* clang-format off */
	U(d, a, comp_mask) U(d, a, completion_timestamp_mask)
	U(d, a, hca_core_clock) U(d, a, device_cap_flags_ex)
	U(d, a, max_wq_type_rq) U(d, a, raw_packet_caps) U(d, a, max_dm_size)
	U(d, a, xrc_odp_caps)
#ifdef IBVERBS_HAVE_PHYS_PORT_CNT_EX
	U(d, a, phys_port_cnt_ex)
#else
	/* Headers older than rdma-core 36 have no 32-bit count: the 8-bit
	 * one is what libibverbs reports there. */
	if (dict_set_u64(d, "phys_port_cnt_ex", a.orig_attr.phys_port_cnt) < 0)
		goto fail;
#endif
		/* clang-format on */
		if (PyDict_SetItemString(d, "legacy",
					 legacy ? Py_True : Py_False) <
		    0) goto fail;
	return record("DeviceAttrEx", d);
fail:
	Py_DECREF(d);
	return NULL;
}
#undef U
