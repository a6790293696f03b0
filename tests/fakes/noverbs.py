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
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cshared import BuildError, compile_shared, compiler  # noqa: E402,F401

SOURCE = HERE / "noverbs_shim.c"


def missing_tools() -> str | None:
    if compiler() is None:
        return "no C compiler (cc, gcc or clang) on PATH, and $CC unset"
    if shutil.which("nm") is None:
        return "binutils nm not installed"
    return None


def exported_functions(lib: str) -> list[str]:
    """The verbs functions ``lib`` exports (default symbol versions only)."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True
    ).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in ("T", "i"):
            continue
        name = parts[2].split("@")[0]
        if re.fullmatch(r"_?ibv_\w+|m(?:ult|bps)_to_ibv_rate", name):
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
    return compile_shared(
        SOURCE,
        outdir / "libibverbs-noverbs.so",
        defines={"SHIM_REAL_LIB": f'"{real_lib}"', "SHIM_SYMBOLS": f'"{syms}"'},
        libs=["-ldl"],
    )


def shim_env(shim: str, hide=()) -> dict:
    """os.environ for a child process whose ibverbs loads ``shim`` with the
    verbs in ``hide`` missing."""
    return dict(os.environ, IBVERBS_LIBIBVERBS=shim, NOVERBS_HIDE=" ".join(hide))
