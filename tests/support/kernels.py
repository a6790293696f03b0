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

import errno
import json
import os
import re
import time

# feature -> kernel series -> answer.  Measured with the host's rdma-core 44
# (the guest's userspace) on Debian's kernels 6.1.0-57, 6.12.117+deb13 and
# 7.2.13+deb14 (2026-12-03).  A key "SERIES rdma-core N" holds what that
# kernel answered under rdma-core N's userspace where it differs (make
# test-kernels also runs this file on 7.2 chrooted into Debian sid's root,
# rdma-core 65: tools/rxe-vm.d/in-root).
EXPECTED: dict[str, dict[str, str]] = {
    # ibv_reg_mr(IBV_ACCESS_ON_DEMAND), then an RDMA WRITE into pages of it
    # that were never touched (the write must fault them in).
    # The write is 4 KiB, four packets at the guest's path MTU of 1024.
    # On 7.2 the WR completes with success but only 1 KiB holds the
    # written bytes, into untouched and resident pages alike, and nothing
    # more lands later; the same under rdma-core 44 and 65 (the provider
    # only passes the access flag): the kernel's rxe, recorded as found.
    # The write fills all four packets with one byte value, so it counts
    # bytes; "odp_write_c" below tells which packet lands where (each at
    # its page's start, so the page's first 1 KiB holds the last one).
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
    # One packet (the path MTU's 1024 bytes) into untouched pages: the
    # write that faults pages in, verified byte for byte.
    "odp_write_one_packet": {
        "6.1": "refused EINVAL",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "runs",
    },
    # tools/odp-write-loss.c, the C reproducer: RDMA WRITEs of 1 to 16
    # packets (the path MTU, 1 KiB in the guest) into fresh ODP regions,
    # untouched and resident, verified packet by packet.  On 7.2 a write
    # of one packet lands; in a longer one every packet's bytes land at
    # offset 0 of the page it was aimed at, so each page keeps only the
    # last packet aimed into it, at its start (the 1 KiB of 4 that the
    # tests above count).  Debian's linux-source-7.2 (7.2.13):
    # __rxe_odp_mr_copy() in drivers/infiniband/sw/rxe/rxe_odp.c computes
    # the offset in the page but copies to kmap_local_page()'s address, the
    # page's start.
    "odp_write_c": {
        "6.1": "refused EINVAL",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "writes of 2-16 packets: each packet at its page's start",
    },
    # ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND): the implicit ODP MR.
    "implicit_odp": {
        "6.1": "refused EINVAL",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "refused EINVAL",
    },
    # ibv_advise_mr(PREFETCH_WRITE, FLUSH) on an ODP MR (on a plain MR where
    # the kernel has no ODP).  rdma-core 44's rxe provider has no advise_mr
    # (libibverbs answers EOPNOTSUPP itself); rdma-core 65's passes it to
    # the kernel, and 7.2's rxe prefetches.
    "advise_mr_prefetch": {
        "6.1": "refused EOPNOTSUPP",
        "6.12": "refused EOPNOTSUPP",
        "7.2": "refused EOPNOTSUPP",
        "7.2 rdma-core 65": "runs",
    },
    # IBV_WR_ATOMIC_WRITE (8 bytes) through ibv_post_send.
    "atomic_write": {
        "6.1": "completion LOC_QP_OP_ERR",
        "6.12": "completion REM_ACCESS_ERR",
        "7.2": "completion REM_ACCESS_ERR",
    },
    # A second BIND_MW of a bound type 2 window, without an invalidation
    # between (tests/device/test_mw_device.py).  6.1's rxe completes it with
    # MW_BIND_ERR (its requester only marks itself in error and lets the
    # completer report the WR's status).  7.2's (read in Debian's
    # linux-source-7.2) moves the QP to the error state in rxe_req.c's
    # error path (rxe_qp_error()) before the completer runs, which then
    # flushes the send queue, the failed bind first: the same WR, its own
    # status lost.  6.12 answers as 7.2 does.
    "mw_type2_rebind_bound": {
        "6.1": "completion MW_BIND_ERR",
        "6.12": "completion WR_FLUSH_ERR",
        "7.2": "completion WR_FLUSH_ERR",
    },
    # ibv_dereg_mr of an MR a memory window is bound to (type 1 or 2):
    # rxe's num_mw check (IBA 10.6.7.2.6), the same in each.
    "mw_bound_mr_dereg": {
        "6.1": "refused EINVAL",
        "6.12": "refused EINVAL",
        "7.2": "refused EINVAL",
    },
}

