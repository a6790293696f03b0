"""Device memory (DM, PD.reg_dm_mr) against a real device.  rxe offers
none: where the provider refuses, the test asserts the errno it answered
and skips naming it; the argument checks run everywhere."""

import errno

import pytest

import ibverbs as ib

from support.rdma import UNSUPPORTED, errno_name, raises_each

pytestmark = pytest.mark.integration


def alloc_dm_or_skip(ctx, length=4096):
    try:
        return ctx.alloc_dm(length)
    except ib.VerbsError as e:
        assert e.errno in UNSUPPORTED, e
        attr = ctx.query_device_ex()
        pytest.skip(
            f"device memory: ibv_alloc_dm answered {errno_name(e.errno)} on {ctx.name} "
            f"(max_dm_size={attr.max_dm_size}: the provider has no alloc_dm)"
        )


def test_alloc_dm_argument_checks(ctx):
    raises_each(
        ctx.alloc_dm,
        (ValueError, (0,)),
        (ValueError, (-1,)),
        (TypeError, ("4096",)),
        (ValueError, (4096,), {"log_align_req": 64}),
        (TypeError, (4096,), {"no_such": 1}),
    )


def test_reg_dm_mr_argument_checks(ctx, pd):
    with pytest.raises(TypeError, match="DM"):
        pd.reg_dm_mr(pd, 0, 64, ib.AccessFlags.ZERO_BASED)
    with pytest.raises(TypeError):
        pd.reg_dm_mr(None, 0, 64, 0)


def test_dm_copy_and_register(ctx, pd):
    dm = alloc_dm_or_skip(ctx)
    assert dm.length == 4096 and dm.context is ctx
    data = bytes(range(256)) * 2
    dm.copy_to(64, data)
    assert dm.copy_from(64, len(data)) == data
    dm.copy_to(0, bytearray(b"abcd"))
    assert dm.copy_from(0, 4) == b"abcd"
    with pytest.raises(ValueError, match="beyond"):
        dm.copy_to(4095, b"xy")
    with pytest.raises(ValueError, match="beyond"):
        dm.copy_from(4000, 97)
    with pytest.raises(TypeError):
        dm.copy_to(0, "text")
    access = ib.AccessFlags.ZERO_BASED | ib.AccessFlags.LOCAL_WRITE
    with pytest.raises(ValueError, match="beyond"):
        pd.reg_dm_mr(dm, 4000, 200, access)
    mr = pd.reg_dm_mr(dm, 0, 4096, access)
    assert mr.owner is dm
    with pytest.raises(ib.VerbsError) as ei:
        dm.close()  # the MR uses it
    assert ei.value.errno == errno.EBUSY
    mr.close()
    dm.close()
    with pytest.raises(ib.VerbsError) as ei:
        dm.copy_from(0, 4)
    assert ei.value.errno == errno.EBADF
    with pytest.raises(ib.VerbsError) as ei:
        pd.reg_dm_mr(dm, 0, 64, access)
    assert ei.value.errno == errno.EBADF
