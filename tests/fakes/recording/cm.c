/*
 * cm.c - the recording double of librdmacm (test-only): the rdma_*
 * functions the binding resolves (cm/cm.h's RDMACM_SYMBOLS), in the same
 * library as the libibverbs double, so that one log, one failure
 * injection and one set of live counts cover both.  The tests load it
 * through IBVERBS_LIBRDMACM (recording.Runner.with_rdmacm()).
 *
 * Nothing goes over a wire.  An event channel is an eventfd (semaphore
 * mode, non-blocking) and a queue of events:
 *  - rdma_resolve_addr, rdma_resolve_route, rdma_connect and rdma_accept
 *    queue their success event (ADDR_RESOLVED, ROUTE_RESOLVED,
 *    ESTABLISHED, ESTABLISHED) on the id's channel, or, when the test
 *    armed answers for the call (fake_cm_answer), those events instead,
 *    in order (event -1: none at all);
 *  - fake_cm_queue(fd, ...) queues an event on the channel whose fd is fd
 *    (CMID.fd, CMListener.fd); a CONNECT_REQUEST carries a new id on
 *    device fake0, peer 192.0.2.2 port 40000, local 192.0.2.1 port 4420
 *    (fake_cm_set_request_family: IPv6 or another family).  Private data
 *    of length -1 is none at all (a NULL pointer), of 0 an empty one.
 * Events a channel still holds when it is destroyed are freed with it
 * (a request's new id too).  rdma_get_cm_event answers EAGAIN when none
 * is queued.
 *
 * Fixed values: rdma_getaddrinfo parses numeric IPv4/IPv6 addresses
 * only (anything else: EAI_NONAME); an injected failure with a positive
 * value is -1 with that errno, with a negative value that EAI code.
 * rdma_resolve_addr and a bind to a non-wildcard address open fake0 (the
 * id's verbs, closed by rdma_destroy_id); a bind to port 0 gets port
 * 20000 + n.  rdma_create_qp is ibv_create_qp of this double.  The
 * libibverbs calls made inside (opening and closing fake0, creating and
 * destroying the QP) are quiet (fake_quiet): not logged, never failed,
 * as librdmacm's own calls are none of the binding's.
 * rdma_event_str answers "FAKE_CM_EVENT_<n>", NULL for an n outside the
 * enum.  Live kinds: event_channel, cm_id, cm_event (handed out, not
 * acked), addrinfo.
 */
#include "fake.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cm_ev {
	struct rdma_cm_event ev;
	unsigned char pdata[256];
	struct cm_ev *next;
};

struct cm_chan {
	struct rdma_event_channel ch; /* first: the pointer the binding has */
	struct cm_ev *head, *tail;
	struct cm_chan *next_chan;
};

struct cm_id {
	struct rdma_cm_id id; /* first */
	int owns_verbs;
};

static pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cm_chan *cm_chans;
static int cm_ports;
static int cm_req_family = AF_INET; /* fake_cm_set_request_family */

#define CM_ANSWERS 32
static struct {
	char verb[32];
	int event, status, len;
	unsigned char pdata[256];
} cm_answers[CM_ANSWERS];
static int cm_nanswers;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static void cm_add_addr(struct fake_rec *r, const char *key,
			const struct sockaddr *sa)
{
	char buf[INET6_ADDRSTRLEN] = "?";
	const void *a = NULL;
	int port = 0;

	if (sa == NULL) {
		fake_add(r, "%s=0x0", key);
		return;
	}
	if (sa->sa_family == AF_INET) {
		a = &((const struct sockaddr_in *)sa)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	}
	if (a != NULL)
		inet_ntop(sa->sa_family, a, buf, sizeof(buf));
	fake_str(r, key, buf);
	fake_add(r, "%s.port=%d", key, port);
}

static socklen_t cm_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

/* End the record; -1 with errno = err when a failure was injected. */
static int cm_end(struct fake_rec *r, int err)
{
	fake_end(r);
	if (err) {
		fake_set_errno(err);
		return -1;
	}
	return 0;
}

