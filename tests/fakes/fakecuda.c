/*
 * fakecuda.c - a fake libcuda.so.1 for the ibverbs.cuda tests.
 *
 * It implements the handful of CUDA driver calls that ibverbs.cuda makes,
 * over host memory, so that the module can be tested on machines without a
 * GPU.  "Device allocations" are anonymous host mappings made by
 * fake_alloc(); cuMemGetHandleForAddressRange exports a real file
 * descriptor (a memfd of the range's size) and records its arguments.
 *
 * Like the real driver, it exports the versioned names that cuda.h maps
 * the API names to (cuCtxPushCurrent_v2, cuCtxPopCurrent_v2,
 * cuDevicePrimaryCtxRelease_v2, cuMemGetAddressRange_v2), and, unlike the
 * real one, *not* the old unversioned symbols, so a caller resolving the
 * wrong name fails.  Built with -DFAKE_NO_DMABUF it also lacks
 * cuMemGetHandleForAddressRange (a driver older than CUDA 11.7).
 *
 * The fake_* functions are the tests' controls (ctypes).  Not thread-safe:
 * the tests drive it from one thread.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_ctx *CUcontext;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_STUB_LIBRARY = 34,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_NOT_SUPPORTED = 801,
};

/* fake_set_mode() */
enum { MODE_NORMAL = 0, MODE_STUB = 1, MODE_NO_DEVICE = 2 };

#define NDEV 2
#define MAX_ALLOCS 256
#define MAX_EXPORTS 4096
#define MAX_STACK 16

struct fake_ctx {
	int device;
};

struct alloc {
	int used;
	uint64_t base, size; /* the whole mapping (the "allocation") */
	int device;
	unsigned int memtype; /* 1 host (pinned), 2 device */
};

static int mode;
static int initialized;
static int init_calls;
static CUresult export_error, flush_error;
static int ordering[NDEV], flush_options[NDEV];

static struct fake_ctx primary[NDEV] = { { 0 }, { 1 } };
static int primary_refs[NDEV];
static CUcontext stack[MAX_STACK];
static int depth;

static struct alloc allocs[MAX_ALLOCS];

static struct {
	CUdeviceptr ptr;
	uint64_t size;
	int type;
	unsigned long long flags;
	int device; /* device of the current context, or -1 */
} last_export;
static int export_calls;
static struct {
	dev_t dev;
	ino_t ino;
} exports[MAX_EXPORTS];
static int nexports;

static int flush_calls, last_flush_target, last_flush_scope, last_flush_device;

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

#define ENTER()                                            \
	do {                                               \
		if (mode == MODE_STUB)                     \
			return CUDA_ERROR_STUB_LIBRARY;    \
		if (!initialized)                          \
			return CUDA_ERROR_NOT_INITIALIZED; \
	} while (0)

/* ENTER(), then CUDA_ERROR_INVALID_DEVICE unless d is a device ordinal. */
#define ENTER_DEVICE(d)                                   \
	do {                                              \
		ENTER();                                  \
		if ((d) < 0 || (d) >= NDEV)               \
			return CUDA_ERROR_INVALID_DEVICE; \
	} while (0)

static struct alloc *find_alloc(uint64_t p)
{
	for (int i = 0; i < MAX_ALLOCS; i++)
		if (allocs[i].used && p >= allocs[i].base &&
		    p < allocs[i].base + allocs[i].size)
			return &allocs[i];
	return NULL;
}

/* ENTER(), then a = the allocation holding p, or CUDA_ERROR_INVALID_VALUE. */
#define ENTER_ALLOC(a, p)                                \
	do {                                             \
		ENTER();                                 \
		(a) = find_alloc(p);                     \
		if ((a) == NULL)                         \
			return CUDA_ERROR_INVALID_VALUE; \
	} while (0)

