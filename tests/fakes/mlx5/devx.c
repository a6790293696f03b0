/*
 * devx.c - the fake's DEVX calls (test-only): general command, EQN query,
 * umems, UARs, objects, QP commands and the event channel.
 *
 * The answers: an out mailbox is the first bytes of "in" echoed from
 * byte 8 on (bytes 0..7, the PRM status and syndrome, zero: success),
 * an object's create answer carries its id in bytes 8..11 (big-endian,
 * 0x100 and up); EQN = 100 + vector; umem ids 0x10 and up; a UAR's page
 * id 7, its reg_addr base + 0x800.  The event channel is a pipe: each
 * subscribe writes one event (the cookie, then the first event type as
 * a 4-byte value and 52 bytes of 0xee) that get_event reads back.
 */
#include "fake_mlx5.h"
#include <unistd.h>
#include <fcntl.h>

/* The object ids and umem ids handed out. */
static uint32_t next_obj_id = 0x100, next_umem_id = 0x10;

static void echo_out(const void *in, size_t inlen, void *out, size_t outlen)
{
	size_t n = outlen > 8 ? outlen - 8 : 0;

	memset(out, 0, outlen);
	if (n > inlen)
		n = inlen;
	if (n)
		memcpy((char *)out + 8, in, n);
}

/* The common record of the "in, outlen" calls. */
static int cmd_rec(struct m5rec *r, const char *verb, const char *tkey,
		   const void *target, const void *in, size_t inlen,
		   size_t outlen)
{
	int err = m5_begin(r, verb);

	M5_P(r, tkey, target);
	M5_U(r, "inlen", inlen);
	m5_bytes(r, "in", in, inlen);
	M5_U(r, "outlen", outlen);
	return err;
}

/* A command that answers by echoing in into out: cmd_rec's record, then
 * the target's id ("key=value" by idfmt; none where idfmt is NULL). */
static int echo_cmd(const char *verb, const char *tkey, const void *target,
		    const char *idfmt, unsigned long long id, const void *in,
		    size_t inlen, void *out, size_t outlen)
{
	struct m5rec r;
	int err = cmd_rec(&r, verb, tkey, target, in, inlen, outlen);

	if (idfmt)
		m5_add(&r, idfmt, id);
	m5_end(&r);
	if (err)
		return err;
	echo_out(in, inlen, out, outlen);
	return 0;
}

FAKE_EXPORT int mlx5dv_devx_general_cmd(struct ibv_context *ctx, const void *in,
					size_t inlen, void *out, size_t outlen)
{
	return echo_cmd("mlx5dv_devx_general_cmd", "ctx", ctx, NULL, 0, in,
			inlen, out, outlen);
}

FAKE_EXPORT int mlx5dv_devx_query_eqn(struct ibv_context *ctx, uint32_t vector,
				      uint32_t *eqn)
{
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_devx_query_eqn");

	M5_P(&r, "ctx", ctx);
	M5_U(&r, "vector", vector);
	m5_end(&r);
	if (err)
		return err;
	*eqn = 100 + vector;
	return 0;
}

/* ---- umems ---- */

FAKE_EXPORT struct mlx5dv_devx_umem *
mlx5dv_devx_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
		     uint32_t access)
{
	struct mlx5dv_devx_umem *u;
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_devx_umem_reg");

	M5_P(&r, "ctx", ctx);
	M5_P(&r, "addr", addr);
	M5_U(&r, "size", size);
	M5_X(&r, "access", access);
	/* the first byte of the memory: the binding passed the buffer */
	if (addr != NULL && size)
		M5_U(&r, "first_byte", *(unsigned char *)addr);
	m5_end(&r);
	if (err || (u = calloc(1, sizeof(*u))) == NULL) {
		m5_set_errno(err, ENOMEM);
		return NULL;
	}
	u->umem_id = next_umem_id++;
	return u;
}

