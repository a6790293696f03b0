"""Build the C core as one abi3 extension against the CPython Limited API.

The extension includes the rdma-core headers but does not link
libibverbs: it dlopens libibverbs.so.1 at import (core/loader.c).

This file is the one place that names the extension's compiler flags.
Tools that build it another way go through it (tools/devbuild, and so
tools/sanitize, benchmarks/prepare.py: ``setup.py build_ext`` with
IBVERBS_EXTRA_CFLAGS / IBVERBS_EXTRA_LDFLAGS added; tools/coverage:
IBVERBS_INSTRUMENT, the named instrumented builds of INSTRUMENTS), or
import CFLAGS and DEFINES from it: importing this file builds nothing.

Build-time defines that tools pass in IBVERBS_EXTRA_CFLAGS:
  -DIBVERBS_BENCH_RELEASE_GIL  release the GIL around ibv_post_send,
      ibv_post_recv and ibv_poll_cq (benchmarks/prepare.py's second
      variant, for the GIL measurement only; never shipped).
"""

import glob
import os
import shlex
import subprocess
import sysconfig

# Added to the interpreter's own flags (optimisation, -fPIC, ...).
CFLAGS = [
    "-std=gnu11",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
    "-fvisibility=hidden",
]
DEFINES = [("Py_LIMITED_API", "0x03090000")]
# A free-threaded interpreter (3.13t, 3.14t: sysconfig's Py_GIL_DISABLED)
# has no Limited API to build against (up to 3.14): there the extension is
# built for that one interpreter (a cp3XY-cp3XYt wheel) with the full API,
# and the code compiled under #ifdef Py_GIL_DISABLED guards what the GIL
# used to (core/handle.c).
FREETHREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
if FREETHREADED:
    DEFINES = []
# The C core: every *.c below it, in family folders (its README.md); the
# files include its headers by their path from here ("qp/qp.h").
C_ROOT = "src/ibverbs/_ibverbs"


# Every verb, struct member, enum member and flag newer than rdma-core 33
# (Debian 11's; the oldest headers supported) that the C code uses, in one
# table: (C expression that compiles only when <infiniband/verbs.h> has
# it, the define the C code tests, the rdma-core release that added it).
# The C code names that release in the VerbsError(EOPNOTSUPP) a missing
# feature raises.  tests/host/test_rdma_core_headers.py builds against
# rdma-core 33's and the newest headers.
PROBES = [
    # exported verbs: without the declaration, compat.h declares them and
    # the loader still finds them in a newer libibverbs at run time
    ("&ibv_reg_dmabuf_mr", "IBVERBS_HAVE_REG_DMABUF_MR", 34),
    ("&ibv_is_fork_initialized", "IBVERBS_HAVE_IS_FORK_INITIALIZED", 35),
    ("&ibv_query_qp_data_in_order", "IBVERBS_HAVE_QUERY_QP_DATA_IN_ORDER", 41),
    # struct ibv_dm's handle (mem/dm.c), with ibv_import_dm
    ("sizeof(((struct ibv_dm *)0)->handle)", "IBVERBS_HAVE_DM_HANDLE", 35),
    # struct ibv_device_attr_ex's 32-bit port count (device/device_ex.c)
    (
        "sizeof(((struct ibv_device_attr_ex *)0)->phys_port_cnt_ex)",
        "IBVERBS_HAVE_PHYS_PORT_CNT_EX",
        36,
    ),
    # atomic write: IBV_WR_ATOMIC_WRITE (wr/wr.c, core/enums.c), the
    # send-ops bit and struct ibv_qp_ex's wr_atomic_write (qp/qp_ex.c)
    (
        "IBV_WR_ATOMIC_WRITE + IBV_QP_EX_WITH_ATOMIC_WRITE"
        " + sizeof(((struct ibv_qp_ex *)0)->wr_atomic_write)",
        "IBVERBS_HAVE_WR_ATOMIC_WRITE",
        42,
    ),
    # ibv_query_qp_data_in_order's flags and caps (core/enums.c)
    (
        "IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS + IBV_QUERY_QP_DATA_IN_ORDER_WHOLE_MSG"
        " + IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES",
        "IBVERBS_HAVE_QP_DATA_IN_ORDER_CAPS",
        47,
    ),
    ("IBV_QUERY_QP_DATA_IN_ORDER_DEVICE_ONLY", "IBVERBS_HAVE_QP_DATA_IN_ORDER_DEVICE_ONLY", 61),
    # enum ibv_access_flags' flush bits (core/enums.c)
    ("IBV_ACCESS_FLUSH_GLOBAL", "IBVERBS_HAVE_ACCESS_FLUSH", 45),
    # ibv_wr_flush, struct ibv_qp_ex's wr_flush (qp/qp_ex.c) and
    # IBV_WR_FLUSH/IBV_WC_FLUSH came together
    (
        "IBV_QP_EX_WITH_FLUSH + sizeof(((struct ibv_qp_ex *)0)->wr_flush)",
        "IBVERBS_HAVE_WR_FLUSH",
        45,
    ),
    # memory, import and device verbs (mem/, device/import.c)
    ("&ibv_import_dm", "IBVERBS_HAVE_IMPORT_DM", 35),
    ("&ibv_reg_mr_ex", "IBVERBS_HAVE_REG_MR_EX", 59),
    ("(&ibv_dm_export_dmabuf_fd, &ibv_query_port_speed)", "IBVERBS_HAVE_QUERY_PORT_SPEED", 62),
    ("(&ibv_alloc_buf, IBV_REG_MR_MASK_BUF)", "IBVERBS_HAVE_ALLOC_BUF", 64),
    ("&ibv_export_buf_dmabuf_fd", "IBVERBS_HAVE_EXPORT_BUF_DMABUF_FD", 65),
    # completion counters (counters/comp_cntr.c): exported verbs, their
    # structs and enums; compat.h declares them for older headers
    (
        "sizeof(&ibv_create_comp_cntr) + sizeof(struct ibv_comp_cntr_caps)",
        "IBVERBS_HAVE_COMP_CNTR",
        65,
    ),
]


