"""Build a libibverbs stand-in that lacks some verbs (tests/fakes/noverbs_shim.c).

    noverbs = <this file, loaded by path (the tests are not packages)>
    path = noverbs.build_shim(tmpdir, real_lib)
    env = noverbs.shim_env(path, hide=("ibv_reg_dmabuf_mr",))  # for a child

The shim exports every function of ``real_lib`` (found with ``nm -D``), each
resolving to the real function, except those named in $NOVERBS_HIDE, which
look absent: it behaves like an older rdma-core that predates them.
ibverbs loads it through the test-only override IBVERBS_LIBIBVERBS, so the
child process that imports ibverbs gets ``shim_env()``.
``missing_tools()`` says why the shim cannot be built here (no C compiler,
no nm), or returns None.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "noverbs_shim.c"


class BuildError(RuntimeError):
    pass


def compiler() -> str | None:
    """The C compiler to use ($CC or cc/gcc/clang on PATH), or None."""
    cc = os.environ.get("CC")
    if cc:
        return cc
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return found
    return None


def missing_tools() -> str | None:
    if compiler() is None:
        return "no C compiler (cc, gcc or clang) on PATH, and $CC unset"
    if shutil.which("nm") is None:
        return "binutils nm not installed"
    return None


def exported_functions(lib: str) -> list[str]:
    """The verbs functions ``lib`` exports (default symbol versions only)."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in ("T", "i"):
            continue
        name = parts[2].split("@")[0]
        if re.fullmatch(r"_?ibv_\w+", name):
            names.add(name)
    return sorted(names)


def build_shim(outdir, real_lib: str) -> str:
    """Compile the shim for ``real_lib`` into outdir and return its path."""
    why = missing_tools()
    if why is not None:
        raise BuildError(why)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    names = exported_functions(real_lib)
    if "ibv_get_device_list" not in names:
        raise BuildError(f"{real_lib} exports no ibv_get_device_list: not libibverbs")
    syms = outdir / "noverbs_syms.h"
    syms.write_text("".join(f"SHIM_FORWARD({n})\n" for n in names))
    out = outdir / "libibverbs-noverbs.so"
    cmd = [compiler(), "-shared", "-fPIC", "-O1", "-std=gnu11", "-Wall", "-Wextra",
           "-fvisibility=hidden", f'-DSHIM_REAL_LIB="{real_lib}"',
           f'-DSHIM_SYMBOLS="{syms}"', "-o", str(out), str(SOURCE), "-ldl"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if proc.returncode != 0 or proc.stdout.strip():
        raise BuildError(f"{' '.join(cmd)} failed or warned:\n{proc.stdout[-4000:]}")
    return str(out)


def shim_env(shim: str, hide=()) -> dict:
    """os.environ for a child process whose ibverbs loads ``shim`` with the
    verbs in ``hide`` missing."""
    return dict(os.environ, IBVERBS_LIBIBVERBS=shim, NOVERBS_HIDE=" ".join(hide))