/* Open fake0 as the id's device (the binding wraps it as its Context). */
static int cm_open_verbs(struct cm_id *c)
{
	struct ibv_device **list;
	int n = 0;

	if (c->id.verbs != NULL)
		return 0;
	fake_quiet(1);
	list = ibv_get_device_list(&n);
	c->id.verbs = list && n > 0 ? ibv_open_device(list[0]) : NULL;
	if (list != NULL)
		ibv_free_device_list(list);
	fake_quiet(0);
	if (c->id.verbs == NULL)
		return -1;
	c->owns_verbs = 1;
	return 0;
}

static struct cm_id *cm_new_id(struct rdma_event_channel *ch,
			       enum rdma_port_space ps)
{
	struct cm_id *c = fake_new_obj("cm_id", sizeof(*c));

	if (c == NULL)
		return NULL;
	c->id.channel = ch;
	c->id.ps = ps;
	c->id.qp_type = IBV_QPT_RC;
	c->id.port_num = 1;
	return c;
}

static void cm_free_id(struct cm_id *c)
{
	if (c->owns_verbs) {
		fake_quiet(1);
		ibv_close_device(c->id.verbs);
		fake_quiet(0);
	}
	fake_free_obj("cm_id", c);
}

/* Queue an event of id (NULL: one whose id the binding does not read) on
 * channel ch (cm_lock held). */
static void cm_push(struct cm_chan *ch, struct rdma_cm_id *id, int event,
		    int status, const void *pdata, int len)
{
	struct cm_ev *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (e == NULL)
		return;
	e->ev.id = id;
	/* len < 0: no private data pointer at all; else one, maybe empty */
	e->ev.param.conn.private_data = len < 0 ? NULL : e->pdata;
	if (len < 0)
		len = 0;
	if (len > 255)
		len = 255;
	e->ev.event = (enum rdma_cm_event_type)event;
	e->ev.status = status;
	if (len > 0)
		memcpy(e->pdata, pdata, (size_t)len);
	e->ev.param.conn.private_data_len = (uint8_t)len;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

/* The new id of a CONNECT_REQUEST on channel ch (see the header), or
 * NULL. */
static struct cm_id *cm_new_request(struct rdma_event_channel *ch)
{
	struct cm_id *c;

	c = cm_new_id(ch, RDMA_PS_TCP);
	if (c == NULL)
		return NULL;
	if (cm_open_verbs(c) < 0) {
		cm_free_id(c);
		return NULL;
	}
	if (cm_req_family == AF_INET) {
		struct rdma_addr *a = &c->id.route.addr;

		a->src_sin.sin_family = AF_INET;
		a->src_sin.sin_addr.s_addr = htonl(0xc0000201);
		a->src_sin.sin_port = htons(4420);
		a->dst_sin.sin_family = AF_INET;
		a->dst_sin.sin_addr.s_addr = htonl(0xc0000202);
		a->dst_sin.sin_port = htons(40000);
	} else if (cm_req_family == AF_INET6) {
		struct rdma_addr *a = &c->id.route.addr;

		a->src_sin6.sin6_family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::1", &a->src_sin6.sin6_addr);
		a->src_sin6.sin6_port = htons(4420);
		a->dst_sin6.sin6_family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::2", &a->dst_sin6.sin6_addr);
		a->dst_sin6.sin6_port = htons(40000);
	} else {
		c->id.route.addr.src_addr.sa_family =
			(sa_family_t)cm_req_family;
		c->id.route.addr.dst_addr.sa_family =
			(sa_family_t)cm_req_family;
	}
	return c;
}

/* After a call of verb on id: the armed answers, or the default event. */
static void cm_answer(const char *verb, struct rdma_cm_id *id, int def)
{
	int i, j, any = 0;

	pthread_mutex_lock(&cm_lock);
	for (i = 0; i < cm_nanswers;) {
		if (strcmp(cm_answers[i].verb, verb) != 0) {
			i++;
			continue;
		}
		any = 1;
		if (cm_answers[i].event >= 0) {
			/* a request brings an id of its own */
			struct cm_id *req =
				cm_answers[i].event ==
						RDMA_CM_EVENT_CONNECT_REQUEST ?
					cm_new_request(id->channel) :
					NULL;

			cm_push((struct cm_chan *)id->channel,
				req ? &req->id : id, cm_answers[i].event,
				cm_answers[i].status, cm_answers[i].pdata,
				cm_answers[i].len);
		}
		for (j = i; j + 1 < cm_nanswers; j++)
			cm_answers[j] = cm_answers[j + 1];
		cm_nanswers--;
	}
	if (!any)
		cm_push((struct cm_chan *)id->channel, id, def, 0, NULL, 0);
	pthread_mutex_unlock(&cm_lock);
}

/* ------------------------------------------------------------------ */
/* Channels and ids                                                    */
/* ------------------------------------------------------------------ */

FAKE_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_event_channel");
	struct cm_chan *ch;

	ch = fake_end_new(&r, err, "event_channel", sizeof(*ch));
	if (ch == NULL)
		return NULL;
	ch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_lock(&cm_lock);
	ch->next_chan = cm_chans;
	cm_chans = ch;
	pthread_mutex_unlock(&cm_lock);
	return &ch->ch;
}

