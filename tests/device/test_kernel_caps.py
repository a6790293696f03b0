"""What the running kernel's rxe does with the features that changed across
kernels: on-demand paging (registration, an RDMA write that faults pages in,
implicit ODP, advise_mr prefetch) and atomic write.  Each test finds the
answer, says which kernel gave it, and holds it to the one table of
expected answers, tests/support/kernels.py (make test-kernels runs this
file on Debian's 6.1, 6.12 and 7.2)."""

from __future__ import annotations

import mmap
import os
import subprocess

import numpy as np
import pytest

import ibverbs as ib
from support import TESTS, kernels, timeouts
from support.rdma import ALL_ACCESS, atomic_write_8, make_rc_pair, mkbuf, poll_until

pytestmark = pytest.mark.integration


def untouched(n: int):
    """N bytes of anonymous memory whose pages were never touched (no page
    is mapped until something writes or reads them)."""
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return m, np.frombuffer(m, dtype=np.uint8)


def path_mtu(ctx) -> int:
    """The bytes of one packet on the loopback pair (make_rc_pair uses the
    port's active MTU, at most 4096)."""
    return 128 << int(min(ctx.query_port(1).active_mtu, ib.MTU.MTU_4096))


def odp_write(ctx, pd, feature, touch, n=4096):
    """Register untouched (or, with TOUCH, written) memory ON_DEMAND and
    RDMA WRITE N bytes into its third page; check FEATURE's answer."""
    m, buf = untouched(1 << 16)
    if touch:
        buf[:] = 0
    try:
        mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS | ib.AccessFlags.ON_DEMAND, owner=m)
    except ib.VerbsError as e:
        kernels.check(feature, kernels.refusal(e))
        return
    assert mr.access & ib.AccessFlags.ON_DEMAND
    qa, ca, qb, cb = make_rc_pair(ctx, pd)
    src, smr = mkbuf(pd, n, fill=9)
    qa.post_send(
        ib.SendWR(
            wr_id=1,
            sg_list=[smr.sge(n)],
            opcode=ib.WROpcode.RDMA_WRITE,
            send_flags=ib.SendFlags.SIGNALED,
            remote_addr=mr.addr + 8192,
            rkey=mr.rkey,
        )
    )
    (wc,) = poll_until(ca, 1)
    if not wc.is_success:
        answer = f"completion {ib.WCStatus(wc.status).name}"
    else:
        answer = kernels.landed(buf[8192 : 8192 + n], 9)
        assert (buf[:8192] == 0).all() and (buf[8192 + n :] == 0).all()
    for h in (qa, qb, ca, cb, mr, smr):
        h.close()
    del buf
    m.close()
    kernels.check(feature, answer)


def test_odp_write_faults_pages_in(ctx, pd):
    odp_write(ctx, pd, "odp_write", touch=False)


def test_odp_write_into_resident_pages(ctx, pd):
    odp_write(ctx, pd, "odp_write_resident", touch=True)


def test_odp_write_one_packet(ctx, pd):
    """The write that faults pages in, one packet long: on 7.2 it lands
    whole (the issue's "an RDMA write into an ON_DEMAND region is
    verified"), where in a longer one each packet lands at its page's
    start (test_odp_write_c_reproducer)."""
    odp_write(ctx, pd, "odp_write_one_packet", touch=False, n=path_mtu(ctx))


# The C reproducer of the ODP finding (libibverbs only), as make builds it
# (build/odp-write-loss); where that is missing or older than its source
# (a test run without make), compiled here.
REPRO_SOURCE = TESTS.parent / "tools" / "odp-write-loss.c"
REPRO_BUILT = TESTS.parent / "build" / "odp-write-loss"


def odp_reproducer(tmp_path) -> str:
    built = REPRO_BUILT
    if built.exists() and built.stat().st_mtime >= REPRO_SOURCE.stat().st_mtime:
        return str(built)
    exe = tmp_path / "odp-write-loss"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-Wall", "-o", str(exe), str(REPRO_SOURCE), "-libverbs"], check=True)
    return str(exe)


