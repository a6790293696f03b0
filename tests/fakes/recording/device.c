/*
 * device.c - devices, contexts, queries, events and the helpers
 * libibverbs answers itself (strings, rates, P_Key and GID lookups).
 *
 * Two devices, answering fixed values (README.md lists them):
 *   fake0: a RoCE device (link layer Ethernet), GIDs fe80::2:ff:fe00:0 and
 *          ::ffff:192.0.2.1 (RoCE v2), LID 0;
 *   fake1: an InfiniBand device, LID 0x11, SM LID 1, one IB GID.
 * Each has one port (1), ACTIVE, MTU 4096 max / 1024 active, P_Key table
 * {0xffff}.
 */
#include "fake.h"

#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define DEV_COUNT 2
#define DEV_GIDS 4 /* gid_tbl_len; entries 2 and 3 are empty */

static struct ibv_device dev_table[DEV_COUNT];

__attribute__((constructor)) static void dev_init(void)
{
	int i;

	for (i = 0; i < DEV_COUNT; i++) {
		struct ibv_device *d = &dev_table[i];

		d->node_type = IBV_NODE_CA;
		d->transport_type = IBV_TRANSPORT_IB;
		snprintf(d->name, sizeof(d->name), "fake%d", i);
		snprintf(d->dev_name, sizeof(d->dev_name), "uverbs%d", i);
		snprintf(d->dev_path, sizeof(d->dev_path),
			 "/sys/class/infiniband_verbs/uverbs%d", i);
		snprintf(d->ibdev_path, sizeof(d->ibdev_path),
			 "/sys/class/infiniband/fake%d", i);
	}
}

static int dev_index(struct ibv_device *d)
{
	return (int)(d - dev_table);
}

static int dev_valid(struct ibv_device *d)
{
	return d >= dev_table && d < dev_table + DEV_COUNT;
}

static uint64_t dev_guid(int i)
{
	return 0x020000fffe000000ull | (uint64_t)i;
}

static int dev_is_roce(int i)
{
	return i == 0;
}

/* ------------------------------------------------------------------ */
/* Device list                                                         */
/* ------------------------------------------------------------------ */

FAKE_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct fake_rec r;
	int err = fake_begin(&r, "get_device_list");
	struct ibv_device **list;
	int i;

	FAKE_P(&r, "num_devices", num_devices);
	list = fake_end_new(&r, err, "device_list",
			    (DEV_COUNT + 1) * sizeof(*list));
	if (list == NULL)
		return NULL;
	for (i = 0; i < DEV_COUNT; i++)
		list[i] = &dev_table[i];
	if (num_devices)
		*num_devices = DEV_COUNT;
	return list;
}

FAKE_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	fake_record_simple("free_device_list", "list", list);
	fake_free_obj("device_list", list);
}

FAKE_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	struct fake_rec r;

	fake_begin(&r, "get_device_name");
	FAKE_P(&r, "device", device);
	fake_end(&r);
	return dev_valid(device) ? device->name : NULL;
}

FAKE_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct fake_rec r;

	fake_begin(&r, "get_device_guid");
	FAKE_P(&r, "device", device);
	fake_end(&r);
	return dev_valid(device) ? htobe64(dev_guid(dev_index(device))) : 0;
}

FAKE_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	struct fake_rec r;
	int err = fake_begin(&r, "get_device_index");

	FAKE_P(&r, "device", device);
	fake_end(&r);
	if (err) /* an injected failure: the kernel gives no index */
		return -1;
	return dev_valid(device) ? dev_index(device) : -1;
}

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

void fake_run_ops(struct fake_context *fc);

/* The verbs_context ops that fake_drop_ops can leave unset, as on a
 * provider without them. */
static const struct {
	const char *name;
	size_t off;
} dev_droppable[] = {
	{ "query_port", offsetof(struct verbs_context, query_port) },
	{ "query_device_ex", offsetof(struct verbs_context, query_device_ex) },
	{ "open_xrcd", offsetof(struct verbs_context, open_xrcd) },
	{ "open_qp", offsetof(struct verbs_context, open_qp) },
	{ "create_srq_ex", offsetof(struct verbs_context, create_srq_ex) },
};
#define DEV_N_DROPPABLE (sizeof(dev_droppable) / sizeof(dev_droppable[0]))
static unsigned int dev_dropped; /* bit i: dev_droppable[i] unset */

/* Contexts opened from now on lack the ops named in names (space
 * separated; "" for none).  0, or -1 for a name not in dev_droppable. */
