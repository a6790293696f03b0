"""The fake libmlx5.so.1 (tests/fakes/mlx5/*.c): build it, run Python
against it (beside the recording double of libibverbs) in a child process,
read what it recorded.

The fake has the soname libmlx5.so.1 and the real symbol version nodes
(libmlx5.map, from rdma-core's providers/mlx5/libmlx5.map); ibverbs loads
it through IBVERBS_LIBMLX5.  Its objects are the recording double's.  Each
call appends one line to the file $IBVERBS_FAKE_MLX5_LOG, in the double's
log format, with every argument and every struct byte (fake_mlx5.h).

    def test_x(mlx5_fake):              # a Runner (tests/support/fixtures.py)
        def body(fake):
            from ibverbs import mlx5
            return mlx5.is_supported("fake0")
        res = mlx5_fake.run(body)
        assert res.ok() is True
        assert res.mlx5_one("mlx5dv_is_supported")["device.name"] == "fake0"

``run(body, *args, fail={"mlx5dv_create_qp": errno}, unsupported=["fake0"],
caps=0x3)`` arms failures, unsupported devices and the comp_mask bits
mlx5dv_query_device may answer (default: all) for that run.  A failure
is an errno (every call of the verb fails) or ``(errno, n)``: only its
n-th call (from 1), as the recording double's ``fail_nth``; the errno
:data:`NO_ERRNO` fails it without errno (NULL or -1, errno 0).  It is a test tool,
not evidence that anything works on an mlx5 device.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import recording  # noqa: E402
from cshared import compile_unit  # noqa: E402

SOURCE_DIR = HERE / "mlx5"
LIB_NAME = "libmlx5.so.1"
# fail's errno for a failure without errno (fake_mlx5.h's M5_NO_ERRNO).
NO_ERRNO = recording.NO_ERRNO


def build(outdir, hide=()) -> str:
    """Compile the fake into outdir/libmlx5.so.1 and return its path;
    the functions named in ``hide`` are left out of the version script
    (local: absent to dlsym, as in a libmlx5 that predates them)."""
    outdir = Path(outdir)
    script = SOURCE_DIR / "libmlx5.map"
    if hide:
        lines = script.read_text().splitlines(keepends=True)
        script = outdir / "libmlx5.map"
        script.write_text("".join(ln for ln in lines if ln.strip().rstrip(";") not in hide))
    return compile_unit(
        SOURCE_DIR,
        outdir / "mlx5_unit.c",
        outdir / LIB_NAME,
        cflags=[f"-I{SOURCE_DIR}", *recording.include_flags()],
        libs=["-ldl", f"-Wl,--version-script={script}", f"-Wl,-soname,{LIB_NAME}"],
    )


def version_nodes(path) -> dict[str, str]:
    """{symbol: version} of the library's exported functions (readelf)."""
    out = subprocess.run(
        ["readelf", "--wide", "--dyn-syms", str(path)], capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[6] != "UND" and "@" in parts[7]:
            name, _, ver = parts[7].partition("@")
            ver = ver.lstrip("@")
            found.setdefault(name, [])
            found[name].append(ver)
    return {k: ",".join(sorted(v)) for k, v in found.items()}


class Result(recording.Result):
    """recording.Result plus ``mlx5`` (the fake libmlx5's records)."""

    def __init__(self, base: recording.Result, log: str):
        self.__dict__.update(base.__dict__)
        self.mlx5 = recording.parse_log(log)

    def mlx5_calls(self, verb: str) -> list[recording.Record]:
        return [r for r in self.mlx5 if r.verb == verb]

    def mlx5_one(self, verb: str) -> recording.Record:
        return recording._one(self.mlx5, verb)


class Runner(recording.Runner):
    """A recording.Runner whose child also loads the fake libmlx5."""

    def __init__(self, lib: str, mlx5_lib: str, workdir):
        super().__init__(lib, workdir)
        self.mlx5_lib = mlx5_lib
        self._extra: dict = {}

    def env(self) -> dict:
        return dict(super().env(), IBVERBS_LIBMLX5=self.mlx5_lib, **self._extra)

    def run(
        self, body, *args, fail=None, unsupported=(), caps=None, timeout: float = 120
    ) -> Result:
        self._n += 1
        log = self.workdir / f"mlx5-{os.getpid()}-{self._n}.log"
        self._extra = {
            "IBVERBS_FAKE_MLX5_LOG": str(log),
            "IBVERBS_FAKE_MLX5_FAIL": ",".join(
                f"{k}={v[0]}@{v[1]}" if isinstance(v, tuple) else f"{k}={v}"
                for k, v in (fail or {}).items()
            ),
            "IBVERBS_FAKE_MLX5_UNSUPPORTED": ",".join(unsupported),
            "IBVERBS_FAKE_MLX5_CAPS": "" if caps is None else hex(caps),
        }
        try:
            res = super().run(body, *args, timeout=timeout)
        finally:
            self._extra = {}
        text = log.read_text() if log.exists() else ""
        if log.exists():
            log.unlink()
        return Result(res, text)