# mlx5dv.h (src/ibverbs/_ibverbs/mlx5/): what each release added to the
# structs the mlx5 files mirror (their _Static_asserts check the mirror
# against the header where it has the field); probed after including
# <infiniband/mlx5dv.h>.
MLX5_PROBES = [
    (
        "MLX5DV_CONTEXT_MASK_DCI_STREAMS + MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD"
        " + MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS",
        "IBVERBS_HAVE_MLX5DV_DCI_STREAMS",
        37,
    ),
    ("MLX5DV_CONTEXT_MASK_MAX_DC_RD_ATOM", "IBVERBS_HAVE_MLX5DV_MAX_DC_RD_ATOM", 47),
    ("MLX5DV_CONTEXT_MASK_REG_C0", "IBVERBS_HAVE_MLX5DV_REG_C0", 50),
    # mlx5/devx.c: struct mlx5dv_devx_umem_in with dmabuf_fd
    ("MLX5DV_UMEM_MASK_DMABUF", "IBVERBS_HAVE_MLX5DV_UMEM_DMABUF", 37),
    (
        "MLX5DV_CONTEXT_MASK_OOO_RECV_WRS + MLX5DV_QP_CREATE_OOO_DP",
        "IBVERBS_HAVE_MLX5DV_OOO",
        55,
    ),
]


def _cc():
    return shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")


