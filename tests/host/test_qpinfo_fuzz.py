"""QPInfo.from_bytes on untrusted input: a million random inputs, edge
values, and hypothesis.

A QPInfo record comes from the peer over an out-of-band channel, so it is
untrusted: from_bytes must accept exactly the 28-byte layout with valid
fields (qp_num and psn below 2**24, port 1..255, mtu 1..5) and reject
everything else with ValueError, never another exception.  Accepted
records round-trip: to_bytes() gives back the input.

The million inputs are split across worker processes (this file is also
the worker: ``python test_qpinfo_fuzz.py SEED COUNT``) so the test takes a
few seconds.  Half are of a wrong length; half are 28 bytes with fields
biased towards the limits.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibverbs import QPInfo

TOTAL = int(os.environ.get("IBVERBS_FUZZ_INPUTS", "1000000"))
WIRE = struct.Struct(">IIH16sBB")
U24 = 1 << 24


def valid_fields(qp_num, psn, port, mtu) -> bool:
    return qp_num < U24 and psn < U24 and port >= 1 and 1 <= mtu <= 5


def check(data) -> bool:
    """from_bytes(data) agrees with the oracle; True when accepted."""
    raw = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else None
    ok = (
        raw is not None
        and len(raw) == 28
        and valid_fields(*(lambda f: (f[0], f[1], f[4], f[5]))(WIRE.unpack(raw)))
    )
    try:
        q = QPInfo.from_bytes(data)
    except ValueError:
        assert not ok, f"valid record refused: {raw!r}"
        return False
    assert ok, f"invalid input accepted: {data!r}"
    assert q.to_bytes() == raw
    assert (q.qp_num, q.psn, q.port, int(q.mtu)) == (lambda f: (f[0], f[1], f[4], f[5]))(
        WIRE.unpack(raw)
    )
    return True


def fuzz(seed: int, count: int) -> dict:
    """count pseudo-random inputs from seed; {"accepted": n, "refused": n}."""
    import random

    rng = random.Random(seed)
    blob = rng.randbytes(count * 32)
    from_bytes = QPInfo.from_bytes
    accepted = refused = 0
    for i in range(count):
        off = i * 32
        c = blob[off + 29]
        if c & 1:
            # A wrong length (0..59, never 28), as bytes/bytearray/memoryview.
            n = blob[off] % 60
            data = blob[off : off + (29 if n == 28 else n)]
            if c & 6 == 2:
                data = bytearray(data)
            elif c & 6 == 4:
                data = memoryview(data)
            try:
                from_bytes(data)
            except ValueError:
                refused += 1
                continue
            raise AssertionError(f"accepted {len(data)} bytes: {bytes(data)!r}")
        d = bytearray(blob[off : off + 28])
        # Bias the fields towards what a real record holds, and their limits.
        if c & 2:
            d[0] = 0 if c & 64 else d[0] & 1  # qp_num < 2**24 or just over
        if c & 4:
            d[4] = 0 if c & 128 else d[4] & 1  # psn
        if c & 8:
            d[26] &= 1  # port 0 or 1
        if c & 16:
            d[27] &= 7  # mtu 0..7
        if c & 32:
            d[27] = blob[off + 30] % 8
        data = bytes(d)
        good = d[0] == 0 and d[4] == 0 and d[26] != 0 and 1 <= d[27] <= 5
        try:
            q = from_bytes(data)
        except ValueError:
            if good:
                raise AssertionError(f"refused a valid record: {data!r}") from None
            refused += 1
            continue
        if not good or q.to_bytes() != data:
            raise AssertionError(f"accepted or mangled {data!r}: {q!r}")
        accepted += 1
    return {"accepted": accepted, "refused": refused}


@pytest.mark.thread_unsafe(
    reason="already spreads a million inputs over a process per CPU: "
    "copies in threads would only multiply its time"
)
def test_a_million_random_inputs():
    """TOTAL inputs in parallel worker processes; all agree with the
    oracle, some are accepted and most refused."""
    workers = max(1, min(os.cpu_count() or 1, 8))
    share = TOTAL // workers
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                str(1000 + k),
                str(share + (TOTAL % workers if k == 0 else 0)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(workers)
    ]
    total = {"accepted": 0, "refused": 0}
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        res = json.loads(out)
        for k in total:
            total[k] += res[k]
    assert total["accepted"] + total["refused"] == TOTAL
    assert total["accepted"] > TOTAL // 100 and total["refused"] > TOTAL // 2


@pytest.mark.parametrize("qp_num", [0, 1, U24 - 1, U24, 2**32 - 1])
@pytest.mark.parametrize("psn", [0, U24 - 1, U24])
@pytest.mark.parametrize("port", [0, 1, 255])
@pytest.mark.parametrize("mtu", [0, 1, 5, 6, 255])
def test_field_limits(qp_num, psn, port, mtu):
    data = WIRE.pack(qp_num, psn, 0xFFFF, b"\xfe" * 16, port, mtu)
    assert check(data) == valid_fields(qp_num, psn, port, mtu)
    assert check(bytearray(data)) == valid_fields(qp_num, psn, port, mtu)
    assert check(memoryview(data)) == valid_fields(qp_num, psn, port, mtu)


@pytest.mark.parametrize(
    "data",
    [
        None,
        0,
        28,
        "x" * 28,
        [0] * 28,
        (0,) * 28,
        object(),
        1.5,
        b"",
        bytes(27),
        bytes(29),
        bytes(10**6),
        memoryview(bytes(56))[::2],
    ],
)
def test_not_a_record(data):
    with pytest.raises(ValueError):
        QPInfo.from_bytes(data)


@settings(max_examples=1000, deadline=None, database=None)
@given(st.binary(max_size=64))
def test_hypothesis_any_bytes(data):
    check(data)


@settings(max_examples=1000, deadline=None, database=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.integers(0, 0xFFFF),
    st.binary(min_size=16, max_size=16),
    st.integers(0, 255),
    st.integers(0, 255),
)
def test_hypothesis_structured(qp_num, psn, lid, gid, port, mtu):
    data = WIRE.pack(qp_num, psn, lid, gid, port, mtu)
    assert check(data) == valid_fields(qp_num, psn, port, mtu)


@settings(max_examples=500, deadline=None, database=None)
@given(
    st.integers(0, U24 - 1),
    st.integers(0, U24 - 1),
    st.integers(0, 0xFFFF),
    st.binary(min_size=16, max_size=16),
    st.integers(1, 255),
    st.integers(1, 5),
)
def test_hypothesis_round_trip(qp_num, psn, lid, gid, port, mtu):
    q = QPInfo(qp_num, psn, lid, gid, port, mtu)
    assert QPInfo.from_bytes(q.to_bytes()) == q


if __name__ == "__main__":
    print(json.dumps(fuzz(int(sys.argv[1]), int(sys.argv[2]))))