static CUcontext current(void)
{
	return depth > 0 ? stack[depth - 1] : NULL;
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

static const struct {
	CUresult code;
	const char *name, *text;
} errors[] = {
	{ 0, "CUDA_SUCCESS", "no error" },
	{ 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ 34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library" },
	{ 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	/* "(fake)" lets the tests tell the driver's text from a fallback */
	{ 801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported (fake)" },
	{ 999, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

/* The errors[] row of ERROR (its name, or with TEXT its text) into *pstr. */
static CUresult error_lookup(CUresult error, const char **pstr, int text)
{
	if (mode == MODE_STUB)
		return CUDA_ERROR_STUB_LIBRARY;
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == error) {
			*pstr = text ? errors[i].text : errors[i].name;
			return CUDA_SUCCESS;
		}
	*pstr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pstr)
{
	return error_lookup(error, pstr, 0);
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pstr)
{
	return error_lookup(error, pstr, 1);
}

/* ------------------------------------------------------------------ */
/* Initialisation, devices, contexts                                   */
/* ------------------------------------------------------------------ */

EXPORT CUresult cuInit(unsigned int flags)
{
	init_calls++;
	if (mode == MODE_STUB)
		return CUDA_ERROR_STUB_LIBRARY;
	if (mode == MODE_NO_DEVICE)
		return CUDA_ERROR_NO_DEVICE;
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	initialized = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
	if (mode == MODE_STUB)
		return CUDA_ERROR_STUB_LIBRARY;
	if (version == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*version = 12040;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	ENTER_DEVICE(ordinal);
	*dev = ordinal;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)
{
	ENTER_DEVICE(dev);
	switch (attrib) {
	case 116: /* GPU_DIRECT_RDMA_SUPPORTED */
	case 124: /* DMA_BUF_SUPPORTED */
		*pi = 1;
		break;
	case 117: /* GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS */
		*pi = flush_options[dev];
		break;
	case 118: /* GPU_DIRECT_RDMA_WRITES_ORDERING */
		*pi = ordering[dev];
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	ENTER();
	*pctx = current();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
	ENTER();
	if (current() == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	*dev = current()->device;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	ENTER_DEVICE(dev);
	primary_refs[dev]++;
	*pctx = &primary[dev];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	ENTER_DEVICE(dev);
	if (primary_refs[dev] <= 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	primary_refs[dev]--;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	ENTER();
	if (ctx == NULL || depth == MAX_STACK)
		return CUDA_ERROR_INVALID_VALUE;
	stack[depth++] = ctx;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	ENTER();
	if (depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	depth--;
	if (pctx != NULL)
		*pctx = stack[depth];
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

/* One attribute's value (n bytes, the attribute's type) into data. */
static CUresult put(void *data, const void *value, size_t n)
{
	memcpy(data, value, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attribute,
				      CUdeviceptr ptr)
{
	struct alloc *a;

	ENTER_ALLOC(a, ptr);
	switch (attribute) {
	case 2: /* MEMORY_TYPE */
		return put(data, &a->memtype, sizeof(unsigned int));
	case 9: /* DEVICE_ORDINAL */
		return put(data, &a->device, sizeof(int));
	case 11: /* RANGE_START_ADDR */
		return put(data, &(CUdeviceptr){ a->base },
			   sizeof(CUdeviceptr));
	case 12: /* RANGE_SIZE */
		return put(data, &(size_t){ a->size }, sizeof(size_t));
	}
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
					CUdeviceptr ptr)
{
	struct alloc *a;

	ENTER_ALLOC(a, ptr);
	if (pbase)
		*pbase = a->base;
	if (psize)
		*psize = a->size;
	return CUDA_SUCCESS;
}

#ifndef FAKE_NO_DMABUF
EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr,
					      size_t size, int handle_type,
					      unsigned long long flags)
{
	struct alloc *a;
	struct stat st;
	uint64_t page = page_size();
	int fd;

	ENTER();
	export_calls++;
	last_export.ptr = dptr;
	last_export.size = size;
	last_export.type = handle_type;
	last_export.flags = flags;
	last_export.device = current() ? current()->device : -1;
	if (export_error)
		return export_error;
	if (current() == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (handle == NULL || handle_type != 1 /* DMA_BUF_FD */ || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* The real driver wants a host-page-aligned range inside one
	 * device allocation. */
	if (size == 0 || dptr % page != 0 || size % page != 0)
		return CUDA_ERROR_INVALID_VALUE;
	a = find_alloc(dptr);
	if (a == NULL || a->memtype != 2 || dptr + size > a->base + a->size)
		return CUDA_ERROR_INVALID_VALUE;
	if (nexports == MAX_EXPORTS)
		return CUDA_ERROR_INVALID_VALUE;
	fd = memfd_create("fakecuda-dmabuf", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (ftruncate(fd, (off_t)size) < 0 || fstat(fd, &st) < 0) {
		close(fd);
		return CUDA_ERROR_INVALID_VALUE;
	}
	exports[nexports].dev = st.st_dev;
	exports[nexports].ino = st.st_ino;
	nexports++;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}
#endif

static int sync_calls;

EXPORT CUresult cuCtxSynchronize(void)
{
	ENTER();
	if (current() == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	sync_calls++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuFlushGPUDirectRDMAWrites(int target, int scope)
{
	ENTER();
	if (current() == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	flush_calls++;
	last_flush_target = target;
	last_flush_scope = scope;
	last_flush_device = current()->device;
	return flush_error;
}

/* ------------------------------------------------------------------ */
/* Test controls                                                       */
/* ------------------------------------------------------------------ */

static uint64_t add_alloc(uint64_t size, int device, uint64_t misalign,
			  unsigned int memtype)
{
	uint64_t page = page_size();
	uint64_t len = (misalign + size + page - 1) / page * page;
	void *p;

	for (int i = 0; i < MAX_ALLOCS; i++) {
		if (allocs[i].used)
			continue;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return 0;
		allocs[i].used = 1;
		allocs[i].base = (uint64_t)(uintptr_t)p;
		allocs[i].size = len;
		allocs[i].device = device;
		allocs[i].memtype = memtype;
		return allocs[i].base + misalign;
	}
	return 0;
}

/* A "device allocation" on device: a host mapping that covers
 * [ptr - misalign, ptr + size) rounded up to whole pages; returns ptr. */
EXPORT uint64_t fake_alloc(uint64_t size, int device, uint64_t misalign)
{
	return add_alloc(size, device, misalign, 2);
}

/* Pinned host memory known to CUDA (cuMemHostAlloc). */
EXPORT uint64_t fake_alloc_host(uint64_t size, int device)
{
	return add_alloc(size, device, 0, 1);
}

EXPORT int fake_free(uint64_t ptr)
{
	struct alloc *a = find_alloc(ptr);

	if (a == NULL)
		return -1;
	munmap((void *)(uintptr_t)a->base, a->size);
	a->used = 0;
	return 0;
}

/* Back to a freshly loaded driver: not initialised, no current context,
 * default attributes, counters zeroed.  Allocations stay. */
EXPORT void fake_reset(void)
{
	mode = MODE_NORMAL;
	initialized = 0;
	init_calls = 0;
	export_error = flush_error = 0;
	for (int i = 0; i < NDEV; i++) {
		ordering[i] = 100; /* OWNER: what recent GPUs report */
		flush_options[i] = 3; /* HOST | MEMOPS */
		primary_refs[i] = 0;
	}
	depth = 0;
	memset(&last_export, 0, sizeof(last_export));
	export_calls = 0;
	flush_calls = 0;
	sync_calls = 0;
	last_flush_target = last_flush_scope = last_flush_device = -1;
}

EXPORT void fake_set_mode(int m)
{
	mode = m;
}
EXPORT void fake_set_export_error(int code)
{
	export_error = code;
}
EXPORT void fake_set_flush_error(int code)
{
	flush_error = code;
}

EXPORT void fake_set_gpudirect(int dev, int writes_ordering, int options)
{
	ordering[dev] = writes_ordering;
	flush_options[dev] = options;
}

/* Make device's primary context the only current one (-1: none). */
EXPORT void fake_set_current(int dev)
{
	depth = 0;
	if (dev >= 0)
		stack[depth++] = &primary[dev];
}

EXPORT int fake_current_device(void)
{
	return current() ? current()->device : -1;
}

EXPORT int fake_ctx_depth(void)
{
	return depth;
}
EXPORT int fake_primary_refs(int dev)
{
	return primary_refs[dev];
}
EXPORT int fake_init_calls(void)
{
	return init_calls;
}
EXPORT int fake_export_calls(void)
{
	return export_calls;
}
EXPORT int fake_flush_calls(void)
{
	return flush_calls;
}
EXPORT int fake_sync_calls(void)
{
	return sync_calls;
}

EXPORT void fake_last_export(uint64_t *ptr, uint64_t *size, int *type,
			     uint64_t *flags, int *device)
{
	*ptr = last_export.ptr;
	*size = last_export.size;
	*type = last_export.type;
	*flags = last_export.flags;
	*device = last_export.device;
}

EXPORT void fake_last_flush(int *target, int *scope, int *device)
{
	*target = last_flush_target;
	*scope = last_flush_scope;
	*device = last_flush_device;
}

/* How many file descriptors of this process refer to a dma-buf that
 * cuMemGetHandleForAddressRange exported (by inode, so a reused fd
 * number is not mistaken for a leak). */
EXPORT int fake_open_exports(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	struct stat st;
	int n = 0, dfd;

	if (d == NULL)
		return -1;
	dfd = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dfd || fstat(fd, &st) < 0)
			continue;
		for (int i = 0; i < nexports; i++)
			if (exports[i].dev == st.st_dev &&
			    exports[i].ino == st.st_ino) {
				n++;
				break;
			}
	}
	closedir(d);
	return n;
}