FAKE_EXPORT struct mlx5dv_devx_umem *
mlx5dv_devx_umem_reg_ex(struct ibv_context *ctx, struct mlx5dv_devx_umem_in *in)
{
	struct mlx5dv_devx_umem *u;
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_devx_umem_reg_ex");

	M5_P(&r, "ctx", ctx);
	M5_P(&r, "in.addr", in->addr);
	M5_U(&r, "in.size", in->size);
	M5_X(&r, "in.access", in->access);
	M5_X(&r, "in.pgsz_bitmap", in->pgsz_bitmap);
	M5_X(&r, "in.comp_mask", in->comp_mask);
	m5_add(&r, "in.dmabuf_fd=%d", in->dmabuf_fd);
	/* rdma-core 37..65's struct: 48 bytes on LP64 */
	m5_bytes(&r, "in", in, 48);
	m5_end(&r);
	if (err || (u = calloc(1, sizeof(*u))) == NULL) {
		m5_set_errno(err, ENOMEM);
		return NULL;
	}
	u->umem_id = next_umem_id++;
	return u;
}

FAKE_EXPORT int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *u)
{
	return m5_free_rec("mlx5dv_devx_umem_dereg", "umem_id=%llu", u->umem_id,
			   u);
}

/* ---- UARs ---- */

struct fake_uar {
	struct mlx5dv_devx_uar uar;
	char page[4096];
};

FAKE_EXPORT struct mlx5dv_devx_uar *
mlx5dv_devx_alloc_uar(struct ibv_context *ctx, uint32_t flags)
{
	struct fake_uar *u;
	struct m5rec r;
	int err = m5_begin(&r, "mlx5dv_devx_alloc_uar");

	M5_P(&r, "ctx", ctx);
	M5_X(&r, "flags", flags);
	m5_end(&r);
	if (err || (u = calloc(1, sizeof(*u))) == NULL) {
		m5_set_errno(err, ENOMEM);
		return NULL;
	}
	u->uar.base_addr = u->page;
	u->uar.reg_addr = u->page + 0x800;
	u->uar.page_id = 7;
	u->uar.mmap_off = 0x3000;
	u->uar.comp_mask = 0;
	return &u->uar;
}

FAKE_EXPORT void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *uar)
{
	struct m5rec r;

	m5_begin(&r, "mlx5dv_devx_free_uar");
	M5_U(&r, "page_id", uar->page_id);
	M5_P(&r, "reg_addr", uar->reg_addr);
	m5_end(&r);
	free(uar);
}

/* ---- objects ---- */

struct mlx5dv_devx_obj {
	uint32_t id;
};

FAKE_EXPORT struct mlx5dv_devx_obj *
mlx5dv_devx_obj_create(struct ibv_context *ctx, const void *in, size_t inlen,
		       void *out, size_t outlen)
{
	struct mlx5dv_devx_obj *o;
	struct m5rec r;
	int err = cmd_rec(&r, "mlx5dv_devx_obj_create", "ctx", ctx, in, inlen,
			  outlen);

	m5_end(&r);
	if (err || (o = calloc(1, sizeof(*o))) == NULL) {
		m5_set_errno(err, ENOMEM);
		return NULL;
	}
	o->id = next_obj_id++;
	memset(out, 0, outlen);
	if (outlen >= 12) {
		unsigned char *b = (unsigned char *)out + 8;

		b[0] = (unsigned char)(o->id >> 24);
		b[1] = (unsigned char)(o->id >> 16);
		b[2] = (unsigned char)(o->id >> 8);
		b[3] = (unsigned char)o->id;
	}
	return o;
}

FAKE_EXPORT int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *o,
				       const void *in, size_t inlen, void *out,
				       size_t outlen)
{
	return echo_cmd("mlx5dv_devx_obj_modify", "obj", o, "obj.id=0x%llx",
			o->id, in, inlen, out, outlen);
}

FAKE_EXPORT int mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *o, const void *in,
				      size_t inlen, void *out, size_t outlen)
{
	return echo_cmd("mlx5dv_devx_obj_query", "obj", o, "obj.id=0x%llx",
			o->id, in, inlen, out, outlen);
}

