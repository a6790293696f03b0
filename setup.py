"""Build the C core as one abi3 extension against the CPython Limited API.

The extension includes the rdma-core headers but does not link
libibverbs: it dlopens libibverbs.so.1 at import (loader.c).
"""

import glob
import os
import shlex
import subprocess
import sysconfig

from setuptools import Extension, setup

extra = os.environ.get("IBVERBS_EXTRA_CFLAGS", "").split()
extra_link = os.environ.get("IBVERBS_EXTRA_LDFLAGS", "").split()


def header_defines(name):
    """Does <infiniband/verbs.h> define the enumerator ``name``?  (An enum
    member is no macro: ask the compiler.)"""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    src = f"#include <infiniband/verbs.h>\nint probe = {name};\n"
    try:
        r = subprocess.run(cc + ["-fsyntax-only", "-x", "c", "-"] + extra,
                           input=src.encode(), capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


# Enum members newer than some supported rdma-core headers (enums.c).
probed = [("IBVERBS_HAVE_ACCESS_FLUSH", "1")] if header_defines(
    "IBV_ACCESS_FLUSH_GLOBAL") else []

ext = Extension(
    "ibverbs._ibverbs",
    sources=sorted(glob.glob("src/ibverbs/_ibverbs/*.c")),
    depends=glob.glob("src/ibverbs/_ibverbs/*.h"),
    define_macros=[("Py_LIMITED_API", "0x03090000")] + probed,
    py_limited_api=True,
    extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                        "-Wno-missing-field-initializers", "-fvisibility=hidden"]
    + extra,
    extra_link_args=extra_link,
    # No libraries=["ibverbs"]: every exported verb is resolved with dlsym.
)

setup(ext_modules=[ext], options={"bdist_wheel": {"py_limited_api": "cp39"}})
