"""Build the fake libefa.so.1 (fake_efa.c): soname libefa.so.1, the real
symbol version nodes EFA_1.0 ... EFA_1.<max_node> (rdma-core 65 has 1.7;
Debian 12's libefa 1.2), each function in the node that has it in
rdma-core.  ``build(outdir, max_node=7)`` returns the path."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from cshared import compile_shared  # noqa: E402

C_ROOT = HERE.parents[2] / "src" / "ibverbs" / "_ibverbs"
# efa_fake_fail's errno for a failure without errno (fake_efa.c's
# EFA_NO_ERRNO): the verb answers NULL with errno 0.
NO_ERRNO = -1

# The nodes of libefa's libefa.map (rdma-core 65), in order.
NODES = {
    0: ["efadv_create_driver_qp"],
    1: ["efadv_create_qp_ex", "efadv_query_device", "efadv_query_ah"],
    2: ["efadv_create_cq", "efadv_cq_from_ibv_cq_ex"],
    3: ["efadv_query_mr"],
    4: ["efadv_query_qp_wqs", "efadv_query_cq"],
    5: ["efadv_get_max_sq_depth", "efadv_get_max_rq_depth"],
    6: ["efadv_qp_from_ibv_qp_ex"],
    7: ["efadv_create_comp_cntr"],
}


def version_script(max_node: int) -> str:
    out = []
    for n in range(max_node + 1):
        names = list(NODES[n])
        if n == 0:
            names.append("efa_fake_*")  # the test controls
        body = "".join(f"\t\t{s};\n" for s in names)
        local = "\tlocal: *;\n" if n == 0 else ""
        parent = f" EFA_1.{n - 1}" if n else ""
        out.append(f"EFA_1.{n} {{\n\tglobal:\n{body}{local}}}{parent};\n")
    return "".join(out)


def build(outdir, max_node: int = 7) -> str:
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    script = outdir / "libefa.map"
    script.write_text(version_script(max_node))
    return compile_shared(
        HERE / "fake_efa.c",
        outdir / "libefa.so.1",
        defines={"FAKE_EFA_MAX": max_node},
        cflags=[f"-I{C_ROOT}", "-Wl,-soname,libefa.so.1", f"-Wl,--version-script={script}"],
        libs=["-ldl"],
    )
