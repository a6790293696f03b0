"""SendWRChain and RecvWRChain on the host (no device; raw-address SGEs):
construction, membership, release and reference keeping.  Posting them is
tested on rxe0 (tests/device/test_wrchain_device.py)."""

import gc
import sys

import pytest

import ibverbs as ib
from ibverbs import SGE, RecvWR, RecvWRChain, SendWR, SendWRChain


def swrs(n):
    return [SendWR(wr_id=i, sg_list=[SGE(0x1000 + 8 * i, 8, lkey=7)]) for i in range(n)]


def test_sequence_of_the_members():
    wrs = swrs(4)
    chain = SendWRChain(wrs)
    assert len(chain) == 4 and not chain.released
    assert list(chain) == wrs and all(a is b for a, b in zip(chain, wrs))
    assert chain[-1] is wrs[3] and chain[0] is wrs[0]
    with pytest.raises(IndexError):
        chain[4]
    assert repr(chain) == "<SendWRChain of 4 SendWR>"
    # Any iterable; a tuple and a generator as well as a list.
    assert len(RecvWRChain(RecvWR(wr_id=i) for i in range(3))) == 3
    assert len(SendWRChain(tuple(swrs(2)))) == 2


def test_members_are_not_copies():
    wrs = swrs(2)
    chain = SendWRChain(wrs)
    wrs[1].wr_id = 99
    assert chain[1].wr_id == 99


def test_bad_arguments():
    with pytest.raises(ValueError, match="empty"):
        SendWRChain([])
    with pytest.raises(TypeError, match="not one SendWR"):
        SendWRChain(SendWR())
    with pytest.raises(TypeError, match="work request 1 must be a SendWR"):
        SendWRChain([SendWR(), RecvWR()])
    with pytest.raises(TypeError, match="must be a RecvWR"):
        RecvWRChain([SendWR()])
    with pytest.raises(TypeError):
        SendWRChain(5)
    with pytest.raises(TypeError):
        SendWRChain()


def test_a_wr_belongs_to_one_chain():
    wrs = swrs(3)
    chain = SendWRChain(wrs)
    with pytest.raises(ValueError, match="work request 1 belongs to a SendWRChain"):
        SendWRChain([SendWR(), wrs[2]])
    dup = SendWR()
    with pytest.raises(ValueError, match="work request 2 appears more than once"):
        SendWRChain([dup, SendWR(), dup])
    # The refused chains let go of what they had claimed.
    assert len(SendWRChain([dup])) == 1
    assert len(chain) == 3


def test_release_frees_the_members():
    wrs = swrs(2)
    chain = SendWRChain(wrs)
    chain.release()
    chain.release()  # idempotent
    assert chain.released and len(chain) == 0
    assert repr(chain) == "<SendWRChain, released>"
    with pytest.raises(IndexError):
        chain[0]
    assert len(SendWRChain(wrs)) == 2  # free again


def test_with_releases():
    wrs = [RecvWR(wr_id=i) for i in range(2)]
    with RecvWRChain(wrs) as chain:
        assert not chain.released
    assert chain.released
    assert len(RecvWRChain(wrs)) == 2


def test_dropping_the_chain_frees_the_members():
    wrs = swrs(2)
    SendWRChain(wrs)
    gc.collect()
    assert len(SendWRChain(wrs)) == 2


def test_chain_holds_its_members():
    wrs = swrs(3)
    before = [sys.getrefcount(w) for w in wrs]
    chain = SendWRChain(wrs)
    assert [sys.getrefcount(w) for w in wrs] == [b + 1 for b in before]
    del wrs
    gc.collect()
    assert [w.wr_id for w in chain] == [0, 1, 2]
    kept = chain[0]
    before = sys.getrefcount(kept)
    del chain
    assert sys.getrefcount(kept) == before - 1


def test_exported():
    assert "SendWRChain" in ib.__all__ and "RecvWRChain" in ib.__all__
