"""The extended QP's host side: QPInitAttrEx, the QPEx type, its enum."""

import pytest

import ibverbs as ib


def test_init_attr_ex_defaults_and_fields():
    a = ib.QPInitAttrEx("cq", max_inline_data=32)
    assert isinstance(a, ib.QPInitAttr)
    assert a.send_cq == a.recv_cq == "cq" and a.qp_type == ib.QPType.RC
    assert a.send_ops_flags == ib.QPCreateSendOpsFlags.SEND
    assert a.pd is None and a.create_flags == 0 and a.max_inline_data == 32
    b = ib.QPInitAttrEx("cq", send_ops_flags=ib.QPCreateSendOpsFlags.RDMA_READ, pd="pd")
    assert b.send_ops_flags == ib.QPCreateSendOpsFlags.RDMA_READ and b.pd == "pd"
    assert "send_ops_flags=" in repr(b) and repr(b).startswith("QPInitAttrEx(")
    with pytest.raises(AttributeError):
        b.no_such_field = 1
    with pytest.raises(TypeError):
        ib.QPInitAttrEx("cq", None, None, 1, 1, 1, 1, 0, None, False, None, 4)  # keyword-only


def test_qpex_type():
    assert issubclass(ib.QPEx, ib.QP)
    with pytest.raises(TypeError):
        ib.QPEx()
    for name in ("wr_start", "wr_complete", "wr_abort", "wr_send", "wr_set_sge", "post_send"):
        assert callable(getattr(ib.QPEx, name))
    assert ib.QPCreateSendOpsFlags.RDMA_WRITE == 1 and ib.QPCreateSendOpsFlags.ATOMIC_WRITE == 4096


def test_wr_flush_probe_matches_enum():
    # setup.py defines IBVERBS_HAVE_WR_FLUSH with the headers' FLUSH bit:
    # the enum has FLUSH exactly then (wr_flush raises EOPNOTSUPP otherwise).
    import shutil
    import subprocess

    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    src = "#include <infiniband/verbs.h>\nint probe = IBV_QP_EX_WITH_FLUSH;\n"
    r = subprocess.run(
        [cc, "-fsyntax-only", "-x", "c", "-"], input=src.encode(), capture_output=True
    )
    assert ("FLUSH" in ib.QPCreateSendOpsFlags.__members__) == (r.returncode == 0)
