"""SGE built from an MR of the recording double: the lkey, offset and
length checks against the MR, a closed MR, the MR's rest past 4 GiB, and
what an SGE hands the garbage collector; then the raw-address checks
that need no MR."""

from __future__ import annotations

import gc

import pytest

from ibverbs import SGE


def _sge_body(fake):
    import gc

    from support.outcomes import result

    import ibverbs as ib
    from ibverbs import SGE, enums

    ctx = ib.Context("fake0")
    pd = ctx.alloc_pd()
    mr = pd.reg_mr(0x10000, 4096, enums.AccessFlags.LOCAL_WRITE)
    big = pd.reg_mr(0x100000000, 2**33, enums.AccessFlags.LOCAL_WRITE)

    def outcome(fn):
        """The SGE fn() made, against mr, or what it raised."""
        s = result(fn)
        if isinstance(s, list):
            return s
        return [s.addr - mr.addr, s.length, s.lkey == mr.lkey, s.mr is mr]

    out = {
        "whole": outcome(lambda: SGE(mr)),
        "rest": outcome(lambda: SGE(mr, offset=4000)),
        "part": outcome(lambda: SGE(mr, 16, mr.lkey, 32)),
        "wrong lkey": outcome(lambda: SGE(mr, 16, mr.lkey + 1)),
        "bad lkey": outcome(lambda: SGE(mr, 16, "k")),
        "past the end": outcome(lambda: SGE(mr, offset=4097)),
        "runs past": outcome(lambda: SGE(mr, 100, offset=4000)),
        "too long": outcome(lambda: SGE(mr, 2**32)),
        "bad length": outcome(lambda: SGE(mr, -1)),
        "rest of 8 GiB": outcome(lambda: SGE(big)),
        "end of 8 GiB": outcome(lambda: SGE(big, offset=2**33 - 64)),
    }
    owner = bytearray(8)
    s = SGE(mr, 8, owner=owner)
    out["referents"] = sorted(
        type(o).__name__ for o in gc.get_referents(s) if o is mr or o is owner
    )
    out["owner"] = s.owner is owner
    del s
    mr.close()
    out["closed"] = outcome(lambda: SGE(mr))
    big.close()
    pd.close()
    ctx.close()
    return out


@pytest.fixture(scope="module")
def from_mr(recording):
    res = recording.run(_sge_body)
    return res, res.ok()


FROM_MR = {
    "whole": [0, 4096, True, True],
    "rest": [4000, 96, True, True],
    "part": [32, 16, True, True],
    "wrong lkey": [
        "ValueError",
        "lkey {} does not match the MR's lkey {} (an SGE built from an MR takes its lkey)",
    ],
    "bad lkey": ["TypeError", "lkey must be an int, not <class 'str'>"],
    "past the end": [
        "ValueError",
        "offset 4097 exceeds the MR's length 4096 (past the end of the MR)",
    ],
    "runs past": [
        "ValueError",
        "offset 4000 + length 100 exceeds the MR's length 4096 (runs past the end of the MR)",
    ],
    "too long": [
        "ValueError",
        "an SGE holds at most 2**32-1 bytes, not 4294967296: split the range into several SGEs",
    ],
    "bad length": ["ValueError", "length must be in range 0..2**64-1"],
    "rest of 8 GiB": [
        "ValueError",
        "the rest of the MR (8589934592 bytes) does not fit one SGE (2**32-1 bytes at most); "
        "give a length",
    ],
    "closed": ["VerbsError", "[Errno 9] Bad file descriptor: MR is closed"],
}


@pytest.mark.parametrize("case", sorted(FROM_MR))
def test_an_sge_of_an_mr_is_checked_against_it(from_mr, case):
    _, out = from_mr
    want = FROM_MR[case]
    if case == "wrong lkey":
        got = out[case]
        assert got[0] == want[0]
        lkey = int(got[1].split()[1])
        assert got[1] == want[1].format(lkey, lkey - 1)
    else:
        assert out[case] == want


def test_an_sge_of_an_mr_keeps_it_and_its_owner(from_mr):
    res, out = from_mr
    assert out["end of 8 GiB"][1] == 64
    assert out["referents"] == ["MR", "bytearray"] and out["owner"]
    assert res.live == 0, res.live_report


RAW = [
    (lambda: SGE(0x1000, 8, 1, -1), ValueError, "offset must be non-negative, got -1"),
    (
        lambda: SGE(0x1000, 8, 1, -(2**70)),
        ValueError,
        f"offset must be non-negative, got {-(2**70)}",
    ),
    (lambda: SGE(0x1000, 8, 1, 2**70), ValueError, "offset must be in range 0..2**64-1"),
    (lambda: SGE(0x1000, 8, 1, "x"), TypeError, "offset must be an int, not <class 'str'>"),
    (lambda: SGE(2**64 - 8, 8, 1, 16), ValueError, "address + offset overflows 64 bits"),
    (lambda: SGE(0x1000, 8), TypeError, "SGE() from a raw address needs lkey="),
    (lambda: SGE(0x1000), TypeError, "SGE() from a raw address needs a length"),
    (
        lambda: SGE(b"x", 8, 1),
        TypeError,
        "SGE() takes an MR or an int address, not <class 'bytes'>",
    ),
]


@pytest.mark.parametrize("call, exc, words", RAW)
def test_raw_address_refusals(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value).startswith(words)


def test_compare_and_hash_of_raw_sges():
    s = SGE(2**64 - 1, 0, lkey=0)
    # The hash mixes addr, length and lkey; all ones is CPython's error
    # value and becomes -2.
    assert hash(s) == -2
    assert s == SGE(2**64 - 1, 0, lkey=0) and not (s != SGE(2**64 - 1, 0, lkey=0))
    assert s != SGE(2**64 - 1, 0, lkey=1)
    assert s.__eq__(5) is NotImplemented and s.__lt__(s) is NotImplemented
    assert s.mr is None and s.owner is None
    assert [o for o in gc.get_referents(s) if not isinstance(o, type)] == []
