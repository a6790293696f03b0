"""Handles across os.fork(), on the recording double (tests/fakes/recording/):
in the child every inherited handle is closed without a verb (the
os.register_at_fork hook of core/handle.c), says so when used, and new
objects work; the parent's are untouched.  The child exits normally (not
os._exit), as a forked worker would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import recording
import ibverbs

fake = recording.Fake(os.environ["IBVERBS_LIBIBVERBS"])
ctx = ibverbs.Context("fake0")
pd = ctx.alloc_pd()
cq = ctx.create_cq(8)
r, w = os.pipe()
fake.clear()
pid = os.fork()
if pid == 0:
    os.close(r)
    out = {"closed": [ctx.closed, pd.closed, cq.closed]}
    try:
        pd.reg_mr(0x1000, 64, 0)
    except ibverbs.VerbsError as e:
        out["use"] = [e.errno, str(e)]
    pd.close()  # already closed: no verb, no error
    cq.close()
    ctx.close()
    with ibverbs.Context("fake0") as fresh, fresh.alloc_pd() as p2:
        out["fresh"] = [fresh.closed, p2.closed]
    out["verbs"] = [rec.verb for rec in fake.records()]
    os.write(w, json.dumps(out).encode())
    os.close(w)
    sys.exit(0)
os.close(w)
child = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    child += chunk
_, status = os.waitpid(pid, 0)
parent = {"closed": [ctx.closed, pd.closed, cq.closed], "lkey": pd.reg_mr(0x1000, 64, 0).lkey > 0}
cq.close(); pd.close(); ctx.close()
print(json.dumps({"status": status, "child": json.loads(child), "parent": parent,
                  "parent_verbs": [rec.verb for rec in fake.records()]}))
"""


def test_inherited_handles_are_closed_in_the_child_without_a_verb(recording):
    fakes = str(Path(__file__).resolve().parents[1] / "fakes")
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, fakes],
        env=recording.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["status"] == 0
    child = got["child"]
    assert child["closed"] == [True, True, True]
    eb, msg = child["use"]
    assert eb == 9  # EBADF
    assert msg.endswith(
        "PD is closed (in a child process, the handles inherited across fork() are closed)"
    )
    assert child["fresh"] == [False, False]
    # only the fresh objects' verbs: nothing inherited was destroyed
    assert child["verbs"] == [
        "get_device_list",
        "get_device_name",
        "open_device",
        "free_device_list",
        "alloc_pd",
        "dealloc_pd",
        "close_device",
    ]
    assert got["parent"] == {"closed": [False, False, False], "lkey": True}
    assert got["parent_verbs"] == ["reg_mr", "dereg_mr", "destroy_cq", "dealloc_pd", "close_device"]
