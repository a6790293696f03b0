/*
 * device_ex.c - Context.query_device_ex() -> DeviceAttrEx, and the
 * tables the device queries build their records from: attr_fields_set()
 * reads a struct by an AttrField table (device.h); the fields of struct
 * ibv_device_attr are listed once, for Context.query_device (context.c)
 * and DeviceAttrEx.orig_attr.
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

/* ------------------------------------------------------------------ */
/* Attribute structs by table                                          */
/* ------------------------------------------------------------------ */

int attr_fields_set(PyObject *d, const void *base, const AttrField *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++, f++) {
		const char *p = (const char *)base + f->off;
		uint64_t v;
		int64_t s;

		if (f->kind == ATTR_TEXT) {
			if (dict_set_str(d, f->name, p) < 0)
				return -1;
			continue;
		}
		switch (f->size) {
		case 1:
			s = *(const int8_t *)p;
			v = *(const uint8_t *)p;
			break;
		case 2:
			s = *(const int16_t *)p;
			v = *(const uint16_t *)p;
			break;
		case 4:
			s = *(const int32_t *)p;
			v = *(const uint32_t *)p;
			break;
		default:
			s = *(const int64_t *)p;
			v = *(const uint64_t *)p;
			break;
		}
		if (f->kind == ATTR_SIGNED)
			v = (uint64_t)s;
		else if (f->kind == ATTR_BE64)
			v = be64toh(v);
		if (dict_set_u64(d, f->name, v) < 0)
			return -1;
	}
	return 0;
}

/* The fields of struct ibv_device_attr, as DeviceAttr holds them: the
 * one list query_device and query_device_ex build from. */
#define DA(f) ATTR_INT(struct ibv_device_attr, f)
static const AttrField device_attr_fields[] = {
	ATTR_STR(struct ibv_device_attr, fw_ver),
	ATTR_GUID(struct ibv_device_attr, node_guid),
	ATTR_GUID(struct ibv_device_attr, sys_image_guid),
	DA(max_mr_size),
	DA(page_size_cap),
	DA(vendor_id),
	DA(vendor_part_id),
	DA(hw_ver),
	DA(max_qp),
	DA(max_qp_wr),
	DA(device_cap_flags),
	DA(max_sge),
	DA(max_sge_rd),
	DA(max_cq),
	DA(max_cqe),
	DA(max_mr),
	DA(max_pd),
	DA(max_qp_rd_atom),
	DA(max_ee_rd_atom),
	DA(max_res_rd_atom),
	DA(max_qp_init_rd_atom),
	DA(max_ee_init_rd_atom),
	DA(atomic_cap),
	DA(max_ee),
	DA(max_rdd),
	DA(max_mw),
	DA(max_raw_ipv6_qp),
	DA(max_raw_ethy_qp),
	DA(max_mcast_grp),
	DA(max_mcast_qp_attach),
	DA(max_total_mcast_qp_attach),
	DA(max_ah),
	DA(max_fmr),
	DA(max_map_per_fmr),
	DA(max_srq),
	DA(max_srq_wr),
	DA(max_srq_sge),
	DA(max_pkeys),
	DA(local_ca_ack_delay),
	DA(phys_port_cnt),
};
#undef DA

PyObject *device_attr_to_py(const struct ibv_device_attr *a)
{
	PyObject *d = PyDict_New();

	if (d == NULL)
		return NULL;
	if (attr_fields_set(d, a, device_attr_fields,
			    ATTR_COUNT(device_attr_fields)) < 0) {
		Py_DECREF(d);
		return NULL;
	}
	return make_record(ST.DeviceAttr, d);
}

/* ------------------------------------------------------------------ */
/* query_device_ex                                                     */
/* ------------------------------------------------------------------ */

/* The integer fields of struct ibv_device_attr_ex beside orig_attr and
 * the nested structs. */
#define DX(f) ATTR_INT(struct ibv_device_attr_ex, f)
static const AttrField device_attr_ex_fields[] = {
	DX(comp_mask),	      DX(completion_timestamp_mask),
	DX(hca_core_clock),   DX(device_cap_flags_ex),
	DX(max_wq_type_rq),   DX(raw_packet_caps),
	DX(max_dm_size),      DX(xrc_odp_caps),
#ifdef IBVERBS_HAVE_PHYS_PORT_CNT_EX
	DX(phys_port_cnt_ex),
#else
	/* Headers older than rdma-core 36 have no 32-bit count: the 8-bit
	 * one is what libibverbs reports there. */
	ATTR_INT_AS(struct ibv_device_attr_ex, orig_attr.phys_port_cnt,
		    phys_port_cnt_ex),
#endif
};

