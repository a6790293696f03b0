"""Command line: ``python -m ibverbs info [--json] [-d DEV]``, like
ibv_devinfo with the GID table and each GID's type, and
``python -m ibverbs perf ...`` (see ``ibverbs.perf``)."""

from __future__ import annotations

import argparse
import json
import os
import sys

import ibverbs as ib

SYSFS = "/sys/class/infiniband"


def _enum_name(cls, value) -> str:
    try:
        return cls(value).name
    except ValueError:
        return str(value)


def _sysfs(dev: str, port: int, *parts: str) -> str | None:
    path = os.path.join(SYSFS, dev, "ports", str(port), *parts)
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _gid_type(ctx, dev: str, port: int, index: int) -> str | None:
    """'RoCE v2', 'IB/RoCE v1', ... from sysfs, else from ibv_query_gid_ex."""
    text = _sysfs(dev, port, "gid_attrs", "types", str(index))
    if text:
        return text
    if ib.optional_verbs.get("_ibv_query_gid_ex"):
        try:
            _, gid_type, _ = ctx.query_gid_ex(port, index)
        except ib.VerbsError:
            return None
        return {0: "IB", 1: "RoCE v1", 2: "RoCE v2"}.get(gid_type, str(gid_type))
    return None


def _port_info(ctx, dev: str, port: int) -> dict:
    pa = ctx.query_port(port)
    gids = []
    for i in range(pa.gid_tbl_len):
        try:
            gid = ctx.query_gid(port, i)
        except ib.VerbsError:
            continue
        if gid.is_zero():
            continue
        gids.append(
            {
                "index": i,
                "gid": str(gid),
                "type": _gid_type(ctx, dev, port, i),
                "ndev": _sysfs(dev, port, "gid_attrs", "ndevs", str(i)),
            }
        )
    return {
        "port": port,
        "state": _enum_name(ib.PortState, pa.state),
        "max_mtu": 128 << pa.max_mtu if pa.max_mtu else None,
        "active_mtu": 128 << pa.active_mtu if pa.active_mtu else None,
        "link_layer": _enum_name(ib.LinkLayer, pa.link_layer),
        "lid": pa.lid,
        "sm_lid": pa.sm_lid,
        "active_speed": pa.active_speed,
        "active_width": pa.active_width,
        "max_msg_sz": pa.max_msg_sz,
        "gid_tbl_len": pa.gid_tbl_len,
        "gids": gids,
    }


def device_info(name: str) -> dict:
    """What ``python -m ibverbs info`` shows of device ``name``, as a dict:
    its attributes and each port's state, MTU, link layer and GIDs.

    Wraps ``ibv_open_device``, ``ibv_query_device``, ``ibv_query_port`` and
    ``ibv_query_gid`` (man pages ibv_open_device(3), ibv_query_device(3),
    ibv_query_port(3), ibv_query_gid(3)).

    Raises:
        VerbsError: a verb failed (ENODEV: no such device).
    """
    with ib.Context(name) as ctx:
        da = ctx.query_device()
        ports = [_port_info(ctx, name, p) for p in range(1, da.phys_port_cnt + 1)]
        return {
            "name": name,
            "node_guid": f"{da.node_guid:016x}",
            "fw_ver": da.fw_ver,
            "vendor_id": da.vendor_id,
            "vendor_part_id": da.vendor_part_id,
            "max_qp": da.max_qp,
            "max_qp_wr": da.max_qp_wr,
            "max_cqe": da.max_cqe,
            "max_sge": da.max_sge,
            "max_mr_size": da.max_mr_size,
            "atomic_cap": _enum_name(ib.AtomicCap, da.atomic_cap),
            "phys_port_cnt": da.phys_port_cnt,
            "num_comp_vectors": ctx.num_comp_vectors,
            "ports": ports,
        }


def _print_text(info: list[dict]) -> None:
    print(f"ibverbs {ib.__version__}, libibverbs {ib.library_version} ({ib.library_path})")
    cm_ok, cm_detail = ib._ibverbs._rdmacm_status()
    print(f"connection manager: {'available' if cm_ok else 'not available'} ({cm_detail})")
    if not info:
        print("no RDMA devices found")
    for d in info:
        print(f"hca_id: {d['name']}")
        print(f"\tnode_guid:\t\t{d['node_guid']}")
        print(f"\tfw_ver:\t\t\t{d['fw_ver']}")
        print(f"\tvendor_id:\t\t{d['vendor_id']:#x}")
        print(f"\tvendor_part_id:\t\t{d['vendor_part_id']}")
        print(f"\tmax_qp / max_qp_wr:\t{d['max_qp']} / {d['max_qp_wr']}")
        print(f"\tmax_cqe / max_sge:\t{d['max_cqe']} / {d['max_sge']}")
        print(f"\tatomic_cap:\t\t{d['atomic_cap']}")
        print(f"\tphys_port_cnt:\t\t{d['phys_port_cnt']}")
        for p in d["ports"]:
            print(f"\t\tport:\t{p['port']}")
            print(f"\t\t\tstate:\t\t{p['state']}")
            print(f"\t\t\tmax_mtu:\t{p['max_mtu']}")
            print(f"\t\t\tactive_mtu:\t{p['active_mtu']}")
            print(f"\t\t\tlink_layer:\t{p['link_layer']}")
            print(f"\t\t\tlid:\t\t{p['lid']}")
            for g in p["gids"]:
                extra = ", ".join(x for x in (g["type"], g["ndev"]) if x)
                print(f"\t\t\tGID[{g['index']:3}]:\t{g['gid']}" + (f"  ({extra})" if extra else ""))


def _rdmacm_json() -> dict:
    ok, detail = ib._ibverbs._rdmacm_status()
    return {"available": ok, "library" if ok else "error": detail}


def cmd_info(args) -> int:
    """``python -m ibverbs info``: print every device (or ``--device``) as text or
    JSON; returns the exit code.
    """
    names = [args.device] if args.device else [d.name for d in ib.get_device_list()]
    info = [device_info(n) for n in names]
    if args.json:
        json.dump(
            {
                "ibverbs": ib.__version__,
                "libibverbs": ib.library_version,
                "rdmacm": _rdmacm_json(),
                "devices": info,
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        _print_text(info)
    return 0


PERF_HELP = "perftest-style benchmarks (bandwidth, message rate, latency)"


def main(argv=None) -> int:
    """The command line: ``python -m ibverbs info|perf ...``; returns the exit
    code.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m ibverbs")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("info", help="devices, ports and GIDs (like ibv_devinfo)")
    p.add_argument("-d", "--device", help="only this device")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)
    if argv[:1] == ["perf"]:
        # Imported only when asked for: `info` does not load the benchmark tool.
        from ibverbs import perf

        perf.add_parser(sub)
    else:
        # Listed in --help; never parsed (argv[0] == "perf" takes the branch above).
        sub.add_parser("perf", help=PERF_HELP)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ib.VerbsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