FAKE_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_chan *ch = (struct cm_chan *)channel, **pp;
	struct cm_ev *e;

	fake_record_simple("destroy_event_channel", "channel", channel);
	pthread_mutex_lock(&cm_lock);
	for (pp = &cm_chans; *pp != NULL; pp = &(*pp)->next_chan) {
		if (*pp == ch) {
			*pp = ch->next_chan;
			break;
		}
	}
	pthread_mutex_unlock(&cm_lock);
	while ((e = ch->head) != NULL) {
		ch->head = e->next;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			cm_free_id((struct cm_id *)e->ev.id);
		free(e);
	}
	close(ch->ch.fd);
	fake_free_obj("event_channel", ch);
}

FAKE_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			       struct rdma_cm_id **id, void *context,
			       enum rdma_port_space ps)
{
	struct fake_rec r;
	int err = fake_begin(&r, "create_id");
	struct cm_id *c;

	FAKE_P(&r, "channel", channel);
	FAKE_P(&r, "context", context);
	FAKE_I(&r, "ps", ps);
	if (cm_end(&r, err) < 0)
		return -1;
	c = cm_new_id(channel, ps);
	if (c == NULL)
		return -1;
	c->id.context = context;
	*id = &c->id;
	return 0;
}

FAKE_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	int err = fake_record_simple("destroy_id", "id", id);

	if (err) {
		fake_set_errno(err);
		return -1;
	}
	cm_free_id((struct cm_id *)id);
	return 0;
}

FAKE_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
				struct rdma_event_channel *channel)
{
	struct fake_rec r;
	int err = fake_begin(&r, "migrate_id");

	FAKE_P(&r, "id", id);
	FAKE_P(&r, "channel", channel);
	if (cm_end(&r, err) < 0)
		return -1;
	id->channel = channel;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Addresses                                                           */
/* ------------------------------------------------------------------ */

FAKE_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				 const struct rdma_addrinfo *hints,
				 struct rdma_addrinfo **res)
{
	struct fake_rec r;
	int err = fake_begin(&r, "getaddrinfo");
	struct {
		struct rdma_addrinfo ai;
		struct sockaddr_storage sa;
	} * a;
	struct sockaddr_in *sin;
	struct sockaddr_in6 *sin6;
	int port = service ? atoi(service) : 0;

