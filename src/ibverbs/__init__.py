"""Low-level, Pythonic bindings for libibverbs (RDMA verbs).

A thin wrapper over the verbs API: devices, contexts, PDs, MRs (dma-buf
MRs included), CQs with completion channels, QPs (RC/UC/UD), SRQs, AHs,
every work-request opcode and flag, completions and async events, plus RC
connection helpers.  The C core never links libibverbs; it dlopens
``libibverbs.so.1`` at import.  See ``ibverbs.cuda`` for GPU tensors.
"""

from __future__ import annotations

from . import _ibverbs
from ._ibverbs import (  # noqa: F401  (re-exported)
    AH,
    CQ,
    MR,
    PD,
    QP,
    SGE,
    SRQ,
    WC,
    AsyncEvent,
    CMEvent,
    CMID,
    CMListener,
    CompChannel,
    Context,
    MW,
    RecvBatch,
    RecvWR,
    RecvWRChain,
    SendBatch,
    SendWR,
    SendWRChain,
    flow_label_to_udp_sport,
    fork_init,
    has_rdmacm,
    inc_rkey,
    is_fork_initialized,
    is_qpt_supported,
    library_path,
    library_version,
    mbps_to_ibv_rate,
    mult_to_ibv_rate,
    node_type_str,
    optional_verbs,
    port_state_str,
    rate_to_mbps,
    rate_to_mult,
)

# the errors and the records (their __all__), the enumerations
from ._objects import *  # noqa: F401,F403
from . import _objects
from .enums import *  # noqa: F401,F403
from . import enums

# the extended QP (qp/qp_ex.c)
from ._ibverbs import QPEx  # noqa: E402,F401


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return "0+unknown"
    try:
        return version("ibverbs")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


#: The installed distribution's version (``importlib.metadata``), or
#: ``"0+unknown"`` when running from a source tree that pip did not install.
#: Looked up on first use (PEP 562) and kept: importlib.metadata costs about
#: 30 ms to import, a third of ``import ibverbs``, and most programs never
#: read the version.
__version__: str

from typing import TYPE_CHECKING as _TYPE_CHECKING  # noqa: E402

if not _TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        if name == "__version__":
            value = _version()
            globals()["__version__"] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Device:
    """An RDMA device of this host (``struct ibv_device``), by name.

    ``get_device_list()`` returns them; ``Device("rxe0")`` names one
    without checking it exists (``open()`` does).  Equal when name and
    GUID are.

    Raises:
        TypeError: name is not a str.
    """

    __slots__ = {
        "name": "The kernel's name of the device, e.g. ``mlx5_0`` or ``rxe0``.",
        "guid": "The node GUID in host byte order (0 when not known).",
        "node_type": "A NodeType value: CA, RNIC, ...",
        "transport_type": "A TransportType value: IB (also RoCE), IWARP, ...",
        "ibdev_path": "Its uverbs sysfs directory, ``/sys/class/infiniband_verbs/uverbsN``.",
    }

    def __init__(
        self,
        name: str,
        guid: int = 0,
        node_type: int = 0,
        transport_type: int = 0,
        ibdev_path: str = "",
    ):
        if not isinstance(name, str):
            raise TypeError(f"device name must be a str, not {type(name).__name__}")
        self.name = name
        self.guid = guid
        self.node_type = node_type
        self.transport_type = transport_type
        self.ibdev_path = ibdev_path

    def open(self) -> Context:
        """Open the device: the same as ``Context(self.name)``.

        Wraps ``ibv_open_device`` (man page ibv_open_device(3)).

        Returns:
            The new Context.

        Raises:
            VerbsError: ENODEV when there is no device of that name, or
                the verb failed (``errno`` says why).
        """
        return Context(self.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Device):
            return NotImplemented
        return self.name == other.name and self.guid == other.guid

    def __hash__(self) -> int:
        return hash((self.name, self.guid))

    def __repr__(self) -> str:
        return f"Device(name={self.name!r}, guid={self.guid:#018x})"


def get_device_list() -> list[Device]:
    """The RDMA devices of this host.

    Wraps ``ibv_get_device_list`` (man page ibv_get_device_list(3)).

    Returns:
        A list of Device, empty when the kernel has no RDMA support.

    Raises:
        VerbsError: the verb failed for another reason (e.g. EPERM).
    """
    return [
        Device(d["name"], d["guid"], d["node_type"], d["transport_type"], d["ibdev_path"])
        for d in _ibverbs._device_list()
    ]


from .helpers import (  # noqa: E402,F401
    QPInfo,
    connect_rc,
    local_qp_info,
    reg_tensor,
    tensor_addr_len,
)

__all__ = [
    "AH",
    "AsyncEvent",
    "CQ",
    "CompChannel",
    "Context",
    "Device",
    "MR",
    "PD",
    "QP",
    "QPInfo",
    "RecvBatch",
    "RecvWR",
    "RecvWRChain",
    "SGE",
    "SRQ",
    "SendBatch",
    "SendWR",
    "SendWRChain",
    "WC",
    "__version__",
    "connect_rc",
    "fork_init",
    "get_device_list",
    "is_fork_initialized",
    "library_path",
    "library_version",
    "local_qp_info",
    "optional_verbs",
    "reg_tensor",
    "tensor_addr_len",
]
# the connection manager (cm/; librdmacm is loaded on first use)
__all__ += ["CMEvent", "CMID", "CMListener", "has_rdmacm"]
# memory windows (mem/mw.c)
__all__ += ["MW", "inc_rkey"]
# the extended QP
__all__ += ["QPEx"]
# the GID table and the helpers libibverbs answers itself (device/gid.c,
# core/lookups.c)
__all__ += [
    "flow_label_to_udp_sport",
    "is_qpt_supported",
    "mbps_to_ibv_rate",
    "mult_to_ibv_rate",
    "node_type_str",
    "port_state_str",
    "rate_to_mbps",
    "rate_to_mult",
]
__all__ += _objects.__all__
__all__ += enums.__all__

# XRC, work queues and RSS, ECE, tag matching (xrc/, wq/, qp/rate_limit_ece.c)
from ._ibverbs import RWQIndTable, WQ, XRCD  # noqa: E402,F401

__all__ += ["RWQIndTable", "WQ", "XRCD"]

# Extended CQ, device capabilities, device memory, flow steering, ODP
from ._ibverbs import CQEx, DM, Flow, WCEx  # noqa: E402,F401
from . import flow  # noqa: E402
from .flow import *  # noqa: E402,F401,F403  (the flow specs: its __all__)

__all__ += ["CQEx", "DM", "Flow", "WCEx"]
__all__ += flow.__all__

# buffers, DMA handles, running values (mem/buf.c, mem/dmah.c, device/clock_and_speed.c)
from ._ibverbs import DMAH, Buf  # noqa: E402,F401

__all__ += ["Buf", "DMAH"]
# Thread and parent domains, counters, completion counters, flow actions
# (mem/domain.c, counters/, qp/flow_action.c)
from ._ibverbs import TD, CompCntr, Counters, FlowAction, ParentDomain  # noqa: E402,F401

__all__ += ["CompCntr", "Counters", "FlowAction", "ParentDomain", "TD"]
