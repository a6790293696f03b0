/*
 * core.c - the fake libmlx5's log, failure injection and the link to the
 * recording double (test-only; fake_mlx5.h says what the fake is).
 */
#include "fake_mlx5.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* The calls so far of the verb of each "verb=errno@nth" entry. */
#define M5_FAIL_MAX 32
static unsigned m5_calls[M5_FAIL_MAX];

int m5_begin(struct m5rec *r, const char *verb)
{
	const char *fail = getenv("IBVERBS_FAKE_MLX5_FAIL");
	size_t n = strlen(verb);
	int i = 0;

	r->len = (size_t)snprintf(r->buf, sizeof(r->buf), "%s", verb);
	/* "verb=errno,verb=errno@nth": every call, or only the nth (1 on) */
	while (fail != NULL && *fail) {
		const char *eq = strchr(fail, '=');
		const char *end, *at;

		if (eq == NULL)
			break;
		end = strchr(eq, ',');
		at = strchr(eq, '@');
		if (at != NULL && end != NULL && at > end)
			at = NULL;
		if ((size_t)(eq - fail) == n && strncmp(fail, verb, n) == 0) {
			int err = atoi(eq + 1);

			if (at != NULL &&
			    (i >= M5_FAIL_MAX ||
			     __atomic_add_fetch(&m5_calls[i], 1,
						__ATOMIC_RELAXED) !=
				     (unsigned)atoi(at + 1)))
				return 0;
			m5_add(r, "injected_errno=%d", err);
			return err;
		}
		fail = end != NULL ? end + 1 : NULL;
		i++;
	}
	return 0;
}

void m5_add(struct m5rec *r, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (r->len + 2 >= sizeof(r->buf))
		return;
	r->buf[r->len++] = ' ';
	va_start(ap, fmt);
	k = vsnprintf(r->buf + r->len, sizeof(r->buf) - r->len, fmt, ap);
	va_end(ap);
	if (k > 0)
		r->len += (size_t)k;
	if (r->len >= sizeof(r->buf))
		r->len = sizeof(r->buf) - 1;
}

void m5_bytes(struct m5rec *r, const char *key, const void *p, size_t n)
{
	const unsigned char *b = p;
	char hex[4096];
	size_t i;

	if (2 * n + 1 > sizeof(hex))
		n = (sizeof(hex) - 1) / 2;
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
	hex[2 * n] = '\0';
	m5_add(r, "%s=b:%s", key, hex);
}

void m5_str(struct m5rec *r, const char *key, const char *s)
{
	char out[1024];
	size_t o = 0;

	for (; *s && o + 4 < sizeof(out); s++) {
		if (*s == ' ' || *s == '%' || *s == '\n')
			o += (size_t)snprintf(out + o, 4, "%%%02x",
					      (unsigned char)*s);
		else
			out[o++] = *s;
	}
	out[o] = '\0';
	m5_add(r, "%s=s:%s", key, out);
}

void m5_end(struct m5rec *r)
{
	const char *path = getenv("IBVERBS_FAKE_MLX5_LOG");
	int fd;

	if (path == NULL || !*path)
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	r->buf[r->len++] = '\n';
	/* One write of the whole line: lines of threads never mix. */
	if (write(fd, r->buf, r->len) < 0)
		r->len--;
	close(fd);
}

int m5_free_rec(const char *verb, const char *idfmt, unsigned long long id,
		void *obj)
{
	struct m5rec r;
	int err = m5_begin(&r, verb);

	m5_add(&r, idfmt, id);
	m5_end(&r);
	if (err)
		return err;
	free(obj);
	return 0;
}

int m5_unsupported(const char *name)
{
	const char *list = getenv("IBVERBS_FAKE_MLX5_UNSUPPORTED");
	size_t n = strlen(name);

	while (list != NULL && *list) {
		const char *end = strchr(list, ',');
		size_t k = end ? (size_t)(end - list) : strlen(list);

		if (k == n && strncmp(list, name, n) == 0)
			return 1;
		list = end ? end + 1 : NULL;
	}
	return 0;
}

void *m5_ibv(const char *sym)
{
	static void *lib;
	const char *path = getenv("IBVERBS_LIBIBVERBS");

	if (lib == NULL)
		lib = dlopen(path && *path ? path : "libibverbs.so.1",
			     RTLD_NOW | RTLD_NOLOAD);
	return lib ? dlsym(lib, sym) : NULL;
}