	fake_str(&r, "node", node);
	fake_str(&r, "service", service);
	FAKE_X(&r, "hints.ai_flags", hints ? hints->ai_flags : 0);
	FAKE_I(&r, "hints.ai_port_space", hints ? hints->ai_port_space : 0);
	FAKE_I(&r, "hints.ai_qp_type", hints ? hints->ai_qp_type : 0);
	fake_end(&r);
	if (err > 0) {
		fake_set_errno(err);
		return -1;
	}
	if (err < 0) /* an EAI_* code, errno untouched */
		return err;
	a = fake_new_obj("addrinfo", sizeof(*a));
	if (a == NULL)
		return EAI_MEMORY;
	sin = (struct sockaddr_in *)&a->sa;
	sin6 = (struct sockaddr_in6 *)&a->sa;
	if (node != NULL && inet_pton(AF_INET, node, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		a->ai.ai_family = AF_INET;
	} else if (node != NULL &&
		   inet_pton(AF_INET6, node, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		a->ai.ai_family = AF_INET6;
	} else {
		fake_free_obj("addrinfo", a);
		return EAI_NONAME;
	}
	a->ai.ai_port_space = RDMA_PS_TCP;
	a->ai.ai_qp_type = IBV_QPT_RC;
	if (hints && (hints->ai_flags & RAI_PASSIVE)) {
		a->ai.ai_flags = RAI_PASSIVE;
		a->ai.ai_src_addr = (struct sockaddr *)&a->sa;
		a->ai.ai_src_len = cm_addr_len(a->ai.ai_src_addr);
	} else {
		a->ai.ai_dst_addr = (struct sockaddr *)&a->sa;
		a->ai.ai_dst_len = cm_addr_len(a->ai.ai_dst_addr);
	}
	*res = &a->ai;
	return 0;
}

FAKE_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	fake_record_simple("freeaddrinfo", "res", res);
	fake_free_obj("addrinfo", res);
}

FAKE_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct fake_rec r;
	int err = fake_begin(&r, "bind_addr");
	struct cm_id *c = (struct cm_id *)id;
	struct sockaddr_in *sin = &id->route.addr.src_sin;

	FAKE_P(&r, "id", id);
	cm_add_addr(&r, "addr", addr);
	if (cm_end(&r, err) < 0)
		return -1;
	memcpy(&id->route.addr.src_storage, addr, cm_addr_len(addr));
	if (sin->sin_family == AF_INET && sin->sin_port == 0) {
		pthread_mutex_lock(&cm_lock);
		sin->sin_port = htons((uint16_t)(20000 + ++cm_ports));
		pthread_mutex_unlock(&cm_lock);
	}
	if (!(sin->sin_family == AF_INET &&
	      sin->sin_addr.s_addr == htonl(INADDR_ANY)) &&
	    cm_open_verbs(c) < 0)
		return -1;
	return 0;
}

FAKE_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id,
				  struct sockaddr *src_addr,
				  struct sockaddr *dst_addr, int timeout_ms)
{
	struct fake_rec r;
	int err = fake_begin(&r, "resolve_addr");

	FAKE_P(&r, "id", id);
	cm_add_addr(&r, "src_addr", src_addr);
	cm_add_addr(&r, "dst_addr", dst_addr);
	FAKE_I(&r, "timeout_ms", timeout_ms);
	if (cm_end(&r, err) < 0)
		return -1;
	if (src_addr != NULL)
		memcpy(&id->route.addr.src_storage, src_addr,
		       cm_addr_len(src_addr));
	memcpy(&id->route.addr.dst_storage, dst_addr, cm_addr_len(dst_addr));
	if (cm_open_verbs((struct cm_id *)id) < 0)
		return -1;
	cm_answer("resolve_addr", id, RDMA_CM_EVENT_ADDR_RESOLVED);
	return 0;
}

FAKE_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct fake_rec r;
	int err = fake_begin(&r, "resolve_route");

	FAKE_P(&r, "id", id);
	FAKE_I(&r, "timeout_ms", timeout_ms);
	if (cm_end(&r, err) < 0)
		return -1;
	cm_answer("resolve_route", id, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return 0;
}

/* ------------------------------------------------------------------ */
/* QPs and connections                                                 */
/* ------------------------------------------------------------------ */