FAKE_EXPORT int fake_drop_ops(const char *names)
{
	unsigned int bits = 0;
	const char *p = names;
	size_t i, n;

	while (*p != '\0') {
		n = strcspn(p, " ");
		for (i = 0; i < DEV_N_DROPPABLE; i++)
			if (strlen(dev_droppable[i].name) == n &&
			    strncmp(dev_droppable[i].name, p, n) == 0)
				break;
		if (n > 0 && i == DEV_N_DROPPABLE)
			return -1;
		if (n > 0)
			bits |= 1u << i;
		p += n;
		p += strspn(p, " ");
	}
	__atomic_store_n(&dev_dropped, bits, __ATOMIC_RELAXED);
	return 0;
}

static void dev_drop_ops(struct fake_context *fc)
{
	unsigned int bits = __atomic_load_n(&dev_dropped, __ATOMIC_RELAXED);
	size_t i;

	for (i = 0; i < DEV_N_DROPPABLE; i++)
		if (bits & (1u << i))
			memset((char *)&fc->vctx + dev_droppable[i].off, 0,
			       sizeof(void (*)(void)));
}

FAKE_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct fake_rec r;
	int err = fake_begin(&r, "open_device");
	struct fake_context *fc;
	struct ibv_context *c;

	fake_str(&r, "device", dev_valid(device) ? device->name : NULL);
	fake_end(&r);
	if (!err && !dev_valid(device))
		err = ENODEV;
	fc = fake_new_unless(err, "context", sizeof(*fc));
	if (fc == NULL)
		return NULL;
	c = &fc->vctx.context;
	c->device = device;
	c->cmd_fd = -1;
	c->async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->num_comp_vectors = 4;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	fc->vctx.sz = sizeof(fc->vctx);
	fc->dev_index = dev_index(device);
	fake_run_ops(fc);
	dev_drop_ops(fc);
	return c;
}

FAKE_EXPORT int ibv_close_device(struct ibv_context *context)
{
	int err = fake_record_simple("close_device", "context", context);

	if (err)
		return err;
	if (context->async_fd >= 0)
		close(context->async_fd);
	pthread_mutex_destroy(&context->mutex);
	fake_free_obj("context", fake_ctx(context));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Queries                                                             */
/* ------------------------------------------------------------------ */

static void dev_fill_attr(struct fake_context *fc, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "1.2.3");
	a->node_guid = htobe64(dev_guid(fc->dev_index));
	a->sys_image_guid = htobe64(dev_guid(fc->dev_index));
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0xfa4e;
	a->vendor_part_id = 1;
	a->hw_ver = 1;
	a->max_qp = 1024;
	a->max_qp_wr = 4096;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_MGT_EXTENSIONS;
	a->max_sge = 16;
	a->max_sge_rd = 16;
	a->max_cq = 1024;
	a->max_cqe = 65536;
	a->max_mr = 4096;
	a->max_pd = 1024;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_res_rd_atom = 16384;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mw = 1024;
	a->max_ah = 1024;
	a->max_srq = 256;
	a->max_srq_wr = 4096;
	a->max_srq_sge = 16;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

FAKE_EXPORT int ibv_query_device(struct ibv_context *context,
				 struct ibv_device_attr *device_attr)
{
	int err = fake_record_simple("query_device", "context", context);

	if (err)
		return err;
	dev_fill_attr(fake_ctx(context), device_attr);
	return 0;
}

static int dev_query_device_ex(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_device_ex");

	FAKE_P(&r, "context", context);
	FAKE_P(&r, "input", input);
	if (input)
		FAKE_X(&r, "input.comp_mask", input->comp_mask);
	FAKE_U(&r, "attr_size", attr_size);
	fake_end(&r);
	if (err)
		return err;
	memset(attr, 0, attr_size);
	dev_fill_attr(fake_ctx(context), &attr->orig_attr);
	attr->odp_caps.general_caps = IBV_ODP_SUPPORT;
	attr->completion_timestamp_mask = (1ull << 48) - 1;
	attr->hca_core_clock = 1000000; /* kHz: 1 GHz */
	attr->device_cap_flags_ex = attr->orig_attr.device_cap_flags;
	attr->max_dm_size = 1 << 20;
	return 0;
}

static void dev_fill_port(struct fake_context *fc, struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_1024;
	a->gid_tbl_len = DEV_GIDS;
	a->port_cap_flags = 0x00010000;
	a->max_msg_sz = 1u << 31;
	a->pkey_tbl_len = 1;
	a->active_width = 2; /* 4x */
	a->active_speed = 32; /* 25 Gb/s per lane (EDR) */
	a->phys_state = 5; /* LinkUp */
	if (dev_is_roce(fc->dev_index)) {
		a->link_layer = IBV_LINK_LAYER_ETHERNET;
	} else {
		a->link_layer = IBV_LINK_LAYER_INFINIBAND;
		a->lid = 0x11;
		a->sm_lid = 1;
		a->lmc = 0;
	}
}

static int dev_port_check(uint32_t port)
{
	return port == 1 ? 0 : EINVAL;
}

/* The exported (compat) entry point; the binding uses the context op
 * below when verbs_get_ctx_op finds it, as libibverbs' header does. */
FAKE_EXPORT int
FAKE_VERB(ibv_query_port)(struct ibv_context *context, uint8_t port_num,
			  struct _compat_ibv_port_attr *port_attr)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_port");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	fake_add(&r, "compat=1");
	fake_end(&r);
	if (!err)
		err = dev_port_check(port_num);
	if (err)
		return err;
	dev_fill_port(fake_ctx(context), (struct ibv_port_attr *)port_attr);
	return 0;
}

