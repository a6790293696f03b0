"""Build the C core as one abi3 extension against the CPython Limited API.

The extension includes the rdma-core headers but does not link
libibverbs: it dlopens libibverbs.so.1 at import (loader.c).

This file is the one place that names the extension's compiler flags.
Tools that build it another way go through it (tools/devbuild, and so
tools/sanitize, benchmarks/prepare.py: ``setup.py build_ext`` with
IBVERBS_EXTRA_CFLAGS / IBVERBS_EXTRA_LDFLAGS added), or import CFLAGS
and DEFINES from it: importing this file builds nothing.

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


def header_defines(name, extra):
    """Does <infiniband/verbs.h> define the enumerator ``name``?  (An enum
    member is no macro: ask the compiler.)"""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    src = f"#include <infiniband/verbs.h>\nint probe = {name};\n"
    try:
        r = subprocess.run(
            cc + ["-fsyntax-only", "-x", "c", "-"] + extra,
            input=src.encode(),
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def probed_defines(extra):
    """Enum members newer than some supported rdma-core headers (enums.c)."""
    probes = [
        ("IBV_ACCESS_FLUSH_GLOBAL", "IBVERBS_HAVE_ACCESS_FLUSH"),
        ("IBV_WR_ATOMIC_WRITE", "IBVERBS_HAVE_WR_ATOMIC_WRITE"),
        # ibv_wr_flush, struct ibv_qp_ex's wr_flush (qp_ex.c, wr_ex.c) and
        # IBV_WR_FLUSH/IBV_WC_FLUSH came together (rdma-core 45)
        ("IBV_QP_EX_WITH_FLUSH", "IBVERBS_HAVE_WR_FLUSH"),
    ]
    return [(define, "1") for name, define in probes if header_defines(name, extra)]


def extension():
    from setuptools import Extension

    extra = os.environ.get("IBVERBS_EXTRA_CFLAGS", "").split()
    extra_link = os.environ.get("IBVERBS_EXTRA_LDFLAGS", "").split()
    return Extension(
        "ibverbs._ibverbs",
        sources=sorted(glob.glob("src/ibverbs/_ibverbs/*.c")),
        depends=glob.glob("src/ibverbs/_ibverbs/*.h"),
        define_macros=DEFINES + probed_defines(extra),
        py_limited_api=True,
        extra_compile_args=CFLAGS + extra,
        extra_link_args=extra_link,
        # No libraries=["ibverbs"]: every exported verb is resolved with dlsym.
    )


if __name__ == "__main__":
    from setuptools import setup

    setup(ext_modules=[extension()], options={"bdist_wheel": {"py_limited_api": "cp39"}})