def reproducer_answer(summary: dict[str, str]) -> str:
    """The table's answer from the reproducer's summary of its two ODP
    modes: "refused:EINVAL" -> "refused EINVAL"; "ok" -> "runs";
    "lost:2-16:page-start" -> "writes of 2-16 packets: each packet at its
    page's start"; the two modes' answers joined where they differ."""

    def one(s: str) -> str:
        kind, _, rest = s.partition(":")
        if kind == "refused":
            return f"refused {rest}"
        if kind == "ok":
            return "runs"
        sizes, _, how = rest.partition(":")
        where = "each packet at its page's start" if how == "page-start" else "data lost"
        return f"writes of {sizes} packets: {where}"

    untouched, resident = one(summary["odp-untouched"]), one(summary["odp-resident"])
    return untouched if untouched == resident else f"untouched: {untouched}; resident: {resident}"


def test_odp_write_c_reproducer(tmp_path, device_name, gid_index):
    """tools/odp-write-loss.c, the finding as a C program a kernel
    developer can run: RDMA WRITEs of 1 to 16 packets into ODP regions
    (untouched and resident) and, as the control, a plain MR, each
    verified byte by byte.  The plain MR must land whole on every kernel;
    what the ODP regions get is the kernel's answer."""
    exe = odp_reproducer(tmp_path)
    r = subprocess.run(
        [exe, "-d", device_name, "-g", str(gid_index), "-n", "16"],
        capture_output=True,
        text=True,
        timeout=timeouts.scaled(120),
    )
    print(r.stdout, r.stderr)
    assert r.returncode in (0, 3), f"odp-write-loss failed ({r.returncode}): {r.stderr}"
    last = r.stdout.splitlines()[-1]
    assert last.startswith("summary: "), last
    summary = dict(kv.split("=", 1) for kv in last.removeprefix("summary: ").split())
    assert summary["plain"] == "ok", summary
    answer = reproducer_answer(summary)
    # Exit status 3 is the program's own word that a write lost data.
    assert (r.returncode == 3) == ("writes of" in answer), (r.returncode, answer)
    kernels.check("odp_write_c", answer)


def test_implicit_odp(ctx, pd):
    try:
        mr = pd.reg_implicit_odp_mr(ALL_ACCESS)
    except ib.VerbsError as e:
        kernels.check("implicit_odp", kernels.refusal(e))
        return
    assert mr.addr == 0 and mr.access & ib.AccessFlags.ON_DEMAND
    mr.close()
    kernels.check("implicit_odp", "runs")


def test_advise_mr_prefetch(ctx, pd):
    m, buf = untouched(1 << 16)
    try:
        mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS | ib.AccessFlags.ON_DEMAND, owner=m)
    except ib.VerbsError:
        # No ODP in this kernel: the prefetch of a plain MR.
        mr = pd.reg_mr(buf.ctypes.data, buf.nbytes, ALL_ACCESS, owner=m)
    try:
        pd.advise_mr(ib.AdviseMRAdvice.PREFETCH_WRITE, ib.AdviseMRFlags.FLUSH, [mr.sge(4096)])
    except ib.VerbsError as e:
        answer = kernels.refusal(e)
    else:
        answer = "runs"
    mr.close()
    del buf
    m.close()
    kernels.check("advise_mr_prefetch", answer)


@pytest.mark.skipif(
    not hasattr(ib.WROpcode, "ATOMIC_WRITE"),
    reason="the rdma-core headers of this build have no IBV_WR_ATOMIC_WRITE (rdma-core < 42)",
)
def test_atomic_write(ctx, pd):
    wc, src, dst = atomic_write_8(ctx, pd)
    if wc.is_success:
        assert list(dst[8:16]) == list(range(1, 9))
        answer = "runs"
    else:
        assert (dst == 0x22).all(), "a failed atomic write changed the target"
        answer = f"completion {ib.WCStatus(wc.status).name}"
    kernels.check("atomic_write", answer)