def header_has(expr, extra, header="infiniband/verbs.h"):
    """Does ``expr`` compile after ``#include <header>``, with
    the include flags this build uses (CPPFLAGS, then IBVERBS_EXTRA_CFLAGS)?"""
    src = f"#include <{header}>\nvoid ibverbs_probe(void) {{ (void)({expr}); }}\n"
    flags = shlex.split(os.environ.get("CPPFLAGS", "")) + list(extra)
    try:
        r = subprocess.run(
            _cc() + ["-fsyntax-only", "-Werror", "-x", "c", "-"] + flags,
            input=src.encode(),
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def build_jobs():
    """How many compilers run at once: IBVERBS_BUILD_JOBS, or one per CPU."""
    try:
        return max(1, int(os.environ.get("IBVERBS_BUILD_JOBS", "")))
    except ValueError:
        return os.cpu_count() or 1


def probed_defines(extra):
    """The defines of PROBES whose feature the headers have (the probes,
    one compiler each, run side by side)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(build_jobs()) as pool:
        found = list(pool.map(lambda probe: header_has(probe[0], extra), PROBES))
        mlx5 = list(
            pool.map(lambda probe: header_has(probe[0], extra, "infiniband/mlx5dv.h"), MLX5_PROBES)
        )
    return [(define, "1") for (_, define, _), ok in zip(PROBES, found) if ok] + [
        (define, "1") for (_, define, _), ok in zip(MLX5_PROBES, mlx5) if ok
    ]


# make wheel sets IBVERBS_GLIBC_FLOOR=1: the extension then loads on glibc
# 2.17 (manylinux2014) and newer, x86_64 and aarch64 alike.  The method is
# symbol-version pinning (glibc_floor.h, force-included): a plain build on
# Debian 12 references only seven symbols newer than 2.17 (dlopen & co. at
# 2.34, fcntl64 at 2.28) and glibc keeps each old version, so seven .symver
# lines and -l:libdl.so.2 (where dlopen lived before 2.34) do it with the
# distribution's own gcc, native or cross (aarch64-linux-gnu-gcc), and the
# headers the build already uses.  A compiler with its own old glibc (zig
# cc) would bring a second libc's headers beside rdma-core's and Python's
# and a 45 MB download, for the same file.  auditwheel show / repair then
# finds the manylinux2014 tag in the file; tests/host/test_wheel.py checks.
GLIBC_FLOOR_HEADER = f"{C_ROOT}/glibc_floor.h"


def glibc_floor_flags():
    if os.environ.get("IBVERBS_GLIBC_FLOOR", "") in ("", "0"):
        return [], []
    header = os.path.abspath(GLIBC_FLOOR_HEADER)
    return ["-include", header], ["-Wl,--no-as-needed", "-l:libdl.so.2"]


# Instrumented builds, chosen by IBVERBS_INSTRUMENT=NAME: the compiler and
# linker flags each one adds after the interpreter's own (so its -O0 wins
# over their -O2).  Such a build never goes into .venv or a wheel: its
# tool builds it apart (tools/devbuild OUT) and imports it with PYTHONPATH.
#   coverage  gcc's line, branch and function counters (make coverage,
#             tools/coverage): each process that loads the module adds to
#             a .gcda file beside each object at exit, or under
#             GCOV_PREFIX; -O0 keeps every line its own.
#   fuzz      clang's ASan + UBSan and libFuzzer's coverage counters
#             (fuzzer-no-link: the fuzzer, atheris, brings libFuzzer and
#             the sanitizer runtimes, preloaded; tools/fuzz, CC=clang).
#             Not -fsanitize=function (C since clang 17): atheris 3.0.0's
#             runtime has no handler for it.
# A new kind of build is one more entry here and one more tool that
# builds it with tools/devbuild.
_FUZZ_SAN = "-fsanitize=address,undefined,fuzzer-no-link"
INSTRUMENTS = {
    "coverage": (["--coverage", "-O0", "-g"], ["--coverage"]),
    "fuzz": (
        [_FUZZ_SAN, "-fno-sanitize=function", "-fno-sanitize-recover=all"]
        + ["-fno-omit-frame-pointer", "-g", "-O1"],
        [_FUZZ_SAN],
    ),
}


def instrument_flags():
    """IBVERBS_INSTRUMENT's (compile flags, link flags); none when unset."""
    name = os.environ.get("IBVERBS_INSTRUMENT", "")
    if not name:
        return [], []
    if name not in INSTRUMENTS:
        raise SystemExit(
            f"IBVERBS_INSTRUMENT={name!r}: not one of {', '.join(sorted(INSTRUMENTS))}"
        )
    cflags, ldflags = INSTRUMENTS[name]
    return list(cflags), list(ldflags)


def extension():
    from setuptools import Extension

    inst_cflags, inst_ldflags = instrument_flags()
    extra = inst_cflags + os.environ.get("IBVERBS_EXTRA_CFLAGS", "").split()
    extra_link = inst_ldflags + os.environ.get("IBVERBS_EXTRA_LDFLAGS", "").split()
    floor_cflags, floor_ldflags = glibc_floor_flags()
    return Extension(
        "ibverbs._ibverbs",
        sources=sorted(glob.glob(f"{C_ROOT}/**/*.c", recursive=True)),
        depends=sorted(glob.glob(f"{C_ROOT}/**/*.h", recursive=True)),
        include_dirs=[C_ROOT],
        define_macros=DEFINES + probed_defines(extra),
        py_limited_api=not FREETHREADED,
        extra_compile_args=CFLAGS + extra + floor_cflags,
        extra_link_args=extra_link + floor_ldflags,
        # No libraries=["ibverbs"]: every exported verb is resolved with dlsym.
    )


def build_ext_class():
    """setuptools' build_ext, compiling the C files side by side.

    build_ext's own --parallel runs extensions side by side, and there is
    one; its compiler runs the files of one extension one after the other
    (about 11 s for the C core on two CPUs, 5.6 s this way).  This wraps
    the compiler's per-file step, _compile: each call goes to a thread
    pool, and compile() returns once all of them ended, the first failure
    raised as distutils would have raised it.
    """
    from concurrent.futures import ThreadPoolExecutor

    from setuptools.command.build_ext import build_ext

    class BuildExt(build_ext):
        def build_extension(self, ext):
            compiler = self.compiler
            one_file = compiler._compile
            whole = compiler.compile
            jobs = build_jobs()
            if jobs == 1 or not callable(one_file):
                return super().build_extension(ext)

            def compile_side_by_side(*args, **kwargs):
                with ThreadPoolExecutor(jobs) as pool:
                    pending = []
                    compiler._compile = lambda *a, **k: pending.append(
                        pool.submit(one_file, *a, **k)
                    )
                    try:
                        objects = whole(*args, **kwargs)
                    finally:
                        compiler._compile = one_file
                    for job in pending:
                        job.result()
                return objects

            compiler.compile = compile_side_by_side
            try:
                return super().build_extension(ext)
            finally:
                del compiler.compile

    return BuildExt


if __name__ == "__main__":
    from setuptools import setup

    options = {} if FREETHREADED else {"bdist_wheel": {"py_limited_api": "cp39"}}
    setup(ext_modules=[extension()], options=options, cmdclass={"build_ext": build_ext_class()})
