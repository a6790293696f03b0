"""Flow steering rules serialized as verbs.h lays them out, checked
against struct sizes and offsets from the compiled headers (a C program
built here, independent of the module's own _flow_layouts), and the
extended-CQ and device-memory pieces that need no device.  Against the
recording double (tests/fakes/recording/): create_flow's attr and every
spec field, and the ESP flow action's fields."""

import errno
import ipaddress
import shutil
import struct
import subprocess

import pytest

import ibverbs
import ibverbs as ib
from ibverbs import _ibverbs, enums
from ibverbs.flow import LAYOUTS

SPECS = {
    "eth": "eth",
    "ipv4": "ipv4",
    "ipv4_ext": "ipv4_ext",
    "ipv6": "ipv6",
    "esp": "esp",
    "tcp_udp": "tcp_udp",
    "gre": "gre",
    "mpls": "mpls",
    "tunnel": "tunnel",
}


@pytest.fixture(scope="module")
def c_layouts(tmp_path_factory):
    """{name: (sizeof, offsetof val, offsetof mask, sizeof val)} as a C
    compiler sees <infiniband/verbs.h>."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("flow")
    lines = ['printf("attr %zu 0 0 0\\n", sizeof(struct ibv_flow_attr));']
    for name, kind in SPECS.items():
        st = f"struct ibv_flow_spec_{kind}"
        lines.append(
            f'printf("{name} %zu %zu %zu %zu\\n", sizeof({st}), offsetof({st}, val), '
            f"offsetof({st}, mask), sizeof((({st} *)0)->val));"
        )
    lines.append(
        'printf("action_tag %zu %zu 0 4\\n", sizeof(struct ibv_flow_spec_action_tag), '
        "offsetof(struct ibv_flow_spec_action_tag, tag_id));"
    )
    lines.append('printf("action_drop %zu 0 0 0\\n", sizeof(struct ibv_flow_spec_action_drop));')
    for name, st, field in (
        ("action_handle", "struct ibv_flow_spec_action_handle", "action"),
        ("action_count", "struct ibv_flow_spec_counter_action", "counters"),
    ):
        lines.append(
            f'printf("{name} %zu %zu 0 %zu\\n", sizeof({st}), offsetof({st}, {field}), '
            "sizeof(void *));"
        )
    src = d / "layouts.c"
    src.write_text(
        "#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\n"
        "int main(void) {\n" + "\n".join(lines) + "\nreturn 0; }\n"
    )
    exe = d / "layouts"
    subprocess.run(["cc", "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {w[0]: tuple(int(x) for x in w[1:]) for w in (ln.split() for ln in out.splitlines())}


def test_module_layouts_match_the_headers(c_layouts):
    assert _ibverbs._flow_layouts() == c_layouts
    assert LAYOUTS == c_layouts


def test_flow_attr_bytes(c_layouts):
    specs = [
        ib.FlowSpecEth(dst_mac="01:02:03:04:05:06", ether_type=0x0800),
        ib.FlowSpecIPv4(src_ip="10.0.0.1", dst_ip="10.0.0.2"),
        ib.FlowSpecTCPUDP(dst_port=4791, udp=True),
        ib.FlowSpecActionTag(0x1234),
        ib.FlowSpecActionDrop(),
    ]
    attr = ib.FlowAttr(
        type=ib.FlowAttrType.NORMAL, priority=3, port=1, flags=ib.FlowFlags.DONT_TRAP, specs=specs
    )
    b = attr.to_bytes()
    sizes = [c_layouts[k][0] for k in ("eth", "ipv4", "tcp_udp", "action_tag", "action_drop")]
    head = c_layouts["attr"][0]
    assert len(b) == head + sum(sizes)
    # struct ibv_flow_attr: comp_mask, type, size, priority, num_of_specs, port, flags
    comp_mask, typ, size, prio, nspecs, port, flags = struct.unpack_from("@IiHHBBI", b, 0)
    assert (comp_mask, typ, size, prio, nspecs, port) == (0, 0, len(b), 3, 5, 1)
    assert flags == ib.FlowFlags.DONT_TRAP
    off = head
    # eth: header, then val and mask at the C offsets, network order
    size_eth, v, m, fsz = c_layouts["eth"]
    t, sz = struct.unpack_from("=IH", b, off)
    assert (t, sz) == (ib.FlowSpecType.ETH, size_eth)
    dst, srcm, etype, vlan = struct.unpack_from("!6s6sHH", b, off + v)
    assert dst == bytes([1, 2, 3, 4, 5, 6]) and srcm == bytes(6)
    assert etype == 0x0800 and vlan == 0
    mdst, msrc, metype, mvlan = struct.unpack_from("!6s6sHH", b, off + m)
    assert mdst == b"\xff" * 6 and msrc == bytes(6) and metype == 0xFFFF and mvlan == 0
    off += size_eth
    # ipv4
    size4, v, m, _ = c_layouts["ipv4"]
    assert struct.unpack_from("=IH", b, off) == (ib.FlowSpecType.IPV4, size4)
    assert struct.unpack_from("!II", b, off + v) == (
        int(ipaddress.IPv4Address("10.0.0.1")),
        int(ipaddress.IPv4Address("10.0.0.2")),
    )
    assert struct.unpack_from("!II", b, off + m) == (0xFFFFFFFF, 0xFFFFFFFF)
    off += size4
    # udp
    sizeu, v, m, _ = c_layouts["tcp_udp"]
    assert struct.unpack_from("=IH", b, off) == (ib.FlowSpecType.UDP, sizeu)
    assert struct.unpack_from("!HH", b, off + v) == (4791, 0)
    assert struct.unpack_from("!HH", b, off + m) == (0xFFFF, 0)
    off += sizeu
    # tag
    sizet, v, _, _ = c_layouts["action_tag"]
    assert struct.unpack_from("=IH", b, off) == (ib.FlowSpecType.ACTION_TAG, sizet)
    assert struct.unpack_from("=I", b, off + v) == (0x1234,)
    off += sizet
    assert struct.unpack_from("=IH", b, off) == (
        ib.FlowSpecType.ACTION_DROP,
        c_layouts["action_drop"][0],
    )
    off += c_layouts["action_drop"][0]
    assert off == len(b)


def test_every_spec_serializes_at_its_c_size(c_layouts):
    specs = {
        "eth": ib.FlowSpecEth(src_mac=b"\x02" * 6, vlan_tag=5),
        "ipv4": ib.FlowSpecIPv4(dst_ip=0x0A000001),
        "ipv4_ext": ib.FlowSpecIPv4Ext(proto=17, ttl=64),
        "ipv6": ib.FlowSpecIPv6(dst_ip="fe80::1", flow_label=7, hop_limit=1),
        "esp": ib.FlowSpecESP(spi=9),
        "tcp_udp": ib.FlowSpecTCPUDP(src_port=1),
        "gre": ib.FlowSpecGRE(protocol=0x6558),
        "mpls": ib.FlowSpecMPLS(label=0x12345),
        "tunnel": ib.FlowSpecTunnel(tunnel_id=42),
    }
    for name, spec in specs.items():
        raw = spec.to_bytes()
        assert len(raw) == c_layouts[name][0], name
        assert struct.unpack_from("=H", raw, 4)[0] == len(raw)
    v6 = specs["ipv6"].to_bytes()
    off = c_layouts["ipv6"][1]
    assert v6[off + 16 : off + 32] == ipaddress.IPv6Address("fe80::1").packed
    assert struct.unpack_from("!I", v6, off + 32)[0] == 7
    inner = ib.FlowSpecTunnel(tunnel_id=1, inner=True).to_bytes()
    t = struct.unpack_from("=I", inner, 0)[0]
    assert t == ib.FlowSpecType.VXLAN_TUNNEL | ib.FlowSpecType.INNER


def test_explicit_masks():
    s = ib.FlowSpecTCPUDP(dst_port=0x1200, mask={"dst_port": 0xFF00})
    raw = s.to_bytes()
    v, m = LAYOUTS["tcp_udp"][1:3]
    assert struct.unpack_from("!H", raw, m)[0] == 0xFF00
    assert struct.unpack_from("!H", raw, v)[0] == 0x1200


def test_bad_specs_and_attrs():
    with pytest.raises(TypeError):
        ib.FlowSpecEth(no_such_field=1)
    with pytest.raises(ValueError):
        ib.FlowSpecEth(dst_mac="01:02")
    with pytest.raises(TypeError):
        ib.FlowSpecEth(dst_mac=5)
    with pytest.raises(ValueError):
        ib.FlowSpecTCPUDP(dst_port=70000)
    with pytest.raises(TypeError):
        ib.FlowSpecTCPUDP(dst_port="80")
    with pytest.raises(TypeError):
        ib.FlowSpecIPv4(mask={"nope": 1})
    with pytest.raises(TypeError, match="mask must be a dict, not list"):
        ib.FlowSpecIPv4(mask=[("src_ip", 1)])  # was an AttributeError (found by fuzzing)
    with pytest.raises(ValueError):
        ib.FlowSpecActionTag(-1)
    with pytest.raises(ValueError):
        ib.FlowAttr(port=0).to_bytes()
    with pytest.raises(ValueError):
        ib.FlowAttr(priority=1 << 16).to_bytes()
    with pytest.raises(TypeError):
        ib.FlowAttr(specs=[object()]).to_bytes()  # type: ignore[list-item]
    with pytest.raises(ValueError):
        ib.FlowAttr(specs=[ib.FlowSpecActionDrop()] * 256).to_bytes()
    assert "FlowAttr(" in repr(ib.FlowAttr())


def test_cq_init_attr_ex_and_wcex():
    a = ib.CQInitAttrEx(16, wc_flags=ib.CreateCQWCFlags.BYTE_LEN)
    assert a.cqe == 16 and a.channel is None and a.comp_vector == 0 and a.flags == 0
    assert "CQInitAttrEx(" in repr(a)
    assert issubclass(ib.CQEx, ib.CQ) and issubclass(ib.WCEx, ib.WC)
    with pytest.raises(TypeError):
        ib.WCEx()
    with pytest.raises(TypeError):
        ib.CQEx()

    class MyWC(ib.WC):
        pass

    # WC is allocated at its own size: no subclass instances from WC().
    with pytest.raises(TypeError):
        MyWC(wr_id=1)
    for t in (ib.CQEx, ib.DM, ib.Flow):
        with pytest.raises(TypeError):
            t()


def test_on_demand_flags():
    assert ib.AccessFlags.ON_DEMAND
    assert int(ib.AdviseMRAdvice.PREFETCH) == 0
    assert ib.AdviseMRFlags.FLUSH == 1
    assert ib.ODPGeneralCaps.SUPPORT_IMPLICIT


def test_esp_flow_action_fields(recording):
    def body(fake):
        import ibverbs
        from ibverbs import flow

        E = ibverbs.FlowActionESPFlags
        full = ibverbs.FlowActionESPAttr(
            spi=0xABCD,
            seq=3,
            tfc_pad=4,
            flags=E.FULL_OFFLOAD | E.ENCRYPT,
            hard_limit_pkts=2**40,
            key=bytes(range(32)),
            iv=2**63 + 1,
            iv_algo=ibverbs.FlowActionIVAlgo.SEQ,
            salt=0x5A17,
            icv_len=16,
            replay_window=128,
            esn=9,
        )
        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            with pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)) as qp:
                fa = ctx.create_flow_action_esp(full)
                fa.modify_esp(ibverbs.FlowActionESPAttr(spi=1))
                f = qp.create_flow(flow.FlowAttr(specs=[flow.FlowSpecActionHandle(fa)]))
                try:
                    fa.close()  # the kernel would hold it; the binding holds nothing
                except ibverbs.VerbsError as e:
                    out["close"] = e.errno
                f.close()
                out["closed"] = fa.closed
                for bad in ({"key": b"k" * 33}, {"spi": 2**32}, {"esn": -1}):
                    try:
                        ctx.create_flow_action_esp(ibverbs.FlowActionESPAttr(**bad))
                    except ValueError:
                        out.setdefault("bad", 0)
                        out["bad"] += 1
                try:
                    ctx.create_flow_action_esp(object())
                except TypeError:
                    out["not_attr"] = True
        return out

    res = recording.run(body)
    out = res.ok()
    assert out == {"closed": True, "bad": 3, "not_attr": True}
    assert res.live == 0, res.live_report
    made = res.one("create_flow_action_esp")
    E = ibverbs.FlowActionESPFlags
    assert made.prefixed("esp.") == {
        "esp_attr": made["esp.esp_attr"],
        "spi": 0xABCD,
        "seq": 3,
        "tfc_pad": 4,
        "flags": int(E.FULL_OFFLOAD | E.ENCRYPT),
        "hard_limit_pkts": 2**40,
    }
    assert made.prefixed("keymat.") == {
        "iv": 2**63 + 1,
        "iv_algo": 0,
        "salt": 0x5A17,
        "icv_len": 16,
        "key_len": 32,
        "aes_key": bytes(range(32)),
    }
    assert made["keymat_proto"] == 0 and made["keymat_len"] == 56
    assert made["replay_proto"] == 1 and made["replay_len"] == 4 and made["replay.size"] == 128
    assert made["esp_encap"] == 0 and made["comp_mask"] == 1 and made["esn"] == 9
    mod = res.one("modify_flow_action_esp")
    ptr = res.one("destroy_flow_action")["action"]
    assert mod["action"] == ptr and mod["esp.spi"] == 1
    assert mod["keymat_ptr"] == 0 and mod["keymat_len"] == 0
    assert mod["replay_proto"] == 0 and mod["replay_ptr"] == 0
    assert mod["comp_mask"] == 0 and "esn" not in mod
    raw = res.one("create_flow")["spec[0].bytes"]
    size, off, _, psize = ibverbs.flow.LAYOUTS["action_handle"]
    assert int.from_bytes(raw[off : off + psize], "little") == ptr


def test_create_flow_passes_the_attr_and_every_spec_field(recording):
    def body(fake):
        import errno

        import ibverbs
        from ibverbs import flow

        spec = flow.FlowAttr(
            priority=3,
            port=1,
            flags=int(ibverbs.enums.FlowFlags.DONT_TRAP),
            specs=[
                flow.FlowSpecEth(dst_mac="02:00:00:00:00:01", ether_type=0x0800),
                flow.FlowSpecIPv4(dst_ip="192.0.2.7", mask={"dst_ip": 0xFFFFFF00}),
                flow.FlowSpecTCPUDP(udp=True, dst_port=4791),
                flow.FlowSpecIPv6(src_ip="2001:db8::1", flow_label=0x12345, inner=True),
                flow.FlowSpecActionTag(0xBEEF),
                flow.FlowSpecActionDrop(),
            ],
        )
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            with ctx.create_cq(8) as cq:
                with pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET)) as qp:
                    with qp.create_flow(spec):
                        pass
                    fake.fail("create_flow", errno.EOPNOTSUPP)
                    try:
                        qp.create_flow(spec)
                    except ibverbs.VerbsError as e:
                        return [e.errno, e.operation]
        return None

    res = recording.run(body)
    assert res.ok() == [errno.EOPNOTSUPP, "ibv_create_flow"]
    rec, failed = res.calls("create_flow")
    assert failed["injected_errno"] == errno.EOPNOTSUPP
    qp = res.one("create_qp")
    assert qp["attr.qp_type"] == int(ibverbs.QPType.RAW_PACKET)
    assert rec.prefixed("attr.") == {
        "comp_mask": 0,
        "type": int(enums.FlowAttrType.NORMAL),
        "size": rec["attr.size"],
        "priority": 3,
        "num_of_specs": 6,
        "port": 1,
        "flags": int(enums.FlowFlags.DONT_TRAP),
    }
    T = enums.FlowSpecType
    s0, s1, s2, s3 = (rec.prefixed(f"spec[{i}].") for i in range(4))
    assert s0["type"] == T.ETH
    assert s0["val.dst_mac"] == bytes.fromhex("020000000001")
    assert s0["mask.dst_mac"] == b"\xff" * 6
    assert (s0["val.ether_type"], s0["mask.ether_type"]) == (0x0800, 0xFFFF)
    assert s0["val.src_mac"] == s0["mask.src_mac"] == bytes(6)  # not matched
    assert (s0["val.vlan_tag"], s0["mask.vlan_tag"]) == (0, 0)
    assert s1["type"] == T.IPV4
    assert (s1["val.dst_ip"], s1["mask.dst_ip"]) == (0xC0000207, 0xFFFFFF00)
    assert (s1["val.src_ip"], s1["mask.src_ip"]) == (0, 0)
    assert s2["type"] == T.UDP
    assert (s2["val.dst_port"], s2["mask.dst_port"]) == (4791, 0xFFFF)
    assert s3["type"] == T.IPV6 | T.INNER
    assert s3["val.src_ip"] == bytes.fromhex("20010db8000000000000000000000001")
    assert (s3["val.flow_label"], s3["mask.flow_label"]) == (0x12345, 0xFFFFFFFF)
    assert rec["spec[4].type"] == T.ACTION_TAG and rec["spec[4].tag_id"] == 0xBEEF
    assert rec["spec[5].type"] == T.ACTION_DROP
    # The sizes add up: the attr, then each spec, as the C structs are.
    sizes = [rec[f"spec[{i}].size"] for i in range(6)]
    assert rec["attr.size"] == 20 + sum(sizes)
    assert "spec[0].bytes" not in rec  # every spec type was decoded
    assert len(res.calls("destroy_flow")) == 1
    assert res.live == 0, res.live_report


def test_create_flow_refuses_malformed_bytes_before_the_verb(recording):
    """QP.create_flow(bytes) checks the buffer's sizes before the provider
    reads it: each malformed buffer is a ValueError and no verb runs."""

    def body(fake):
        import struct

        import ibverbs
        from ibverbs import flow

        good = flow.FlowAttr(specs=[flow.FlowSpecEth(ether_type=0x0800)]).to_bytes()
        size = struct.unpack_from("<H", good, 8)[0]  # ibv_flow_attr.size

        def patched(data, off, fmt, value):
            b = bytearray(data)
            struct.pack_into(fmt, b, off, value)
            return bytes(b)

        attr_len = 20  # sizeof(struct ibv_flow_attr): the first spec's offset
        cases = [
            b"\0" * 4,
            good + b"\0",
            patched(good, 12, "<B", 2),  # num_of_specs 2, one spec
            patched(good, attr_len + 4, "<H", 2),  # the spec's size below its header
            patched(good + bytes(8), 8, "<H", size + 8),  # 8 bytes no spec covers
        ]
        out = {"size": [size, len(good)]}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(8) as cq:
            qp = pd.create_qp(ibverbs.QPInitAttr(cq, qp_type=ibverbs.QPType.RAW_PACKET))
            fake.clear()
            for data in cases:
                try:
                    qp.create_flow(data)
                except ValueError as e:
                    out.setdefault("errors", []).append(str(e))
            try:
                qp.create_flow(bytearray(good))
            except TypeError as e:
                out["type"] = str(e)
            out["verbs"] = [r.verb for r in fake.take()]
            with qp.create_flow(good) as f:
                out["ok"] = type(f).__name__
            qp.close()
        return out

    out = recording.run(body).ok()
    size = out["size"][0]
    assert size == out["size"][1]
    assert out["errors"] == [
        "a flow attr is 20..65535 bytes, got 4",
        f"flow attr size field {size} != buffer length {size + 1}",
        "spec 1 starts past the buffer's end",
        "spec 0 has size 2: outside the buffer",
        "8 bytes after the 1 spec(s)",
    ]
    assert out["type"].startswith("flow_attr must be a FlowAttr or bytes")
    assert out["verbs"] == []
    assert out["ok"] == "Flow"


def test_spec_address_forms_reprs_and_attr_limits():
    from ibverbs import flow

    for bad, exc in (("aa:bb:cc", ValueError), ("aa:bb:cc:dd:ee:zz", ValueError), (5, TypeError)):
        with pytest.raises(exc, match="dst_mac"):
            flow.FlowSpecEth(dst_mac=bad)
    raw = bytes(range(6))
    assert flow.FlowSpecEth(dst_mac=bytearray(raw)).val["dst_mac"] == raw
    six = ipaddress.IPv6Address("fe80::1")
    by_int = flow.FlowSpecIPv6(src_ip=int(six))
    assert by_int.val["src_ip"] == six.packed
    assert flow.FlowSpecIPv6(src_ip=bytearray(six.packed)).val["src_ip"] == six.packed
    with pytest.raises(TypeError, match="an IPv6 address is text, 16 bytes or an int"):
        flow.FlowSpecIPv6(dst_ip=b"short")
    eth = flow.FlowSpecEth(ether_type=0x0800, inner=True)
    assert repr(eth) == "FlowSpecEth(ether_type=2048, inner=True)"
    assert repr(flow.FlowSpecActionTag(7)) == "FlowSpecActionTag(tag_id=7)"
    assert repr(flow.FlowSpecActionDrop()) == "FlowSpecActionDrop()"
    with pytest.raises(TypeError, match="FlowAttr.priority must be an int, not str"):
        flow.FlowAttr(priority="high").to_bytes()
    # 255 of the largest spec (IPv6, 88 bytes) fit: only a FlowSpec subclass
    # with a larger body reaches the attr's 16-bit size limit

    class Huge(flow.FlowSpecActionDrop):
        def to_bytes(self):
            return bytes(70000)

    with pytest.raises(ValueError, match="the flow attr is 70020 bytes, more than 65535"):
        flow.FlowAttr(specs=[Huge()]).to_bytes()
