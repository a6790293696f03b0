/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glibc_floor.h - bind the few glibc symbols whose default version is newer
 * than glibc 2.17 to their oldest version, so that one wheel loads on
 * glibc 2.17 (manylinux2014) and newer.
 *
 * Force-included (gcc -include) in every C file by setup.py when
 * IBVERBS_GLIBC_FLOOR=1 (make wheel sets it); a plain build ignores it.
 * What the extension references, by `objdump -T` of a plain build on
 * Debian 12 (glibc 2.36): dlopen, dlsym, dlerror, dladdr and dlclose at
 * GLIBC_2.34 (they moved from libdl into libc), fcntl64 at GLIBC_2.28
 * (fcntl under _FILE_OFFSET_BITS=64, which pyconfig.h defines); all
 * others at 2.17 or older.  glibc keeps every old version as a
 * compatibility symbol, so the linker binds these references to it.
 * Before 2.34 the dl functions lived in libdl.so.2: setup.py links
 * -l:libdl.so.2 (still shipped, as a stub, by newer glibc) so that an
 * old glibc loads it; the dynamic linker matches a version by name, in
 * whichever loaded object defines it.  On a 64-bit ABI fcntl and
 * fcntl64 are one function (off_t is 64 bits).
 */
#ifndef IBVERBS_GLIBC_FLOOR_H
#define IBVERBS_GLIBC_FLOOR_H

#if defined(__x86_64__)
#define IBVERBS_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define IBVERBS_GLIBC_BASE "GLIBC_2.17"
#else
#error "glibc_floor.h: no base glibc version known for this architecture"
#endif

#define IBVERBS_SYMVER(ref, sym) \
	__asm__(".symver " #ref "," #sym "@" IBVERBS_GLIBC_BASE)

IBVERBS_SYMVER(dlopen, dlopen);
IBVERBS_SYMVER(dlsym, dlsym);
IBVERBS_SYMVER(dlerror, dlerror);
IBVERBS_SYMVER(dladdr, dladdr);
IBVERBS_SYMVER(dlclose, dlclose);
IBVERBS_SYMVER(fcntl64, fcntl);

#undef IBVERBS_SYMVER

#endif /* IBVERBS_GLIBC_FLOOR_H */