FAKE_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_qp_init_attr *qp_init_attr)
{
	struct fake_rec r;
	int err = fake_begin(&r, "rdma_create_qp");

	FAKE_P(&r, "id", id);
	FAKE_P(&r, "pd", pd);
	FAKE_I(&r, "qp_init_attr.qp_type", qp_init_attr->qp_type);
	FAKE_U(&r, "qp_init_attr.cap.max_recv_wr",
	       qp_init_attr->cap.max_recv_wr);
	FAKE_P(&r, "qp_init_attr.srq", qp_init_attr->srq);
	if (cm_end(&r, err) < 0)
		return -1;
	fake_quiet(1);
	id->qp = ibv_create_qp(pd, qp_init_attr);
	fake_quiet(0);
	return id->qp == NULL ? -1 : 0;
}

FAKE_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	fake_record_simple("rdma_destroy_qp", "id", id);
	fake_quiet(1);
	if (id->qp != NULL && ibv_destroy_qp(id->qp) == 0)
		id->qp = NULL;
	fake_quiet(0);
}

static void cm_add_conn_param(struct fake_rec *r,
			      const struct rdma_conn_param *p)
{
	fake_bytes(r, "conn_param.private_data", p->private_data,
		   p->private_data ? p->private_data_len : 0);
	FAKE_U(r, "conn_param.private_data_len", p->private_data_len);
	FAKE_U(r, "conn_param.responder_resources", p->responder_resources);
	FAKE_U(r, "conn_param.initiator_depth", p->initiator_depth);
	FAKE_U(r, "conn_param.retry_count", p->retry_count);
	FAKE_U(r, "conn_param.rnr_retry_count", p->rnr_retry_count);
}

FAKE_EXPORT int rdma_connect(struct rdma_cm_id *id,
			     struct rdma_conn_param *conn_param)
{
	struct fake_rec r;
	int err = fake_begin(&r, "connect");

	FAKE_P(&r, "id", id);
	cm_add_conn_param(&r, conn_param);
	if (cm_end(&r, err) < 0)
		return -1;
	cm_answer("connect", id, RDMA_CM_EVENT_ESTABLISHED);
	return 0;
}

FAKE_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct fake_rec r;
	int err = fake_begin(&r, "listen");

	FAKE_P(&r, "id", id);
	FAKE_I(&r, "backlog", backlog);
	if (cm_end(&r, err) < 0)
		return -1;
	return 0;
}

FAKE_EXPORT int rdma_accept(struct rdma_cm_id *id,
			    struct rdma_conn_param *conn_param)
{
	struct fake_rec r;
	int err = fake_begin(&r, "accept");

	FAKE_P(&r, "id", id);
	cm_add_conn_param(&r, conn_param);
	if (cm_end(&r, err) < 0)
		return -1;
	cm_answer("accept", id, RDMA_CM_EVENT_ESTABLISHED);
	return 0;
}

FAKE_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			    uint8_t private_data_len)
{
	struct fake_rec r;
	int err = fake_begin(&r, "reject");

	FAKE_P(&r, "id", id);
	fake_bytes(&r, "private_data", private_data,
		   private_data ? private_data_len : 0);
	FAKE_U(&r, "private_data_len", private_data_len);
	if (cm_end(&r, err) < 0)
		return -1;
	return 0;
}

FAKE_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	int err = fake_record_simple("disconnect", "id", id);

	if (err) {
		fake_set_errno(err);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

FAKE_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				  struct rdma_cm_event **event)
{
	struct fake_rec r;
	int err = fake_begin(&r, "get_cm_event");
	struct cm_chan *ch = (struct cm_chan *)channel;
	struct cm_ev *e;
	uint64_t v;

	FAKE_P(&r, "channel", channel);
	if (cm_end(&r, err) < 0)
		return -1;
	pthread_mutex_lock(&cm_lock);
	e = ch->head;
	if (e != NULL) {
		ch->head = e->next;
		if (ch->head == NULL)
			ch->tail = NULL;
		if (read(ch->ch.fd, &v, sizeof(v)) != sizeof(v))
			abort();
	}
	pthread_mutex_unlock(&cm_lock);
	if (e == NULL) {
		errno = EAGAIN;
		return -1;
	}
	/* Handed out: counted until rdma_ack_cm_event. */
	*event = fake_new_obj("cm_event", sizeof(**event) + sizeof(e->pdata));
	if (*event == NULL) {
		free(e);
		return -1;
	}
	**event = e->ev;
	memcpy(*event + 1, e->pdata, sizeof(e->pdata));
	if (e->ev.param.conn.private_data != NULL)
		(*event)->param.conn.private_data = *event + 1;
	free(e);
	return 0;
}