FEATURES = {
    "odp_write": "ODP registration + RDMA write faulting pages in",
    "odp_write_resident": "ODP registration + RDMA write into resident pages",
    "odp_write_one_packet": "ODP registration + one-packet RDMA write faulting pages in",
    "odp_write_c": "ODP RDMA writes of 1-16 packets, C reproducer (tools/odp-write-loss.c)",
    "implicit_odp": "implicit ODP MR",
    "advise_mr_prefetch": "advise_mr prefetch",
    "atomic_write": "atomic write",
    "mw_type2_rebind_bound": "rebinding a bound type 2 memory window",
    "mw_bound_mr_dereg": "deregistering an MR a memory window is bound to",
    # Recorded by tests/device/test_siw.py (on siw and on rxe).
    "transport": "transport",
    "cm_send_recv": "RC through CMID/CMListener: send/recv",
    "cm_send_recv_srq": "RC through CMID/CMListener: send/recv into an SRQ",
    "cm_rdma_write_read": "RC through CMID/CMListener: RDMA write and read",
    "qp_state_after_cm": "ibv_query_qp state of a CM-connected QP",
    "ud_qp": "UD QP",
    "atomic_fetch_add": "atomic fetch-and-add",
    "connect_rc_manual": "connect_rc without the CM (manual INIT/RTR/RTS)",
}


def release() -> str:
    return os.uname().release


def series(rel: str | None = None) -> str:
    """ "6.1" for "6.1.0-57-amd64", "7.2" for "7.2.13+deb14-amd64"."""
    m = re.match(r"(\d+)\.(\d+)", rel or release())
    return f"{m.group(1)}.{m.group(2)}" if m else "?"


def rdma_core() -> str:
    """The major version of the libibverbs this process runs on ("44")."""
    import ibverbs

    return ibverbs.library_version.split(".")[0]


def expected(feature: str) -> str | None:
    """What the table says this kernel answers under this rdma-core, or
    None (not in it)."""
    want = EXPECTED[feature]
    return want.get(f"{series()} rdma-core {rdma_core()}", want.get(series()))


def record(feature: str, answer: str, provider: str = "rxe") -> None:
    """Say (on stdout, shown by -rP) and record which kernel answered what."""
    rel = release()
    print(f"{feature}: {provider} on Linux {rel}, rdma-core {rdma_core()}, answered {answer!r}")
    out = os.environ.get("IBVERBS_CAPS_OUT")
    if out:
        line = {
            "feature": feature,
            "release": rel,
            "series": series(rel),
            "provider": provider,
            "rdma_core": rdma_core(),
            "answer": answer,
        }
        with open(out, "a") as f:
            f.write(json.dumps(line) + "\n")


def refusal(e) -> str:
    """The answer for a VerbsError E: "refused EINVAL".  ENOTSUP and
    EOPNOTSUPP are one number on Linux: it is named EOPNOTSUPP."""
    if e.errno == errno.EOPNOTSUPP:
        return "refused EOPNOTSUPP"
    return f"refused {errno.errorcode.get(e.errno, str(e.errno))}"


def landed(region, fill: int) -> str:
    """The answer for an RDMA write of FILL bytes over all of REGION (a
    numpy uint8 view) that completed with success: "runs" when every byte
    landed (looked at again after a wait, so that a late arrival is told
    apart from a loss), else how many did (not which: that varies from run to run)."""
    from . import timeouts

    n = region.size
    got = region == fill
    if not got.all():
        time.sleep(timeouts.scaled(1.0))
        got = region == fill
    k = int(got.sum())
    if k == n:
        return "runs"
    return f"completes, {k} of {n} bytes landed"


def check(feature: str, answer: str, provider: str = "rxe") -> None:
    """Record ANSWER and hold it to the table (a kernel not in the table
    passes with its answer recorded)."""
    record(feature, answer, provider)
    want = expected(feature)
    assert want is None or answer == want, (
        f"{feature} on Linux {release()}, rdma-core {rdma_core()}: answered {answer!r}, the table "
        f"(tests/support/kernels.py) says {want!r}"
    )
