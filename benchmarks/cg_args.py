#!/usr/bin/env python3
"""Instructions per call of methods whose arguments go through a parser
(not the data path: benchmarks/callgrind.py measures post_send and poll),
counted by callgrind on the host against the recording double of
libibverbs (tests/fakes/recording), so no device is needed and the
provider's share is the double's: a few hundred instructions, the same
before and after a change of this package.

    python3 benchmarks/cg_args.py [--src DIR ...] [-n N]

Each --src is a tree whose ``ibverbs`` package is imported (default: src,
the in-place build of make build); give two to compare a change with its
base side by side, e.g. a worktree of main built with make build.
Reported: instructions per call, for each method and tree, and the ratio
of each tree to the first.  Each call is made N times inside callgrind's
measured window (benchmarks/cgtoggle.c's client requests) after a
warm-up of N calls.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fakes"))

# One child per (tree, method): the measured call, made n times.
CHILD = r"""
import ctypes, os, sys
import ibverbs as ib
toggle = ctypes.CDLL(os.environ["CG_TOGGLE"])
n = int(sys.argv[2])
ctx = ib.Context("fake0")
pd = ctx.alloc_pd()
cq = ctx.create_cq(16)
buf = bytearray(4096)
mr = ib.reg_tensor(pd, buf, ib.AccessFlags.LOCAL_WRITE)
F = ib.QPCreateSendOpsFlags
qpx = pd.create_qp_ex(ib.QPInitAttrEx(cq, send_ops_flags=F.SEND_WITH_IMM | F.SEND))
addr = mr.addr

def reg_mr():
    pd.reg_mr(addr, 64, 1, owner=buf).close()

def query_port():
    ctx.query_port(1)

def wr_send_imm():
    qpx.wr_send_imm(7)

def alloc_mw():
    pd.alloc_mw(ib.MWType.TYPE_2).close()

def create_srq():
    pd.create_srq(max_wr=8, max_sge=1).close()

def poll():
    cq.poll(16)

def poll_count():
    cq.poll_count(16)

# A CQEx with every field poll() reads, fed by 4 receives per call (the
# double completes a receive on a QP in INIT): read_entry's work.
W = ib.enums.CreateCQWCFlags
every = W.BYTE_LEN | W.IMM | W.QP_NUM | W.SRC_QP | W.SLID | W.SL | W.DLID_PATH_BITS
every |= W.COMPLETION_TIMESTAMP | W.COMPLETION_TIMESTAMP_WALLCLOCK | W.CVLAN | W.FLOW_TAG
cqx = ctx.create_cq_ex(ib.CQInitAttrEx(64, wc_flags=every))
rqp = pd.create_qp(ib.QPInitAttr(cqx, max_recv_wr=64))
rqp.modify(ib.enums.QPAttrMask.STATE, qp_state=ib.enums.QPState.INIT)
rwrs = [ib.RecvWR(wr_id=i, sg_list=[ib.SGE(addr, 64, mr.lkey)]) for i in range(4)]

def cqex_post4():
    rqp.post_recv(rwrs)
    cqx.poll_count(4)

def cqex_poll4():
    rqp.post_recv(rwrs)
    cqx.poll(4)

def cqex_poll_empty():
    cqx.poll(16)

fn = globals()[sys.argv[1]]
if fn is wr_send_imm:
    qpx.wr_start()
for _ in range(n):
    fn()
if fn is wr_send_imm:
    qpx.wr_abort()
    qpx.wr_start()
toggle.cg_start()
for _ in range(n):
    fn()
toggle.cg_stop()
if fn is wr_send_imm:
    qpx.wr_abort()
"""
METHODS = ["reg_mr", "query_port", "wr_send_imm", "alloc_mw", "create_srq"]
# The data path's polls, parsed by hand: the same before and after a
# change of the parser (the recording double's CQ is empty).  A CQEx
# asking for every field: empty (cqex_poll_empty), and 4 receives posted
# then reaped by poll_count(4) (cqex_post4: 4 read_entry) or by poll(4)
# (cqex_poll4: 4 read_entry and 4 WCEx).  post_send
# needs a connected QP: its objdump is compared instead.
DATA_PATH = ["poll", "poll_count", "cqex_poll_empty", "cqex_post4", "cqex_poll4"]


def build_helpers(out: Path) -> tuple[str, str]:
    import recording  # tests/fakes/recording.py

    lib = recording.build(out)
    toggle = out / "cgtoggle.so"
    subprocess.run(
        [
            "cc",
            "-O2",
            "-shared",
            "-fPIC",
            "-o",
            str(toggle),
            str(ROOT / "benchmarks" / "cgtoggle.c"),
        ],
        check=True,
    )
    return str(lib), str(toggle)


def measure(src: str, method: str, n: int, lib: str, toggle: str, out: Path) -> float:
    env = dict(os.environ, IBVERBS_LIBIBVERBS=lib, CG_TOGGLE=toggle, PYTHONPATH=src)
    prefix = out / f"cg.{abs(hash((src, method)))}"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={prefix}.%p",
            sys.executable,
            "-c",
            CHILD,
            method,
            str(n),
        ],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    total = 0
    for f in out.glob(prefix.name + ".*"):
        text = f.read_text(errors="replace")
        if "desc: Trigger: Client Request: loop" in text:
            m = re.search(r"^summary: (\d+)", text, re.M) or re.search(
                r"^totals: (\d+)", text, re.M
            )
            total = int(m.group(1))
        f.unlink()
    if not total:
        raise SystemExit(f"cg_args: no measured window for {method} under {src}")
    return total / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", help="tree to import ibverbs from (repeatable)")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    srcs = args.src or [str(ROOT / "src")]
    with tempfile.TemporaryDirectory(prefix="cg_args.") as tmp:
        out = Path(tmp)
        lib, toggle = build_helpers(out)
        res = {
            m: [measure(s, m, args.n, lib, toggle, out) for s in srcs] for m in METHODS + DATA_PATH
        }
    print("instructions per call (callgrind, recording double)")
    for i, s in enumerate(srcs):
        print(f"  tree {i}: {s}")
    print(
        f"{'method':<14}" + "".join(f"{'tree ' + str(i):>12}" for i in range(len(srcs))) + "  ratio"
    )
    for m, v in res.items():
        ratios = " ".join(f"{x / v[0]:.3f}" for x in v[1:])
        print(f"{m:<14}" + "".join(f"{x:>12.0f}" for x in v) + f"  {ratios}")
    if args.json:
        Path(args.json).write_text(json.dumps({"trees": srcs, "per_call": res}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
