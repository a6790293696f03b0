"""The package imports without a device, reports what it loaded, and its
error type follows the contract."""

import errno
import os
import pickle

import pytest

import ibverbs as ib


def test_version_is_the_installed_metadata():
    from importlib.metadata import version

    assert ib.__version__ == version("ibverbs")


def test_library_info():
    assert os.path.basename(ib.library_path).startswith("libibverbs.so.1")
    assert ib.library_version is None or ib.library_version[0].isdigit()
    assert set(ib.optional_verbs) >= {"ibv_reg_dmabuf_mr", "ibv_reg_mr_iova2"}
    assert all(isinstance(v, bool) for v in ib.optional_verbs.values())


def test_verbs_error_is_oserror():
    e = ib.VerbsError(errno.EBUSY, "Device or resource busy", "ibv_dealloc_pd")
    assert isinstance(e, OSError)
    assert e.errno == errno.EBUSY and e.operation == "ibv_dealloc_pd"
    assert "ibv_dealloc_pd" in str(e) and "busy" in str(e)
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.errno, e2.strerror, e2.operation) == (e.errno, e.strerror, e.operation)


def test_unknown_device_raises_verbs_error():
    with pytest.raises(ib.VerbsError) as ei:
        ib.Device("no-such-rdma-dev").open()
    assert ei.value.errno == errno.ENODEV
    assert "no-such-rdma-dev" in str(ei.value)


def test_device_name_must_be_str():
    with pytest.raises(TypeError):
        ib.Device(123)
    with pytest.raises(TypeError):
        ib.Context(123)


def test_handles_cannot_be_built_directly():
    for cls in (ib.PD, ib.MR, ib.CQ, ib.QP, ib.SRQ, ib.AH, ib.CompChannel):
        with pytest.raises(TypeError):
            cls()


def test_get_device_list_returns_devices():
    devs = ib.get_device_list()
    assert isinstance(devs, list)
    assert all(isinstance(d, ib.Device) and isinstance(d.name, str) for d in devs)


def test_gid():
    g = ib.Gid("fe80::1")
    assert g.raw == bytes.fromhex("fe80" + "00" * 13 + "01")
    assert g.subnet_prefix == 0xFE80 << 48 and g.interface_id == 1
    assert str(g) == "fe80::1" and ib.Gid(g.raw) == g
    with pytest.raises(ValueError):
        ib.Gid(b"short")
    with pytest.raises(ValueError):
        ib.Gid("not-a-gid")
