"""An older rdma-core on a real device: with a libibverbs that lacks
ibv_reg_dmabuf_mr (or every optional verb), ibverbs imports, everything else
works, and only the calls that need a missing verb raise VerbsError
(EOPNOTSUPP) naming it: PD.reg_dmabuf_mr, Context.query_gid_ex, reg_mr with
optional-range access bits, is_fork_initialized (README, Portability).

The older library is emulated by tests/fakes/noverbs_shim.c (see
tests/host/test_portability.py, which checks the import half on the host),
loaded in a child process through IBVERBS_LIBIBVERBS.
"""

import errno
import json
import subprocess
import sys

import pytest

import ibverbs as ib
from support.fakes import load_fake_module
from support.timeouts import scaled

pytestmark = pytest.mark.integration


CHILD = r"""
import errno, json, os, sys
import ibverbs as ib

out = {"optional_verbs": ib.optional_verbs}
with ib.Context(sys.argv[1]) as ctx, ctx.alloc_pd() as pd:
    buf = bytearray(4096)
    with ib.reg_tensor(pd, buf, ib.AccessFlags.LOCAL_WRITE) as mr:
        out["reg_mr_lkey"] = mr.lkey
    cq = ctx.create_cq(16)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq))
    out["qp_num"] = qp.qp_num
    qp.close()
    cq.close()
    fd = os.open("/dev/null", os.O_RDONLY)
    try:
        pd.reg_dmabuf_mr(0, 4096, 0x10000, fd, ib.AccessFlags.LOCAL_WRITE)
        out["reg_dmabuf_mr"] = "registered"
    except ib.VerbsError as e:
        out["reg_dmabuf_mr"] = {"errno": e.errno, "operation": e.operation,
                                "message": str(e)}
    finally:
        os.close(fd)
    calls = {
        "query_gid_ex": lambda: ctx.query_gid_ex(1, 0),
        "reg_mr_relaxed": lambda: ib.reg_tensor(
            pd, buf, ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.RELAXED_ORDERING
        ).close(),
        "is_fork_initialized": ib.is_fork_initialized,
    }
    for name, call in calls.items():
        try:
            call()
            out[name] = "ok"
        except ib.VerbsError as e:
            out[name] = {"errno": e.errno, "operation": e.operation,
                         "message": str(e)}
print(json.dumps(out))
"""


def _refused(err, verb, since):
    """err is VerbsError(EOPNOTSUPP) raised by ibverbs because the loaded
    library lacks verb, not an error from the provider."""
    assert isinstance(err, dict), err
    assert err["errno"] == errno.EOPNOTSUPP
    assert err["operation"] == verb
    assert "not exported by the loaded libibverbs" in err["message"]
    assert since in err["message"]


OPTIONAL = ("ibv_reg_dmabuf_mr", "ibv_reg_mr_iova2", "_ibv_query_gid_ex", "ibv_is_fork_initialized")


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    noverbs = load_fake_module("noverbs")
    why = noverbs.missing_tools()
    if why is not None:
        pytest.skip(f"cannot build the libibverbs shim: {why}")
    path = noverbs.build_shim(tmp_path_factory.mktemp("noverbs"), ib.library_path)
    return noverbs, path


@pytest.mark.parametrize(
    "hide", [("ibv_reg_dmabuf_mr",), OPTIONAL], ids=["no-dmabuf", "no-optional-verbs"]
)
def test_without_newer_verbs_only_the_calls_that_need_them_raise(shim, device_name, hide):
    noverbs, path = shim
    r = subprocess.run(
        [sys.executable, "-c", CHILD, device_name],
        env=noverbs.shim_env(path, hide),
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    # Missing: the hidden verbs, and those the real library lacks (this
    # rdma-core may predate the newest optional verbs).
    absent = {k for k, found in ib.optional_verbs.items() if not found}
    assert {k for k, found in got["optional_verbs"].items() if not found} == set(hide) | absent
    # Everything else works through the older library ...
    assert isinstance(got["reg_mr_lkey"], int) and got["qp_num"] > 0
    # ... and only the calls that need a missing verb raise.
    _refused(got["reg_dmabuf_mr"], "ibv_reg_dmabuf_mr", "rdma-core 34")
    for call, verb, since in [
        ("query_gid_ex", "_ibv_query_gid_ex", "rdma-core 32"),
        ("reg_mr_relaxed", "ibv_reg_mr_iova2", "rdma-core 29"),
        ("is_fork_initialized", "ibv_is_fork_initialized", "rdma-core 35"),
    ]:
        if verb in hide:
            _refused(got[call], verb, since)
        else:
            assert got[call] == "ok", (call, got[call])


# Multicast, replies from a WC and the data-ordering query (test_mcast_device.py,
# test_ud_reply.py) with a libibverbs that lacks their symbols.
MCAST_CHILD = r"""
import json, sys
import ibverbs as ib

out = {}
with ib.Context(sys.argv[1]) as ctx, ctx.alloc_pd() as pd:
    cq = ctx.create_cq(4)
    qp = pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, qp_type=ib.QPType.UD))
    wc = ib.WC(src_qp=1)
    calls = {
        "ibv_attach_mcast": lambda: qp.attach_mcast("::ffff:239.1.2.3"),
        "ibv_detach_mcast": lambda: qp.detach_mcast("::ffff:239.1.2.3"),
        "ibv_init_ah_from_wc": lambda: ctx.init_ah_from_wc(1, wc, bytes(40)),
        "ibv_create_ah_from_wc": lambda: pd.create_ah_from_wc(wc, bytes(40), 1),
        "ibv_query_qp_data_in_order": lambda: qp.query_data_in_order(0),
    }
    for name, call in calls.items():
        try:
            call()
            out[name] = "ok"
        except ib.VerbsError as e:
            out[name] = {"errno": e.errno, "operation": e.operation, "message": str(e)}
    qp.close()
    cq.close()
print(json.dumps(out))
"""
MCAST_SINCE = {
    "ibv_attach_mcast": "libibverbs 1.1",
    "ibv_detach_mcast": "libibverbs 1.1",
    "ibv_init_ah_from_wc": "libibverbs 1.1",
    "ibv_create_ah_from_wc": "libibverbs 1.1",
    "ibv_query_qp_data_in_order": "rdma-core 41",
}


def test_without_the_multicast_and_from_wc_verbs_only_their_calls_raise(shim, device_name):
    noverbs, path = shim
    r = subprocess.run(
        [sys.executable, "-c", MCAST_CHILD, device_name],
        env=noverbs.shim_env(path, tuple(MCAST_SINCE)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    for verb, since in MCAST_SINCE.items():
        _refused(got[verb], verb, since)