FAKE_EXPORT int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *o)
{
	return m5_free_rec("mlx5dv_devx_obj_destroy", "obj.id=0x%llx", o->id,
			   o);
}

/* ---- QP commands ---- */

FAKE_EXPORT int mlx5dv_devx_qp_modify(struct ibv_qp *qp, const void *in,
				      size_t inlen, void *out, size_t outlen)
{
	return echo_cmd("mlx5dv_devx_qp_modify", "qp", qp, "qp.qp_num=%llu",
			qp->qp_num, in, inlen, out, outlen);
}

FAKE_EXPORT int mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in,
				     size_t inlen, void *out, size_t outlen)
{
	return echo_cmd("mlx5dv_devx_qp_query", "qp", qp, "qp.qp_num=%llu",
			qp->qp_num, in, inlen, out, outlen);
}

/* ---- the event channel ---- */

struct fake_ech {
	struct mlx5dv_devx_event_channel ch; /* fd: the pipe's read end */
	int wfd;
};

FAKE_EXPORT struct mlx5dv_devx_event_channel *mlx5dv_devx_create_event_channel(
	struct ibv_context *ctx,
	enum mlx5dv_devx_create_event_channel_flags flags)
{
	struct fake_ech *e;
	struct m5rec r;
	int fds[2];
	int err = m5_begin(&r, "mlx5dv_devx_create_event_channel");

	M5_P(&r, "ctx", ctx);
	M5_X(&r, "flags", (unsigned)flags);
	m5_end(&r);
	if (err || (e = calloc(1, sizeof(*e))) == NULL) {
		m5_set_errno(err, ENOMEM);
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(e);
		return NULL;
	}
	e->ch.fd = fds[0];
	e->wfd = fds[1];
	return &e->ch;
}

FAKE_EXPORT void
mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *ch)
{
	struct fake_ech *e = (struct fake_ech *)ch;
	struct m5rec r;

	m5_begin(&r, "mlx5dv_devx_destroy_event_channel");
	m5_add(&r, "fd=%d", ch->fd);
	m5_end(&r);
	close(e->ch.fd);
	close(e->wfd);
	free(e);
}

FAKE_EXPORT int mlx5dv_devx_subscribe_devx_event(
	struct mlx5dv_devx_event_channel *ch, struct mlx5dv_devx_obj *obj,
	uint16_t events_sz, uint16_t events_num[], uint64_t cookie)
{
	struct fake_ech *e = (struct fake_ech *)ch;
	unsigned char ev[64];
	struct m5rec r;
	uint32_t type;
	int err = m5_begin(&r, "mlx5dv_devx_subscribe_devx_event");

	m5_add(&r, "fd=%d", ch->fd);
	M5_X(&r, "obj.id", obj ? obj->id : 0);
	M5_U(&r, "events_sz", events_sz);
	m5_bytes(&r, "events_num", events_num, events_sz);
	M5_X(&r, "cookie", cookie);
	m5_end(&r);
	if (err)
		return err;
	memcpy(ev, &cookie, 8);
	type = events_num[0];
	memcpy(ev + 8, &type, 4);
	memset(ev + 12, 0xee, sizeof(ev) - 12);
	if (write(e->wfd, ev, sizeof(ev)) != (ssize_t)sizeof(ev))
		return EIO;
	return 0;
}

FAKE_EXPORT ssize_t mlx5dv_devx_get_event(
	struct mlx5dv_devx_event_channel *ch,
	struct mlx5dv_devx_async_event_hdr *event_data, size_t event_resp_len)
{
	struct m5rec r;
	ssize_t n;
	int err = m5_begin(&r, "mlx5dv_devx_get_event");

	m5_add(&r, "fd=%d", ch->fd);
	M5_U(&r, "event_resp_len", event_resp_len);
	m5_end(&r);
	if (err) {
		m5_set_errno(err, 0);
		return -1;
	}
	n = read(ch->fd, event_data, event_resp_len);
	return n;
}
