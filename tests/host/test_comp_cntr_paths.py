"""CompCntr's failure paths.  Over a libibverbs that has
ibv_create_comp_cntr but lacks the verbs after it (the recording double,
tests/fakes/recording/, behind the noverbs shim, tests/fakes/noverbs.py,
with those verbs hidden): each method is VerbsError(EOPNOTSUPP) naming
its verb and rdma-core 65, and a close without ibv_destroy_comp_cntr is
refused, the object still open.  On the double itself: each setter's
TypeError, each method's failed verb, and EBADF once closed."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import pytest
from support.fakes import load_fake_module

import ibverbs

noverbs = load_fake_module("noverbs")

# Every completion counter verb but the two that make one (the binding's
# own list of optional verbs).
HIDDEN = tuple(
    v
    for v in ibverbs.optional_verbs
    if "comp_cntr" in v and v not in ("ibv_create_comp_cntr", "_ibv_query_comp_cntr_caps")
)

CHILD = """
import json, ibverbs
out = {}
ctx = ibverbs.Context("fake0")
pd = ctx.alloc_pd()
cq = ctx.create_cq(4)
qp = pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=4))
cc = ctx.create_comp_cntr()
calls = {
    "set": lambda: cc.set(1),
    "set_err": lambda: cc.set_err(1),
    "inc": lambda: cc.inc(1),
    "inc_err": lambda: cc.inc_err(1),
    "read": cc.read,
    "read_err": cc.read_err,
    "attach": lambda: qp.attach_comp_cntr(cc, 0),
    "close": cc.close,
}
for name, fn in calls.items():
    try:
        fn()
    except ibverbs.VerbsError as e:
        out[name] = [e.errno, e.operation, str(e)]
out["closed"] = cc.closed
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def shim(recording, tmp_path_factory):
    why = noverbs.missing_tools()
    if why is not None:
        pytest.skip(f"cannot build the libibverbs shim: {why}")
    return noverbs.build_shim(tmp_path_factory.mktemp("noverbs-rec"), recording.lib)


def test_comp_cntr_verbs_missing_after_create_are_eopnotsupp(shim):
    r = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=noverbs.shim_env(shim, HIDDEN),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(HIDDEN) == 8 and "ibv_destroy_comp_cntr" in HIDDEN
    verbs = {
        "set": "ibv_set_comp_cntr",
        "set_err": "ibv_set_err_comp_cntr",
        "inc": "ibv_inc_comp_cntr",
        "inc_err": "ibv_inc_err_comp_cntr",
        "read": "ibv_read_comp_cntr",
        "read_err": "ibv_read_err_comp_cntr",
        "attach": "ibv_qp_attach_comp_cntr",
    }
    for name, verb in verbs.items():
        e = out[name]
        assert e[:2] == [errno.EOPNOTSUPP, verb], name
        assert "rdma-core 65" in e[2], name
    assert out["close"][:2] == [errno.EOPNOTSUPP, "ibv_destroy_comp_cntr"]
    assert out["closed"] is False


def test_each_comp_cntr_method_refuses_bad_input_failure_and_close(recording):
    def body(fake):
        import errno

        import ibverbs

        out = {}

        def outcome(fn):
            try:
                fn()
            except ibverbs.VerbsError as e:
                return [e.errno, e.operation]
            except (TypeError, ValueError) as e:
                return type(e).__name__
            return "returned"

        with ibverbs.Context("fake0") as ctx:
            cc = ctx.create_comp_cntr()
            setters = ("set", "set_err", "inc", "inc_err")
            for name in setters:
                meth = getattr(cc, name)
                fake.fail(f"{name}_comp_cntr", errno.EIO)
                out[name] = [outcome(lambda: meth("x")), outcome(lambda: meth(1))]
            for name in ("read", "read_err"):
                fake.fail(f"{name}_comp_cntr", errno.EIO)
                out[name] = [outcome(getattr(cc, name))]
            cc.close()
            for name in setters:
                out[name].append(outcome(lambda: getattr(cc, name)(1)))
            for name in ("read", "read_err"):
                out[name].append(outcome(getattr(cc, name)))
        return out

    res = recording.run(body)
    out = res.ok()
    for name in ("set", "set_err", "inc", "inc_err"):
        assert out[name] == [
            "TypeError",
            [errno.EIO, f"ibv_{name}_comp_cntr"],
            [errno.EBADF, None],  # closed: no verb called
        ], name
    for name in ("read", "read_err"):
        assert out[name] == [
            [errno.EIO, f"ibv_{name}_comp_cntr"],
            [errno.EBADF, None],  # closed: no verb called
        ], name
    assert res.live == 0, res.live_report
