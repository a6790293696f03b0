"""The column readers (wr/columns.c) behind SendBatch, RecvBatch and
CQ.poll_into, against the recording double: every integer format and item
size, aligned and not, signed and not, read-only buffers, torch-like
tensors, scalars, and each refusal with its message.  The values a column
gives are read back from the WRs the double logged."""

from __future__ import annotations

import pytest

FORMATS = "bBhHiIlLqQ"


def _columns_body(fake, formats):
    """Each case builds a SEND batch over a 64 KiB MR from columns of one
    kind and posts it; what the double logs are the values read."""
    import array
    import ctypes
    import struct

    from support.outcomes import raised, rts

    import ibverbs
    from ibverbs import SendBatch, enums

    buf = ctypes.create_string_buffer(65536)
    ctx = ibverbs.Context("fake0")
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(256)
    mr = pd.reg_mr(ctypes.addressof(buf), 65536, enums.AccessFlags.LOCAL_WRITE)
    qp = rts(pd.create_qp(ibverbs.QPInitAttr(cq, max_send_wr=64)))
    send = enums.WROpcode.SEND

    def unaligned(fmt, values):
        """A writable column of FMT one byte past an aligned address."""
        size = struct.calcsize(fmt)
        raw = bytearray(1 + size * len(values))
        struct.pack_into("=" + fmt * len(values), raw, 1, *values)
        return memoryview(raw)[1:].cast(fmt)

    class Tensor:
        """Torch's duck type as ibverbs._tensor reads it: data_ptr(),
        dtype, device, dim(), is_contiguous(), numel(), element_size()."""

        class dtype:  # noqa: N801 - torch's attribute name
            is_floating_point = False
            is_complex = False
            is_signed = False

        def __init__(self, ptr, n, size, keep=None):
            self.ptr, self.n, self.size, self.keep = ptr, n, size, keep

        def data_ptr(self):
            return self.ptr

        def dim(self):
            return 1

        def is_contiguous(self):
            return True

        def numel(self):
            return self.n

        def element_size(self):
            return self.size

    def post(local, lengths, **kw):
        fake.clear()
        b = SendBatch(mr, local, lengths, opcode=send, **kw)
        n = b.post(qp)
        cq.poll(64)
        return n

    out = {"base": ctypes.addressof(buf), "lkey": mr.lkey, "posted": {}, "logs": {}}

    def case(name, local, lengths, **kw):
        out["posted"][name] = post(local, lengths, **kw)
        rec = fake.one("post_send")
        out["logs"][name] = [rec.prefixed(f"wr[{i}].") for i in range(rec["count"])]

    for fmt in formats:
        case(fmt, array.array(fmt, [0, 16, 100]), array.array(fmt, [8, 16, 32]))
    for fmt in "hHiIqQ":
        case("unaligned " + fmt, unaligned(fmt, [0, 16, 100]), unaligned(fmt, [8, 16, 32]))
    ro = bytes(array.array("I", [48, 64]))
    case("read-only", memoryview(ro).cast("I"), memoryview(ro).cast("I"))
    keep = (ctypes.c_uint16 * 3)(4, 40, 400)
    case("tensor", Tensor(ctypes.addressof(keep), 3, 2, keep), 12)
    case("scalar", array.array("q", [7, 9]), 5)

    fake.clear()
    refused = {}
    for fmt in "bhiq":
        refused["negative " + fmt] = raised(
            lambda fmt=fmt: SendBatch(mr, array.array(fmt, [0, 8, -3]), 8, opcode=send)
        )
    for fmt in "hiq":
        refused["unaligned negative " + fmt] = raised(
            lambda fmt=fmt: SendBatch(mr, unaligned(fmt, [0, -7, 8]), 8, opcode=send)
        )
    refused["too big"] = raised(lambda: SendBatch(mr, array.array("q", [0]), 2**64, opcode=send))
    refused["scalar negative"] = raised(
        lambda: SendBatch(mr, array.array("q", [0]), -1, opcode=send)
    )
    refused["rows"] = raised(
        lambda: SendBatch(mr, array.array("q", [0, 8, 16]), array.array("q", [8, 8]), opcode=send)
    )
    refused["empty"] = raised(lambda: SendBatch(mr, array.array("i"), 8, opcode=send))
    refused["address"] = raised(lambda: SendBatch(mr, Tensor(2**64, 1, 8), 8, opcode=send))
    refused["size"] = raised(lambda: SendBatch(mr, Tensor(8, 1, 2**70), 8, opcode=send))
    refused["numel"] = raised(lambda: SendBatch(mr, Tensor(8, -1, 8), 8, opcode=send))
    refused["float"] = raised(lambda: SendBatch(mr, array.array("d", [0.0]), 8, opcode=send))
    refused["strided"] = raised(
        lambda: SendBatch(mr, memoryview(array.array("q", [0, 1, 2, 3]))[::2], 8, opcode=send)
    )
    refused["list"] = raised(lambda: SendBatch(mr, [0, 8], 8, opcode=send))
    refused["read-only into"] = raised(lambda: cq.poll_into(wr_id=memoryview(bytes(16)).cast("Q")))
    out["refused"] = refused
    out["log_after_refusals"] = fake.log_text()
    for o in (qp, mr, cq, pd, ctx):
        o.close()
    return out