static int dev_query_port_op(struct ibv_context *context, uint8_t port_num,
			     struct ibv_port_attr *port_attr,
			     size_t port_attr_len)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_port");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	FAKE_U(&r, "port_attr_len", port_attr_len);
	fake_end(&r);
	if (!err)
		err = dev_port_check(port_num);
	if (err)
		return err;
	dev_fill_port(fake_ctx(context), port_attr);
	return 0;
}

/* GID table entry i of a device: 0 and 1 are set, the rest empty. */
static int dev_gid(int dev, uint32_t i, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->gid_index = i;
	e->port_num = 1;
	if (i >= DEV_GIDS)
		return EINVAL;
	if (dev_is_roce(dev)) {
		e->gid_type = IBV_GID_TYPE_ROCE_V2;
		e->ndev_ifindex = 2;
		if (i == 0) {
			e->gid.raw[0] = 0xfe;
			e->gid.raw[1] = 0x80;
			e->gid.global.interface_id = htobe64(dev_guid(dev));
		} else if (i == 1) {
			e->gid.raw[10] = 0xff;
			e->gid.raw[11] = 0xff;
			e->gid.raw[12] = 192;
			e->gid.raw[13] = 0;
			e->gid.raw[14] = 2;
			e->gid.raw[15] = (uint8_t)(1 + dev);
		} else {
			return ENODATA;
		}
	} else {
		e->gid_type = IBV_GID_TYPE_IB;
		if (i != 0)
			return ENODATA;
		e->gid.raw[0] = 0xfe;
		e->gid.raw[1] = 0x80;
		e->gid.global.interface_id = htobe64(dev_guid(dev));
	}
	return 0;
}

FAKE_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			      int index, union ibv_gid *gid)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_gid");
	struct ibv_gid_entry e;

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	FAKE_I(&r, "index", index);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return -1;
	}
	if (dev_port_check(port_num) || index < 0 ||
	    dev_gid(fake_ctx(context)->dev_index, (uint32_t)index, &e) ==
		    EINVAL) {
		errno = EINVAL;
		return -1;
	}
	*gid = e.gid; /* an empty entry reads as zeros, as on Linux */
	return 0;
}

FAKE_EXPORT int _ibv_query_gid_ex(struct ibv_context *context,
				  uint32_t port_num, uint32_t gid_index,
				  struct ibv_gid_entry *entry, uint32_t flags,
				  size_t entry_size)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_gid_ex");
	struct ibv_gid_entry e;

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	FAKE_U(&r, "gid_index", gid_index);
	FAKE_X(&r, "flags", flags);
	FAKE_U(&r, "entry_size", entry_size);
	fake_end(&r);
	if (!err)
		err = dev_port_check(port_num);
	if (!err && (flags || entry_size < sizeof(e)))
		err = EINVAL;
	if (!err)
		err = dev_gid(fake_ctx(context)->dev_index, gid_index, &e);
	if (err)
		return err;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

FAKE_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
					 struct ibv_gid_entry *entries,
					 size_t max_entries, uint32_t flags,
					 size_t entry_size)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_gid_table");
	struct ibv_gid_entry e;
	size_t n = 0;
	uint32_t i;

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "max_entries", max_entries);
	FAKE_X(&r, "flags", flags);
	FAKE_U(&r, "entry_size", entry_size);
	fake_end(&r);
	if (!err && (flags || entry_size < sizeof(e)))
		err = EINVAL;
	if (err)
		return fake_neg_errno(err);
	for (i = 0; i < DEV_GIDS; i++) {
		if (dev_gid(fake_ctx(context)->dev_index, i, &e) != 0)
			continue;
		if (n == max_entries)
			return -EINVAL;
		memcpy((char *)entries + n * entry_size, &e, sizeof(e));
		n++;
	}
	return (ssize_t)n;
}

