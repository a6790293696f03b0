/*
 * core.c - the recording double's core: the call log, failure injection,
 * live-object counts, and the control functions the tests call through
 * ctypes (fake_*).  The verbs themselves are in the family files.
 */
#include "fake.h"

#include <stdio.h>

/* ------------------------------------------------------------------ */
/* The log: one line per call, appended under one lock                 */
/* ------------------------------------------------------------------ */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_buf;
static size_t log_len, log_cap;
static int recording_on = 1;

int fake_recording(void)
{
	return __atomic_load_n(&recording_on, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Failure injection                                                   */
/* ------------------------------------------------------------------ */

#define FAIL_SLOTS 64

struct fail_slot {
	char verb[64];
	int err;
	int count; /* calls left to fail; < 0: every call */
	int skip; /* calls to let through before the first failure */
};

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fail_slot fails[FAIL_SLOTS];
static int fails_armed; /* slots in use: the fast path reads only this */

int fake_take_failure(const char *verb)
{
	int i, err = 0;

	if (__atomic_load_n(&fails_armed, __ATOMIC_ACQUIRE) == 0)
		return 0;
	pthread_mutex_lock(&fail_lock);
	for (i = 0; i < FAIL_SLOTS; i++) {
		struct fail_slot *f = &fails[i];

		if (f->count == 0 || strcmp(f->verb, verb) != 0)
			continue;
		if (f->skip > 0) {
			f->skip--;
			break;
		}
		err = f->err;
		if (f->count > 0 && --f->count == 0)
			__atomic_sub_fetch(&fails_armed, 1, __ATOMIC_RELEASE);
		break;
	}
	pthread_mutex_unlock(&fail_lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

/* fake_quiet: the calls a double makes itself (cm.c's librdmacm opening
 * its device) are neither logged nor failed. */
static __thread int quiet;

void fake_quiet(int on)
{
	quiet = on;
}

int fake_begin(struct fake_rec *r, const char *verb)
{
	int err = quiet ? 0 : fake_take_failure(verb);

	r->on = quiet ? 0 : fake_recording();
	r->no_errno = err == FAKE_NO_ERRNO;
	r->len = 0;
	r->truncated = 0;
	if (r->on) {
		int n = snprintf(r->buf, sizeof(r->buf), "%s", verb);

		r->len = (size_t)n < sizeof(r->buf) ? (size_t)n : 0;
		if (err)
			fake_add(r, "injected_errno=%d", err);
	}
	return err;
}

static void rec_vadd(struct fake_rec *r, const char *fmt, va_list ap)
{
	size_t room = sizeof(r->buf) - r->len;
	int n;

	if (room < 2) {
		r->truncated = 1;
		return;
	}
	r->buf[r->len] = ' ';
	n = vsnprintf(r->buf + r->len + 1, room - 1, fmt, ap);
	if (n < 0 || (size_t)n >= room - 1) {
		r->buf[r->len] = '\0';
		r->truncated = 1;
		return;
	}
	r->len += (size_t)n + 1;
}

void fake_add(struct fake_rec *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->on)
		return;
	va_start(ap, fmt);
	rec_vadd(r, fmt, ap);
	va_end(ap);
}

void fake_bytes(struct fake_rec *r, const char *key, const void *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = p;
	char out[1024];
	size_t i;

	if (!r->on)
		return;
	if (len * 2 >= sizeof(out)) {
		r->truncated = 1;
		len = sizeof(out) / 2 - 1;
	}
	for (i = 0; i < len; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * len] = '\0';
	fake_add(r, "%s=b:%s", key, out);
}

void fake_str(struct fake_rec *r, const char *key, const char *s)
{
	char out[512];
	size_t o = 0;

	if (!r->on)
		return;
	if (s == NULL) {
		fake_add(r, "%s=0x0", key);
		return;
	}
	for (; *s && o + 4 < sizeof(out); s++) {
		if (*s == ' ' || *s == '%' || *s == '\n') {
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      "%%%02x", (unsigned char)*s);
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
	fake_add(r, "%s=s:%s", key, out);
}

static void rec_append(struct fake_rec *r)
{
	size_t need;

	if (!r->on)
		return;
	if (r->truncated)
		fake_add(r, "truncated=1");
	need = r->len + 1;
	pthread_mutex_lock(&log_lock);
	if (log_len + need + 1 > log_cap) {
		size_t cap = log_cap ? log_cap : 65536;
		char *nb;

		while (log_len + need + 1 > cap)
			cap *= 2;
		nb = realloc(log_buf, cap);
		if (nb == NULL) {
			pthread_mutex_unlock(&log_lock);
			return;
		}
		log_buf = nb;
		log_cap = cap;
	}
	memcpy(log_buf + log_len, r->buf, r->len);
	log_buf[log_len + r->len] = '\n';
	log_len += need;
	log_buf[log_len] = '\0';
	pthread_mutex_unlock(&log_lock);
}

void fake_end(struct fake_rec *r)
{
	rec_append(r);
	if (r->no_errno) /* no errno from the logging leaks into the answer */
		errno = 0;
}

int fake_record_simple(const char *verb, const char *key, const void *obj)
{
	struct fake_rec r;
	int err = fake_begin(&r, verb);

	FAKE_P(&r, key, obj);
	fake_end(&r);
	return err;
}

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

#define KIND_SLOTS 64

static pthread_mutex_t kind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const char *kind; /* a string literal of the family file */
	long live;
	void *last; /* the newest live object of the kind (fake_last_obj) */
} kinds[KIND_SLOTS];
static long live_total;

static void kind_count(const char *kind, long delta, void *p)
{
	int i;

	pthread_mutex_lock(&kind_lock);
	for (i = 0; i < KIND_SLOTS; i++) {
		if (kinds[i].kind == NULL)
			kinds[i].kind = kind;
		if (strcmp(kinds[i].kind, kind) == 0) {
			kinds[i].live += delta;
			if (delta > 0)
				kinds[i].last = p;
			else if (kinds[i].last == p)
				kinds[i].last = NULL;
			break;
		}
	}
	live_total += delta;
	pthread_mutex_unlock(&kind_lock);
}

void *fake_new_obj(const char *kind, size_t size)
{
	void *p = calloc(1, size);

	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	kind_count(kind, 1, p);
	return p;
}

void fake_free_obj(const char *kind, void *p)
{
	if (p == NULL)
		return;
	kind_count(kind, -1, p);
	free(p);
}

void *fake_last_obj(const char *kind)
{
	void *p = NULL;
	int i;

	pthread_mutex_lock(&kind_lock);
	for (i = 0; i < KIND_SLOTS && kinds[i].kind != NULL; i++) {
		if (strcmp(kinds[i].kind, kind) == 0) {
			p = kinds[i].last;
			break;
		}
	}
	pthread_mutex_unlock(&kind_lock);
	return p;
}

void *fake_new_unless(int err, const char *kind, size_t size)
{
	if (err) {
		fake_set_errno(err);
		return NULL;
	}
	return fake_new_obj(kind, size);
}

void *fake_end_new(struct fake_rec *r, int err, const char *kind, size_t size)
{
	fake_end(r);
	return fake_new_unless(err, kind, size);
}

int fake_destroy_simple(const char *verb, const char *key, const char *kind,
			void *obj)
{
	int err = fake_record_simple(verb, key, obj);

	if (!err)
		fake_free_obj(kind, obj);
	return err;
}

static uint32_t next_id = 0x100;

uint32_t fake_next_id(void)
{
	uint32_t id;

	do
		id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED) &
		     0xffffff;
	while (id == 0);
	return id;
}

/* ------------------------------------------------------------------ */
/* Context ops registered by the families                              */
/* ------------------------------------------------------------------ */

#define OPS_SLOTS 32

static fake_ops_fn ops_fns[OPS_SLOTS];
static int ops_count;

void fake_register_ops(fake_ops_fn fn)
{
	/* Constructors run one at a time, before anyone can call a verb. */
	if (ops_count < OPS_SLOTS)
		ops_fns[ops_count++] = fn;
	else
		abort();
}

void fake_run_ops(struct fake_context *fc);
void fake_run_ops(struct fake_context *fc)
{
	int i;

	for (i = 0; i < ops_count; i++)
		ops_fns[i](fc);
}

/* ------------------------------------------------------------------ */
/* Controls (ctypes)                                                   */
/* ------------------------------------------------------------------ */

/* Bytes of log text now held (without the final NUL). */
FAKE_EXPORT size_t fake_log_size(void)
{
	size_t n;

	pthread_mutex_lock(&log_lock);
	n = log_len;
	pthread_mutex_unlock(&log_lock);
	return n;
}

/* Copy up to n-1 bytes of the log into buf, NUL-terminated; returns the
 * bytes copied. */
FAKE_EXPORT size_t fake_log_read(char *buf, size_t n)
{
	size_t k;

	if (n == 0)
		return 0;
	pthread_mutex_lock(&log_lock);
	k = log_len < n - 1 ? log_len : n - 1;
	if (k)
		memcpy(buf, log_buf, k);
	buf[k] = '\0';
	pthread_mutex_unlock(&log_lock);
	return k;
}

/* Empty the log. */
FAKE_EXPORT void fake_clear(void)
{
	pthread_mutex_lock(&log_lock);
	log_len = 0;
	if (log_buf)
		log_buf[0] = '\0';
	pthread_mutex_unlock(&log_lock);
}

/* Record calls (1, the default) or not (0: the data path then takes no
 * global lock at all). */
FAKE_EXPORT void fake_set_recording(int on)
{
	__atomic_store_n(&recording_on, on ? 1 : 0, __ATOMIC_RELAXED);
}

/* Arm a slot: after `skip` calls of verb go through, the next `count`
 * fail with err (count < 0: every call); replaces the verb's slot. */
static int fail_arm(const char *verb, int err, int count, int skip)
{
	int i, free_slot = -1, rc = 0;

	pthread_mutex_lock(&fail_lock);
	for (i = 0; i < FAIL_SLOTS; i++) {
		if (fails[i].count != 0 && strcmp(fails[i].verb, verb) == 0) {
			fails[i].count = 0;
			__atomic_sub_fetch(&fails_armed, 1, __ATOMIC_RELEASE);
		}
		if (free_slot < 0 && fails[i].count == 0)
			free_slot = i;
	}
	if (err != 0 && count != 0) {
		if (free_slot < 0) {
			rc = -1;
		} else {
			snprintf(fails[free_slot].verb,
				 sizeof(fails[free_slot].verb), "%s", verb);
			fails[free_slot].err = err;
			fails[free_slot].count = count;
			fails[free_slot].skip = skip;
			__atomic_add_fetch(&fails_armed, 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&fail_lock);
	return rc;
}

/* Make the next `count` calls of verb (its log name, "alloc_pd") fail
 * with errno err (FAKE_NO_ERRNO: fail without errno, fake.h); count < 0:
 * every call until fake_fail_clear().  A second fake_fail for the same
 * verb replaces the first; err 0 disarms.
 * Returns 0, or -1 when all slots are taken. */
FAKE_EXPORT int fake_fail(const char *verb, int err, int count)
{
	return fail_arm(verb, err, count, 0);
}

/* Make only the (skip + 1)-th next call of verb fail with err: the
 * failure injection suite fails each call of a method in turn. */
FAKE_EXPORT int fake_fail_nth(const char *verb, int err, int skip)
{
	return fail_arm(verb, err, 1, skip < 0 ? 0 : skip);
}

/* Disarm every injected failure. */
FAKE_EXPORT void fake_fail_clear(void)
{
	pthread_mutex_lock(&fail_lock);
	memset(fails, 0, sizeof(fails));
	__atomic_store_n(&fails_armed, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fail_lock);
}

/* Objects created and not yet destroyed, all kinds together. */
FAKE_EXPORT long fake_live(void)
{
	long n;

	pthread_mutex_lock(&kind_lock);
	n = live_total;
	pthread_mutex_unlock(&kind_lock);
	return n;
}

/* "kind=n kind=n" for each kind with live objects, into buf (n bytes). */
FAKE_EXPORT void fake_live_report(char *buf, size_t n)
{
	size_t o = 0;
	int i;

	if (n == 0)
		return;
	buf[0] = '\0';
	pthread_mutex_lock(&kind_lock);
	for (i = 0; i < KIND_SLOTS && kinds[i].kind; i++) {
		int k;

		if (kinds[i].live == 0)
			continue;
		k = snprintf(buf + o, n - o, "%s%s=%ld", o ? " " : "",
			     kinds[i].kind, kinds[i].live);
		if (k < 0 || (size_t)k >= n - o)
			break;
		o += (size_t)k;
	}
	pthread_mutex_unlock(&kind_lock);
}
