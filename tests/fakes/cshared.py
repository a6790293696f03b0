"""Compile one test-only shared library with the system C compiler: the
one helper behind tests/fakes/build.py (the fake libcuda), noverbs.py (the
libibverbs shim) and the reliability suite's failing-destroy shim.

    cshared = <loaded by path, or imported with tests/fakes on sys.path>
    cshared.compile_shared(source, out, defines={"NAME": "value"},
                           libs=["-ldl"])
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# Warnings are errors for these small files: a fake that compiles with a
# warning is a fake that may not do what the test believes.
CFLAGS = ["-shared", "-fPIC", "-O1", "-std=gnu11", "-Wall", "-Wextra", "-fvisibility=hidden"]


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


def compile_shared(source, out, *, defines=None, libs=(), cflags=()) -> str:
    """Compile ``source`` into the shared library ``out`` (its directory is
    created) and return its path.  ``defines`` become -DNAME or -DNAME=VALUE
    (a VALUE of True is a bare -DNAME); ``cflags`` (include flags, say)
    come before the source, ``libs`` after it.
    BuildError if there is no compiler, or it fails or warns."""
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler (cc, gcc or clang) on PATH, and $CC unset")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    dflags = [f"-D{k}" if v is True else f"-D{k}={v}" for k, v in (defines or {}).items()]
    cmd = [cc, *CFLAGS, *cflags, *dflags, "-o", str(out), str(source), *libs]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or proc.stdout.strip():
        raise BuildError(f"{' '.join(cmd)} failed or warned:\n{proc.stdout[-4000:]}")
    return str(out)


def unit_sources(source_dir) -> list[Path]:
    """The C files of a many-file fake: core.c first, then the others by name."""
    files = sorted(Path(source_dir).glob("*.c"))
    return sorted(files, key=lambda p: (p.name != "core.c", p.name))


def compile_unit(source_dir, unit, out, **kw) -> str:
    """compile_shared of one unit that includes every file of
    ``unit_sources(source_dir)``, written to ``unit`` (a .c path)."""
    unit = Path(unit)
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text("".join(f'#include "{p}"\n' for p in unit_sources(source_dir)))
    return compile_shared(unit, out, **kw)