FAKE_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			       int index, __be16 *pkey)
{
	struct fake_rec r;
	int err = fake_begin(&r, "query_pkey");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	FAKE_I(&r, "index", index);
	fake_end(&r);
	if (!err && (dev_port_check(port_num) || index != 0))
		err = EINVAL;
	if (err) {
		fake_set_errno(err);
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

FAKE_EXPORT int ibv_get_pkey_index(struct ibv_context *context,
				   uint8_t port_num, __be16 pkey)
{
	struct fake_rec r;
	int err = fake_begin(&r, "get_pkey_index");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "port_num", port_num);
	FAKE_X(&r, "pkey", be16toh(pkey));
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return -1;
	}
	if (port_num != 1 || (be16toh(pkey) & 0x7fff) != 0x7fff) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

FAKE_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					    struct ibv_ah_attr *attr,
					    uint8_t eth_mac[6], uint16_t *vid)
{
	struct fake_rec r;
	int err = fake_begin(&r, "resolve_eth_l2_from_gid");

	FAKE_P(&r, "context", context);
	FAKE_U(&r, "attr.is_global", attr->is_global);
	FAKE_U(&r, "attr.port_num", attr->port_num);
	FAKE_U(&r, "attr.grh.sgid_index", attr->grh.sgid_index);
	fake_bytes(&r, "attr.grh.dgid", attr->grh.dgid.raw, 16);
	fake_end(&r);
	if (err)
		return err;
	if (!attr->is_global)
		return EINVAL;
	/* A MAC made from the GID's last four bytes. */
	eth_mac[0] = 0x02;
	eth_mac[1] = 0x00;
	memcpy(eth_mac + 2, attr->grh.dgid.raw + 12, 4);
	*vid = 0xffff; /* no VLAN */
	return 0;
}

/* ------------------------------------------------------------------ */
/* Async events: none happen on their own (the async fd never becomes   */
/* readable); fake_async_event queues one for the next call            */
/* ------------------------------------------------------------------ */

static pthread_mutex_t dev_async_lock = PTHREAD_MUTEX_INITIALIZER;
static int dev_async_pending;
static struct ibv_async_event dev_async_ev;
static char dev_async_stranger; /* an element no binding object wraps */

/* The next ibv_get_async_event (of any context) answers an event of
 * type about: "port" (port_num = port), "stranger" (an object the
 * binding did not create) or a kind of fake_new_obj ("qp", "cq",
 * "srq", "wq": the newest live one).  0, or -1 when there is none. */
FAKE_EXPORT int fake_async_event(int type, const char *about, int port)
{
	struct ibv_async_event ev = { .event_type = type };

	if (strcmp(about, "port") == 0)
		ev.element.port_num = port;
	else if (strcmp(about, "stranger") == 0)
		ev.element.qp = (struct ibv_qp *)(void *)&dev_async_stranger;
	else if ((ev.element.qp = fake_last_obj(about)) == NULL)
		return -1;
	pthread_mutex_lock(&dev_async_lock);
	dev_async_ev = ev;
	dev_async_pending = 1;
	pthread_mutex_unlock(&dev_async_lock);
	return 0;
}

FAKE_EXPORT int ibv_get_async_event(struct ibv_context *context,
				    struct ibv_async_event *event)
{
	struct fake_rec r;
	int err = fake_begin(&r, "get_async_event");

	FAKE_P(&r, "context", context);
	fake_end(&r);
	if (err) {
		fake_set_errno(err);
		return -1;
	}
	pthread_mutex_lock(&dev_async_lock);
	if (dev_async_pending) {
		*event = dev_async_ev;
		dev_async_pending = 0;
		err = 0;
	} else {
		err = EAGAIN;
	}
	pthread_mutex_unlock(&dev_async_lock);
	fake_set_errno(err);
	return err ? -1 : 0;
}

FAKE_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct fake_rec r;

	fake_begin(&r, "ack_async_event");
	FAKE_U(&r, "event.event_type", event->event_type);
	fake_end(&r);
}

/* ------------------------------------------------------------------ */
/* Fork                                                                */
/* ------------------------------------------------------------------ */

static int dev_fork_enabled;

