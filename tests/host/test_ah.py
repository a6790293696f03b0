"""Address handles against the recording double (tests/fakes/recording/):
init_ah_from_wc and create_ah_from_wc pass the WC and the GRH.  A check of
what the binding hands libibverbs and what it makes of the answers, not
evidence that a provider runs the verbs.  On rxe:
tests/device/test_ud_reply.py."""

from __future__ import annotations

import errno
import ipaddress
import struct
import sys

import ibverbs

SGID = ipaddress.IPv6Address("fe80::1:2:3:4").packed


DGID = ipaddress.IPv6Address("fe80::a:b:c:d").packed


def grh_bytes():
    """An IPv6 GRH: version 6, traffic class 0x2a, flow label 0x12345,
    hop limit 17, then the sender's and the receiver's GIDs."""
    vtf = (6 << 28) | (0x2A << 20) | 0x12345
    return struct.pack(">IHBB", vtf, 88, 0x1B, 17) + SGID + DGID


def test_init_and_create_ah_from_wc_pass_the_wc_and_grh(recording):
    def body(fake, grh):
        import errno

        import ibverbs as ib

        grh = bytes.fromhex(grh)
        wc = ib.WC(
            wr_id=5,
            opcode=ib.WCOpcode.RECV,
            vendor_err=0,
            byte_len=88,
            imm_data=0x01020304,
            qp_num=77,
            src_qp=0xABCDE,
            wc_flags=ib.WCFlags.GRH | ib.WCFlags.WITH_IMM,
            pkey_index=3,
            slid=0x1234,
            sl=5,
            dlid_path_bits=9,
        )
        with ib.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            attr = ctx.init_ah_from_wc(2, wc, bytearray(grh) + b"tail bytes are not read")
            fields = {k: getattr(attr, k) for k in attr.__slots__}
            fields["dgid"] = fields["dgid"].raw.hex()
            with pd.create_ah_from_wc(wc, memoryview(grh), port=1) as ah:
                handle = ah.handle
            fake.fail("create_ah_from_wc", errno.EPROTONOSUPPORT)
            try:
                pd.create_ah_from_wc(wc, grh, 1)
            except ib.VerbsError as e:
                failed = [e.errno, e.operation]
        return {"attr": fields, "handle": handle, "failed": failed}

    res = recording.run(body, grh_bytes().hex())
    res.ok()
    wc_fields = {
        "wr_id": 5,
        "status": 0,
        "opcode": int(ibverbs.WCOpcode.RECV),
        "vendor_err": 0,
        "byte_len": 88,
        # ibv_wc holds immediate data big-endian (WC takes it in host order)
        "imm_data": int.from_bytes((0x01020304).to_bytes(4, "big"), sys.byteorder),
        "qp_num": 77,
        "src_qp": 0xABCDE,
        "wc_flags": int(ibverbs.WCFlags.GRH | ibverbs.WCFlags.WITH_IMM),
        "pkey_index": 3,
        "slid": 0x1234,
        "sl": 5,
        "dlid_path_bits": 9,
    }
    init = res.one("init_ah_from_wc")
    assert init["port_num"] == 2 and init["context"] != 0
    assert init.prefixed("wc.") == wc_fields
    assert init["grh"] == grh_bytes()  # exactly the 40 bytes, nothing after
    made = res.calls("create_ah_from_wc")
    assert len(made) == 2
    assert made[0]["port_num"] == 1 and made[0]["pd"] != 0
    assert made[0].prefixed("wc.") == wc_fields and made[0]["grh"] == grh_bytes()
    assert made[1]["injected_errno"] == errno.EPROTONOSUPPORT
    assert res.value["failed"] == [errno.EPROTONOSUPPORT, "ibv_create_ah_from_wc"]
    # The AHAttr is the verb's answer, field for field.
    a = res.value["attr"]
    assert a["dgid"] == SGID.hex() and a["is_global"] is True
    assert (a["sgid_index"], a["port_num"], a["hop_limit"]) == (1, 2, 17)
    assert (a["traffic_class"], a["flow_label"]) == (0x2A, 0x12345)
    assert (a["dlid"], a["sl"], a["src_path_bits"]) == (0x1234, 5, 9)
    assert res.one("destroy_ah")
    assert res.live == 0, res.live_report
