"""What each kernel's rxe answers, in one table (tests/device/test_kernel_caps.py
asserts it; make test-kernels runs that file on Debian's 6.1, 6.12 and 7.2).

An answer is a short string: ``"runs"`` (the operation ran and its result
was verified), ``"refused EINVAL"`` (the verb failed with that errno),
``"completion REM_ACCESS_ERR"`` (the work request completed with that
status), or another phrase the test names.  ``EXPECTED[feature][series]``
is what the kernel series (``"6.1"``, from ``uname -r``) answered when last
run; a kernel not in the table is reported, not asserted.

With ``IBVERBS_CAPS_OUT=PATH`` each answer is appended to PATH as one JSON
line (feature, kernel release, series, provider, answer), from which
tools/capability-table writes the testing guide's table.
"""

from __future__ import annotations

import json
import os
import re

# feature -> kernel series -> answer.  Measured with the host's rdma-core 44
# (the guest's userspace) on Debian's kernels 6.1.0-57, 6.12.117+deb13 and
# 7.2.13+deb14 (2026-12-03).
EXPECTED: dict[str, dict[str, str]] = {
    # ibv_reg_mr(IBV_ACCESS_ON_DEMAND), then an RDMA WRITE into pages of it
    # that were never touched (the write must fault them in).
    # On 7.2 the WR completes but only the first packet's 1 KiB (MTU 1024)
    # of the 4 KiB lands, into untouched and resident pages alike: a
    # defect (of the kernel, or of rdma-core 44 with it), recorded as found.
    "odp_write": {
        "6.1": "refused EINVAL",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "completes, 1024 of 4096 bytes landed",
    },
    # The same into pages written before the registration (resident).
    "odp_write_resident": {
        "6.1": "refused EINVAL",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "completes, 1024 of 4096 bytes landed",
    },
    # ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND): the implicit ODP MR.
    "implicit_odp": {
        "6.1": "refused EINVAL",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "refused EINVAL",
    },
    # ibv_advise_mr(PREFETCH_WRITE, FLUSH) on an ODP MR (on a plain MR where
    # the kernel has no ODP).
    "advise_mr_prefetch": {
        "6.1": "refused EOPNOTSUPP",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "refused EOPNOTSUPP",
    },
    # IBV_WR_ATOMIC_WRITE (8 bytes) through ibv_post_send.
    "atomic_write": {
        "6.1": "completion LOC_QP_OP_ERR",
        "6.12": "completion REM_ACCESS_ERR",
        "7.2": "completion REM_ACCESS_ERR",
    },
}

FEATURES = {
    "odp_write": "ODP registration + RDMA write faulting pages in",
    "odp_write_resident": "ODP registration + RDMA write into resident pages",
    "implicit_odp": "implicit ODP MR",
    "advise_mr_prefetch": "advise_mr prefetch",
    "atomic_write": "atomic write",
}


def release() -> str:
    return os.uname().release


def series(rel: str | None = None) -> str:
    """ "6.1" for "6.1.0-57-amd64", "7.2" for "7.2.13+deb14-amd64"."""
    m = re.match(r"(\d+)\.(\d+)", rel or release())
    return f"{m.group(1)}.{m.group(2)}" if m else "?"


def expected(feature: str) -> str | None:
    """What the table says this kernel answers, or None (not in it)."""
    return EXPECTED[feature].get(series())


def record(feature: str, answer: str, provider: str = "rxe") -> None:
    """Say (on stdout, shown by -rP) and record which kernel answered what."""
    rel = release()
    print(f"{feature}: {provider} on Linux {rel} answered {answer!r}")
    out = os.environ.get("IBVERBS_CAPS_OUT")
    if out:
        line = {
            "feature": feature,
            "release": rel,
            "series": series(rel),
            "provider": provider,
            "answer": answer,
        }
        with open(out, "a") as f:
            f.write(json.dumps(line) + "\n")


def check(feature: str, answer: str, provider: str = "rxe") -> None:
    """Record ANSWER and hold it to the table (a kernel not in the table
    passes with its answer recorded)."""
    record(feature, answer, provider)
    want = expected(feature)
    assert want is None or answer == want, (
        f"{feature} on Linux {release()}: answered {answer!r}, the table "
        f"(tests/support/kernels.py) says {want!r}"
    )
