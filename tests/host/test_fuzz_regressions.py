"""Inputs the coverage-guided fuzzers (tests/fuzz, make fuzz) found to
break the C core, each kept as a host test against the recording double.
The run that found one had UBSan or ASan on (tools/fuzz); these run on
every build, and under tools/sanitize also with the sanitizers."""

import errno
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


def test_dm_copies_when_the_provider_left_them_null(recording):
    """fuzz_api (10-minute run, 2026-12-06): DM.copy_from on an imported
    DM called a NULL function pointer and crashed (SEGV at pc 0).  The
    copies are ops of the struct ibv_dm itself (ibv_memcpy_from_dm is
    static inline), which the recording double's ibv_import_dm leaves
    NULL, as a provider may: EOPNOTSUPP naming the verb, as for any op a
    provider does not implement; a copy of nothing calls nothing."""

    def body(fake):
        import ibverbs

        out = {}
        with ibverbs.Context("fake0") as ctx:
            dm = ctx.import_dm(0x44, 4096)
            for name, call in (
                ("from", lambda: dm.copy_from(0, 16)),
                ("to", lambda: dm.copy_to(0, b"x" * 16)),
            ):
                try:
                    call()
                except ibverbs.VerbsError as e:
                    out[name] = [e.errno, str(e)]
            out["empty"] = [len(dm.copy_from(0, 0)), dm.copy_to(0, b"")]
            dm.close()
        return out

    out = recording.run(body).ok()
    assert out["from"][0] == errno.EOPNOTSUPP and "ibv_memcpy_from_dm" in out["from"][1]
    assert out["to"][0] == errno.EOPNOTSUPP and "ibv_memcpy_to_dm" in out["to"][1]
    assert out["empty"] == [0, None]