@pytest.fixture(scope="module")
def columns(recording):
    res = recording.run(_columns_body, FORMATS)
    return res, res.ok()


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_integer_format_gives_its_values(columns, fmt):
    res, out = columns
    w = out["logs"][fmt]
    assert out["posted"][fmt] == 3
    assert [x["sg_list[0].addr"] - out["base"] for x in w] == [0, 16, 100]
    assert [x["sg_list[0].length"] for x in w] == [8, 16, 32]
    assert [x["sg_list[0].lkey"] for x in w] == [out["lkey"]] * 3


@pytest.mark.parametrize("fmt", "hHiIqQ")
def test_an_unaligned_column_is_read_item_by_item(columns, fmt):
    _, out = columns
    w = out["logs"]["unaligned " + fmt]
    assert [x["sg_list[0].addr"] - out["base"] for x in w] == [0, 16, 100]
    assert [x["sg_list[0].length"] for x in w] == [8, 16, 32]


def test_read_only_buffers_tensors_and_scalars(columns):
    _, out = columns
    w = out["logs"]["read-only"]
    assert [(x["sg_list[0].addr"] - out["base"], x["sg_list[0].length"]) for x in w] == [
        (48, 48),
        (64, 64),
    ]
    w = out["logs"]["tensor"]
    assert [x["sg_list[0].addr"] - out["base"] for x in w] == [4, 40, 400]
    assert [x["sg_list[0].length"] for x in w] == [12] * 3
    w = out["logs"]["scalar"]
    assert [(x["sg_list[0].addr"] - out["base"], x["sg_list[0].length"]) for x in w] == [
        (7, 5),
        (9, 5),
    ]


REFUSED = {
    "negative b": ["ValueError", "local: row 2 is negative (-3)"],
    "negative h": ["ValueError", "local: row 2 is negative (-3)"],
    "negative i": ["ValueError", "local: row 2 is negative (-3)"],
    "negative q": ["ValueError", "local: row 2 is negative (-3)"],
    "unaligned negative h": ["ValueError", "local: row 1 is negative (-7)"],
    "unaligned negative i": ["ValueError", "local: row 1 is negative (-7)"],
    "unaligned negative q": ["ValueError", "local: row 1 is negative (-7)"],
    "too big": ["ValueError", f"lengths must be in 0..2**64-1, got {2**64}"],
    "scalar negative": ["ValueError", "lengths must be in 0..2**64-1, got -1"],
    "rows": [
        "ValueError",
        "lengths has 2 rows where the batch has 3: every column must have one value per request",
    ],
    "empty": ["ValueError", "local has no rows"],
    "address": ["OverflowError", "int too big to convert"],
    "size": [
        "ValueError",
        f"local must be a 1-D C-contiguous array of integers: its element_size() is {2**70}",
    ],
    "numel": [
        "ValueError",
        "local must be a 1-D C-contiguous array of integers: its numel() is -1",
    ],
    "float": [
        "ValueError",
        "local must be a 1-D C-contiguous array of integers: its item format is 'd'",
    ],
    "strided": [
        "ValueError",
        "local must be a 1-D C-contiguous array of integers: it is strided "
        "(numpy.ascontiguousarray makes a copy)",
    ],
    "list": [
        "TypeError",
        "local must be an array of integers (numpy, array.array, memoryview, "
        "a torch CPU tensor) or an int, not list",
    ],
    "read-only into": ["ValueError", "wr_id is read-only: completions are written into it"],
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_bad_columns_are_refused_with_their_message(columns, case):
    _, out = columns
    assert out["refused"][case] == REFUSED[case]


def test_refused_columns_reach_no_verb_and_leak_nothing(columns):
    res, out = columns
    assert out["log_after_refusals"] == ""
    assert res.live == 0, res.live_report


def test_a_broken_int_column_is_a_system_error(recording):
    """What ibverbs._tensor.int_column returns is checked, not trusted: a
    replacement that returns anything but its 5-tuple is a SystemError."""

    def body(fake):
        import array

        from ibverbs import SendBatch, _tensor, enums

        _tensor.int_column = lambda obj, name, writable: (0, 1)
        try:
            SendBatch(None, array.array("q", [0]), 8, lkey=1, opcode=enums.WROpcode.SEND)
        except SystemError as e:
            return str(e)
        return "built"

    assert recording.run(body).ok() == "_tensor.int_column returned a bad value"