/* The nested structs, each a record of ibverbs._objects. */
static const AttrField odp_caps[] = {
	ATTR_INT(struct ibv_odp_caps, general_caps),
	ATTR_INT_AS(struct ibv_odp_caps, per_transport_caps.rc_odp_caps,
		    rc_odp_caps),
	ATTR_INT_AS(struct ibv_odp_caps, per_transport_caps.uc_odp_caps,
		    uc_odp_caps),
	ATTR_INT_AS(struct ibv_odp_caps, per_transport_caps.ud_odp_caps,
		    ud_odp_caps),
};
static const AttrField tso_caps[] = {
	ATTR_INT(struct ibv_tso_caps, max_tso),
	ATTR_INT(struct ibv_tso_caps, supported_qpts),
};
static const AttrField rss_caps[] = {
	ATTR_INT(struct ibv_rss_caps, supported_qpts),
	ATTR_INT(struct ibv_rss_caps, max_rwq_indirection_tables),
	ATTR_INT(struct ibv_rss_caps, max_rwq_indirection_table_size),
	ATTR_INT(struct ibv_rss_caps, rx_hash_fields_mask),
	ATTR_INT(struct ibv_rss_caps, rx_hash_function),
};
static const AttrField packet_pacing_caps[] = {
	ATTR_INT(struct ibv_packet_pacing_caps, qp_rate_limit_min),
	ATTR_INT(struct ibv_packet_pacing_caps, qp_rate_limit_max),
	ATTR_INT(struct ibv_packet_pacing_caps, supported_qpts),
};
static const AttrField tm_caps[] = {
	ATTR_INT(struct ibv_tm_caps, max_rndv_hdr_size),
	ATTR_INT(struct ibv_tm_caps, max_num_tags),
	ATTR_INT(struct ibv_tm_caps, flags),
	ATTR_INT(struct ibv_tm_caps, max_ops),
	ATTR_INT(struct ibv_tm_caps, max_sge),
};
static const AttrField cq_mod_caps[] = {
	ATTR_INT(struct ibv_cq_moderation_caps, max_cq_count),
	ATTR_INT(struct ibv_cq_moderation_caps, max_cq_period),
};
static const AttrField pci_atomic_caps[] = {
	ATTR_INT(struct ibv_pci_atomic_caps, fetch_add),
	ATTR_INT(struct ibv_pci_atomic_caps, swap),
	ATTR_INT(struct ibv_pci_atomic_caps, compare_swap),
};

/* Each nested struct: its DeviceAttrEx field, its record, its table. */
static const struct caps_record {
	const char *key;
	const char *cls;
	size_t off;
	const AttrField *fields;
	size_t n;
} device_attr_ex_caps[] = {
/* clang-format off */
#define CAPS(key, cls) \
	{ #key, cls, offsetof(struct ibv_device_attr_ex, key), key, ATTR_COUNT(key) }
	CAPS(odp_caps, "ODPCaps"),
	CAPS(tso_caps, "TSOCaps"),
	CAPS(rss_caps, "RSSCaps"),
	CAPS(packet_pacing_caps, "PacketPacingCaps"),
	CAPS(tm_caps, "TMCaps"),
	CAPS(cq_mod_caps, "CQModerationCaps"),
	CAPS(pci_atomic_caps, "PCIAtomicCaps"),
#undef CAPS
	/* clang-format on */
};
#undef DX

/* d[key] = the record of each nested struct.  0 / -1. */
static int add_caps(PyObject *d, const struct ibv_device_attr_ex *a)
{
	size_t i;

	for (i = 0; i < ATTR_COUNT(device_attr_ex_caps); i++) {
		const struct caps_record *c = &device_attr_ex_caps[i];
		PyObject *s = PyDict_New();

		if (s == NULL)
			return -1;
		if (attr_fields_set(s, (const char *)a + c->off, c->fields,
				    c->n) < 0) {
			Py_DECREF(s);
			return -1;
		}
		if (dict_set_steal(d, c->key, objects_record(c->cls, s)) < 0)
			return -1;
	}
	return 0;
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
	   "Raises:\n" DOC_RAISES_VERB("Context"));

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
	orig = device_attr_to_py(&a.orig_attr);
	if (dict_set_steal(d, "orig_attr", orig) < 0 || add_caps(d, &a) < 0 ||
	    attr_fields_set(d, &a, device_attr_ex_fields,
			    ATTR_COUNT(device_attr_ex_fields)) < 0 ||
	    PyDict_SetItemString(d, "legacy", legacy ? Py_True : Py_False) < 0)
		goto fail;
	return objects_record("DeviceAttrEx", d);
fail:
	Py_DECREF(d);
	return NULL;
}
