"""Build the C core as one abi3 extension against the CPython Limited API.

The extension includes the rdma-core headers but does not link
libibverbs: it dlopens libibverbs.so.1 at import (loader.c).
"""

import glob
import os

from setuptools import Extension, setup

extra = os.environ.get("IBVERBS_EXTRA_CFLAGS", "").split()
extra_link = os.environ.get("IBVERBS_EXTRA_LDFLAGS", "").split()

ext = Extension(
    "ibverbs._ibverbs",
    sources=sorted(glob.glob("src/ibverbs/_ibverbs/*.c")),
    depends=glob.glob("src/ibverbs/_ibverbs/*.h"),
    define_macros=[("Py_LIMITED_API", "0x03090000")],
    py_limited_api=True,
    extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                        "-Wno-missing-field-initializers", "-fvisibility=hidden"]
    + extra,
    extra_link_args=extra_link,
    # No libraries=["ibverbs"]: every exported verb is resolved with dlsym.
)

setup(ext_modules=[ext], options={"bdist_wheel": {"py_limited_api": "cp39"}})
