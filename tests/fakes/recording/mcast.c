/*
 * mcast.c - multicast groups (ibv_attach_mcast, ibv_detach_mcast), the
 * address of a UD sender from its receive completion (ibv_init_ah_from_wc,
 * ibv_create_ah_from_wc) and ibv_query_qp_data_in_order.
 *
 * Fixed answers:
 * - attach_mcast, detach_mcast: 0 (no membership is kept).
 * - init_ah_from_wc: what libibverbs takes from the WC (dlid = slid, sl,
 *   src_path_bits = dlid_path_bits, port_num); with IBV_WC_GRH also
 *   is_global 1, dgid = the GRH's sgid (bytes 8..24), sgid_index 1,
 *   hop_limit and traffic_class / flow_label from the GRH's IPv6 fields
 *   (the double reads no IPv4 header).  A GRH whose IP version nibble is
 *   neither 6 nor 4 fails with EPROTONOSUPPORT, as libibverbs does.
 * - create_ah_from_wc: that, then an AH as create_ah makes it.
 * - query_qp_data_in_order: 1 (in order) with flags 0, and with
 *   IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS (1) the caps WHOLE_MSG |
 *   ALIGNED_128_BYTES (3): what a device that writes in order answers.
 */
#include "fake.h"

#include <endian.h>
#include <stdio.h>

static void mcast_add_wc(struct fake_rec *r, const struct ibv_wc *wc)
{
	if (!r->on)
		return;
	fake_add(r,
		 "wc.wr_id=%llu wc.status=%d wc.opcode=%d wc.vendor_err=%u "
		 "wc.byte_len=%u wc.imm_data=0x%x wc.qp_num=%u wc.src_qp=%u "
		 "wc.wc_flags=0x%x wc.pkey_index=%u wc.slid=%u wc.sl=%u "
		 "wc.dlid_path_bits=%u",
		 (unsigned long long)wc->wr_id, (int)wc->status,
		 (int)wc->opcode, wc->vendor_err, wc->byte_len, wc->imm_data,
		 wc->qp_num, wc->src_qp, wc->wc_flags, wc->pkey_index, wc->slid,
		 wc->sl, wc->dlid_path_bits);
}

static int mcast_group(const char *verb, struct ibv_qp *qp,
		       const union ibv_gid *gid, uint16_t lid)
{
	struct fake_rec r;
	int err = fake_begin(&r, verb);

	FAKE_P(&r, "qp", qp);
	FAKE_U(&r, "qp_num", qp->qp_num);
	fake_bytes(&r, "gid", gid->raw, 16);
	FAKE_U(&r, "lid", lid);
	fake_end(&r);
	return err;
}

FAKE_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				 uint16_t lid)
{
	return mcast_group("attach_mcast", qp, gid, lid);
}

FAKE_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				 uint16_t lid)
{
	return mcast_group("detach_mcast", qp, gid, lid);
}

/* The answer of init_ah_from_wc (see the header); 0 or an errno. */
static int mcast_ah_attr(const struct ibv_wc *wc, const struct ibv_grh *grh,
			 uint8_t port_num, struct ibv_ah_attr *a)
{
	uint32_t vtf = be32toh(grh->version_tclass_flow);
	const uint8_t *ip4 = (const uint8_t *)grh + 20;

	memset(a, 0, sizeof(*a));
	a->dlid = wc->slid;
	a->sl = wc->sl;
	a->src_path_bits = wc->dlid_path_bits;
	a->port_num = port_num;
	a->grh.flow_label = vtf & 0xfffff;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	if (vtf >> 28 != 6 && ip4[0] >> 4 != 4)
		return EPROTONOSUPPORT;
	a->is_global = 1;
	a->grh.dgid = grh->sgid;
	a->grh.sgid_index = 1;
	a->grh.hop_limit = grh->hop_limit;
	a->grh.traffic_class = (vtf >> 20) & 0xff;
	return 0;
}

FAKE_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context,
				    uint8_t port_num, struct ibv_wc *wc,
				    struct ibv_grh *grh,
				    struct ibv_ah_attr *ah_attr)
{
	struct fake_rec r;
	int err = fake_begin(&r, "init_ah_from_wc");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	mcast_add_wc(&r, wc);
	fake_bytes(&r, "grh", grh, sizeof(*grh));
	fake_end(&r);
	if (!err)
		err = mcast_ah_attr(wc, grh, port_num, ah_attr);
	if (err) {
		fake_set_errno(err);
		return -1;
	}
	return 0;
}

FAKE_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
						 struct ibv_wc *wc,
						 struct ibv_grh *grh,
						 uint8_t port_num)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_ah_from_wc");
	struct ibv_ah_attr attr;

	FAKE_P(&r, "pd", pd);
	mcast_add_wc(&r, wc);
	fake_bytes(&r, "grh", grh, sizeof(*grh));
	FAKE_U(&r, "port_num", port_num);
	fake_end(&r);
	if (!err)
		err = mcast_ah_attr(wc, grh, port_num, &attr);
	return fake_new_ah(pd, err);
}

FAKE_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					   enum ibv_wr_opcode op,
					   uint32_t flags)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_qp_data_in_order");

	FAKE_P(&r, "qp", qp);
	FAKE_U(&r, "qp_num", qp->qp_num);
	FAKE_I(&r, "op", op);
	FAKE_X(&r, "flags", flags);
	fake_end(&r);
	if (err)
		return 0; /* the verb has no error return: "not in order" */
	return (flags & 1) ? 3 : 1;
}