FAKE_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	fake_record_simple("ack_cm_event", "event", event);
	fake_free_obj("cm_event", event);
	return 0;
}

FAKE_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static char names[RDMA_CM_EVENT_TIMEWAIT_EXIT + 1][24];
	int n = (int)event;

	if (n < 0 || n > RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return NULL;
	snprintf(names[n], sizeof(names[n]), "FAKE_CM_EVENT_%d", n);
	return names[n];
}

/* ------------------------------------------------------------------ */
/* Controls (ctypes)                                                   */
/* ------------------------------------------------------------------ */

/* Queue an event on the channel whose fd is fd; -1 when there is none.
 * A CONNECT_REQUEST brings a new id (see the header). */
FAKE_EXPORT int fake_cm_queue(int fd, int event, int status, const void *pdata,
			      int len)
{
	struct cm_chan *ch;
	struct cm_id *c;

	pthread_mutex_lock(&cm_lock);
	for (ch = cm_chans; ch != NULL && ch->ch.fd != fd; ch = ch->next_chan)
		;
	pthread_mutex_unlock(&cm_lock);
	if (ch == NULL)
		return -1;
	if (event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		pthread_mutex_lock(&cm_lock);
		cm_push(ch, NULL, event, status, pdata, len);
		pthread_mutex_unlock(&cm_lock);
		return 0;
	}
	c = cm_new_request(&ch->ch);
	if (c == NULL)
		return -1;
	pthread_mutex_lock(&cm_lock);
	cm_push(ch, &c->id, event, status, pdata, len);
	pthread_mutex_unlock(&cm_lock);
	return 0;
}

/* The next call of verb ("resolve_addr", "resolve_route", "connect",
 * "accept") queues this event instead of its success event; several
 * armed for one verb are queued by one call, in order.  event -1: that
 * call queues none.  -1 when the table is full. */
FAKE_EXPORT int fake_cm_answer(const char *verb, int event, int status,
			       const void *pdata, int len)
{
	int rc = -1;

	if (len < 0)
		len = 0;
	if (len > 255)
		len = 255;
	pthread_mutex_lock(&cm_lock);
	if (cm_nanswers < CM_ANSWERS) {
		snprintf(cm_answers[cm_nanswers].verb,
			 sizeof(cm_answers[0].verb), "%s", verb);
		cm_answers[cm_nanswers].event = event;
		cm_answers[cm_nanswers].status = status;
		cm_answers[cm_nanswers].len = len;
		if (len > 0)
			memcpy(cm_answers[cm_nanswers].pdata, pdata,
			       (size_t)len);
		cm_nanswers++;
		rc = 0;
	}
	pthread_mutex_unlock(&cm_lock);
	return rc;
}

/* The address family of the requests fake_cm_queue makes: AF_INET (the
 * default), AF_INET6 (2001:db8::2 port 40000 to 2001:db8::1 port 4420),
 * or any other (AF_IB: the family alone, the rest zero). */
FAKE_EXPORT void fake_cm_set_request_family(int family)
{
	cm_req_family = family;
}

/* Disarm every answer. */
FAKE_EXPORT void fake_cm_answer_clear(void)
{
	pthread_mutex_lock(&cm_lock);
	cm_nanswers = 0;
	pthread_mutex_unlock(&cm_lock);
}
