"""Write the committed seed corpus of each fuzzer, tests/fuzz/corpus/NAME/:
a few well-formed inputs (what a peer sends when all is well) for the
parsers, short call sequences for the API fuzzers.  Run again after a
format changes (PYTHONPATH=src python tests/fuzz/make_seeds.py); the
inputs libFuzzer finds go to build/fuzz/corpus, never here."""

from __future__ import annotations

import hashlib
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def seeds() -> dict[str, list[bytes]]:
    import ibverbs
    from ibverbs import _oob, efa, flow

    gid = bytes.fromhex("fe800000000000000000000000000001")
    info = ibverbs.QPInfo(qp_num=0x123, psn=0x456, lid=7, gid=gid, port=1, mtu=3).to_bytes()
    mr = struct.pack(">QQI", 0x10000, 4096, 0x1234)

    def frame(obj) -> bytes:
        import json

        data = json.dumps(_oob.encode(obj)).encode()
        return struct.pack(">I", len(data)) + data

    def store(world: int, rank: int, blobs: list[bytes]) -> bytes:
        return bytes([world - 1, rank]) + b"".join(bytes([len(b)]) + b for b in blobs)

    attr = flow.FlowAttr(
        port=1,
        specs=[
            flow.FlowSpecEth(dst_mac="02:00:00:00:00:01", ether_type=0x0800),
            flow.FlowSpecIPv4(dst_ip="192.0.2.7"),
            flow.FlowSpecTCPUDP(udp=True, dst_port=4791),
        ],
    )
    # API sequences (tests/fuzz/apiseq.py's Source): a call of the first
    # method, a record, a close, an injected failure, in a few orders.
    api = [bytes(range(0, 64, 3)), bytes(range(255, 128, -5)), b"\x00\x01\x02\x08\x0b\x0d\x0f" * 6]
    return {
        "qpinfo": [info, info[:27], bytes(28)],
        "efa_endpoint": [efa.EndpointInfo(gid, 0x42, 0x11111111).to_bytes(), bytes(24)],
        "oob": [
            frame({"op": "hello", "n": 1}),
            frame(["x", 1.5, None, {"$bytes": "00ff"}]),
            frame({"info": {"$bytes": info.hex()}}) + frame("bye"),
        ],
        "bootstrap": [
            store(2, 0, [b"", mr]),
            store(2, 1, [info + info, b""]),
            store(3, 1, [info * 3, b"", info * 3]),
        ],
        "flow": [attr.to_bytes(), flow.FlowAttr(port=1).to_bytes()],
        "wr": [bytes(range(48)), bytes(range(200, 256)) * 2, b"\x02" * 40],
        "api": api,
        # CM events and private data (fuzz_cm.py reads the bytes as
        # choices): the passive and the active path, requests with data.
        "cm": [bytes(range(64)), bytes(range(255, 0, -3)), b"\x00\x01\x04\x38" * 24],
    }


def main() -> None:
    for name, inputs in seeds().items():
        d = HERE / "corpus" / name
        d.mkdir(parents=True, exist_ok=True)
        for data in inputs:
            (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
        print(f"{d}: {len(inputs)} inputs", file=sys.stderr)


if __name__ == "__main__":
    main()
