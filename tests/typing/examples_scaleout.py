"""README's "Many ranks" and "asyncio" sections, for the type checker only
(``make typecheck``; never run).  See examples.py for the conventions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ibverbs as ib
from ibverbs import aio, bootstrap

if TYPE_CHECKING:
    from typing_extensions import assert_type


class DictStore:
    """Any object with set / get / add is a Store."""

    def __init__(self) -> None:
        self.d: dict[str, Any] = {}

    def set(self, key: str, value: bytes, /) -> None:
        self.d[key] = value

    def get(self, key: str, /) -> bytes:
        return bytes(self.d[key])

    def add(self, key: str, amount: int, /) -> int:
        self.d[key] = int(self.d.get(key, 0)) + amount
        return int(self.d[key])


def many_ranks(buf: Any) -> None:
    store, rank, world = bootstrap.torch_store()
    assert_type(rank, int)
    ctx = ib.get_device_list()[0].open()
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(256)
    access = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE
    qps = bootstrap.connect_mesh(
        store,
        rank,
        world,
        pd,
        send_cq=cq,
        access=access,
        qp_init={"max_send_wr": 512},
        timeout=60.0,
    )
    assert_type(qps, dict[int, ib.QP])
    mr = ib.reg_tensor(pd, buf, access)
    remote = bootstrap.exchange_mr(store, rank, world, mr)
    assert_type(remote, list[bootstrap.RemoteMR])
    assert_type(remote[0].rkey, int)
    mine = DictStore()
    assert_type(bootstrap.allgather(mine, 0, 1, b"x", prefix="p"), list[bytes])
    bootstrap.barrier(mine, 0, 1, timeout=5)
    assert_type(bootstrap.pick_gid_index(ctx, 1), int | None)
    bootstrap.allgather(mine, 0, 1, "text")  # type: ignore[arg-type]
    bootstrap.barrier(object(), 0, 1)  # type: ignore[arg-type]


async def asyncio_api(ctx: ib.Context, cq: ib.CQ) -> None:
    wcs = await aio.poll(cq, 16)
    assert_type(wcs, list[ib.WC])
    async for wc in aio.completions(cq):
        assert_type(wc, ib.WC)
        break
    async for ev in aio.async_events(ctx):
        assert_type(ev, ib.AsyncEvent)
        break


async def asyncio_cm(listener: ib.CMListener, pd: ib.PD, attr: ib.QPInitAttr) -> None:
    server = await aio.get_request(listener, timeout=5.0)
    assert_type(server, ib.CMID)
    await aio.accept(server, b"welcome", rnr_retry_count=7, timeout=None)
    ev = await aio.get_event(server, timeout=10)
    assert_type(ev, ib.CMEvent)
    cmid = await aio.resolve("198.18.0.1", 7471, None, timeout_ms=1000)
    assert_type(cmid, ib.CMID)
    reply = await aio.connect(cmid, b"hello", retry_count=7, timeout=2.5)
    assert_type(reply, bytes)
    cmid.start_connect(b"x", initiator_depth=1)
    assert_type(cmid.poll_established(), bytes | None)
    assert_type(cmid.poll_event(), ib.CMEvent | None)
    assert_type(listener.poll_request(), ib.CMID | None)
    assert_type(listener.poll_event(), ib.CMEvent | None)
    server.start_accept(responder_resources=1)
    await aio.connect(cmid, "text")  # type: ignore[arg-type]
    await aio.get_request(server)  # type: ignore[arg-type]