FAKE_EXPORT int ibv_fork_init(void)
{
	struct fake_rec r;
	int err = fake_begin(&r, "fork_init");

	fake_end(&r);
	if (err)
		return err;
	__atomic_store_n(&dev_fork_enabled, 1, __ATOMIC_RELAXED);
	return 0;
}

FAKE_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	struct fake_rec r;

	fake_begin(&r, "is_fork_initialized");
	fake_end(&r);
	return __atomic_load_n(&dev_fork_enabled, __ATOMIC_RELAXED) ?
		       IBV_FORK_ENABLED :
		       IBV_FORK_DISABLED;
}

/* ------------------------------------------------------------------ */
/* Strings (the fake's own text, not libibverbs')                      */
/* ------------------------------------------------------------------ */

#define DEV_STR_FN(fn, verb, type, arg, text)                     \
	FAKE_EXPORT const char *fn(type arg)                      \
	{                                                         \
		static __thread char buf[48];                     \
		struct fake_rec r;                                \
		fake_begin(&r, verb);                             \
		FAKE_I(&r, #arg, arg);                            \
		fake_end(&r);                                     \
		snprintf(buf, sizeof(buf), text " %d", (int)arg); \
		return buf;                                       \
	}

DEV_STR_FN(ibv_wc_status_str, "wc_status_str", enum ibv_wc_status, status,
	   "fake wc status")
DEV_STR_FN(ibv_event_type_str, "event_type_str", enum ibv_event_type, event,
	   "fake event")
DEV_STR_FN(ibv_node_type_str, "node_type_str", enum ibv_node_type, node_type,
	   "fake node type")
DEV_STR_FN(ibv_port_state_str, "port_state_str", enum ibv_port_state,
	   port_state, "fake port state")

/* ------------------------------------------------------------------ */
/* Rates: the enum's values (facts of verbs.h)                         */
/* ------------------------------------------------------------------ */

static const struct {
	enum ibv_rate rate;
	int mult; /* of 2.5 Gb/s; -1: not a multiple */
	int mbps;
} dev_rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },	   { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },	   { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },   { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },   { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 }, { IBV_RATE_14_GBPS, -1, 14062 },
	{ IBV_RATE_56_GBPS, -1, 56250 },   { IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 }, { IBV_RATE_25_GBPS, -1, 25781 },
	{ IBV_RATE_100_GBPS, -1, 103125 }, { IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 }, { IBV_RATE_28_GBPS, -1, 28125 },
	{ IBV_RATE_50_GBPS, -1, 53125 },   { IBV_RATE_400_GBPS, -1, 425000 },
	{ IBV_RATE_600_GBPS, -1, 637500 },
};

#define DEV_NRATES (sizeof(dev_rates) / sizeof(dev_rates[0]))

enum dev_rate_col { DEV_RATE, DEV_MULT, DEV_MBPS };

static int dev_rate_cell(size_t i, enum dev_rate_col c)
{
	return c == DEV_RATE ? (int)dev_rates[i].rate :
	       c == DEV_MULT ? dev_rates[i].mult :
			       dev_rates[i].mbps;
}

/* Record verb(key=v), then answer column `to` of the row whose column
 * `from` is v, or `none`. */
static int dev_rate_lookup(const char *verb, const char *key, int v,
			   enum dev_rate_col from, enum dev_rate_col to,
			   int none)
{
	struct fake_rec r;
	size_t i;

	fake_begin(&r, verb);
	FAKE_I(&r, key, v);
	fake_end(&r);
	for (i = 0; i < DEV_NRATES; i++)
		if (dev_rate_cell(i, from) == v && v > 0)
			return dev_rate_cell(i, to);
	return none;
}

FAKE_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	return dev_rate_lookup("rate_to_mult", "rate", rate, DEV_RATE, DEV_MULT,
			       -1);
}

FAKE_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	return dev_rate_lookup("mult_to_ibv_rate", "mult", mult, DEV_MULT,
			       DEV_RATE, IBV_RATE_MAX);
}

FAKE_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	return dev_rate_lookup("rate_to_mbps", "rate", rate, DEV_RATE, DEV_MBPS,
			       -1);
}

FAKE_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	return dev_rate_lookup("mbps_to_ibv_rate", "mbps", mbps, DEV_MBPS,
			       DEV_RATE, IBV_RATE_MAX);
}

FAKE_CONTEXT_OPS(dev_ops)
{
	fc->vctx.query_port = dev_query_port_op;
	fc->vctx.query_device_ex = dev_query_device_ex;
}
