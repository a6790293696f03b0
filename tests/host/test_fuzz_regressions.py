"""Inputs the coverage-guided fuzzers (tests/fuzz, make fuzz) found to
break the C core, each kept as a host test against the recording double.
The run that found one had UBSan or ASan on (tools/fuzz); these run on
every build, and under tools/sanitize also with the sanitizers."""

import struct

from ibverbs import enums

# struct ibv_flow_attr: comp_mask, type, size, priority, num_of_specs,
# port, flags (20 bytes); a spec starts with its type (u32) and size (u16).
_ATTR = struct.Struct("=IIHHBBxxI")
_SPEC = struct.Struct("=IH")


def _flow_bytes(*specs: tuple[int, int]) -> bytes:
    """A flow attr in raw bytes with specs of (type, size), zero-filled."""
    body = b"".join(_SPEC.pack(t, n) + bytes(n - _SPEC.size) for t, n in specs)
    size = _ATTR.size + len(body)
    return _ATTR.pack(0, int(enums.FlowAttrType.NORMAL), size, 0, len(specs), 1, 0) + body


def test_create_flow_action_spec_at_an_unaligned_offset(recording):
    """fuzz_flow: an odd-sized spec puts the next one at an odd offset; the
    action spec's size was read through a misaligned struct pointer
    (UBSan: misaligned member access in flow_fill_one).  Now read from
    the copied header: the size check answers as for any offset."""
    raw = _flow_bytes((int(enums.FlowSpecType.ETH), 9), (int(enums.FlowSpecType.ACTION_COUNT), 8))

    def body(fake, raw_hex):
        import ibverbs

        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            attr = ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)
            with pd.create_qp(attr) as qp:
                try:
                    qp.create_flow(bytes.fromhex(raw_hex))
                except ValueError as e:
                    return str(e)
        return None

    res = recording.run(body, raw.hex())
    assert res.ok() == "spec 1 has size 8, not 16"
    assert res.calls("create_flow") == []
    assert res.live == 0
