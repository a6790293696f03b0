#!/usr/bin/env python3
"""asyncio over RDMA: one task sends, one receives, one watches the device.

    python examples/aio_sendrecv.py [COUNT]

Two RC QPs on the first device, connected to each other (loopback), each
with a CQ on one shared completion channel.  The sender keeps 32 sends
with immediate data in flight and awaits its completions with
``aio.poll``; the receiver takes its completions with ``aio.completions``
and checks their order; a third task prints device events as they come.
No task spins: while nothing completes, the process sleeps in the loop.
"""

import asyncio
import sys

import ibverbs as ib
from ibverbs import aio, bootstrap


async def main(count: int) -> None:
    ctx = ib.get_device_list()[0].open()
    port = 1
    gid_index = bootstrap.pick_gid_index(ctx, port) or 0  # None on InfiniBand
    pd = ctx.alloc_pd()
    chan = ctx.create_comp_channel()  # one channel may serve many CQs
    cqs = [ctx.create_cq(256, channel=chan) for _ in range(2)]
    qps = [
        pd.create_qp(ib.QPInitAttr(send_cq=cq, recv_cq=cq, max_send_wr=64, max_recv_wr=256))
        for cq in cqs
    ]
    attr, gid = ctx.query_port(port), ctx.query_gid(port, gid_index)
    a, b = (ib.local_qp_info(qp, attr, gid, port=port) for qp in qps)
    ib.connect_rc(qps[0], b, port=port, sgid_index=gid_index, access=0)
    ib.connect_rc(qps[1], a, port=port, sgid_index=gid_index, access=0)

    async def receiver() -> None:
        for i in range(256):
            qps[1].post_recv(ib.RecvWR(wr_id=i))
        got = 0
        async for wc in aio.completions(cqs[1]):
            wc.raise_for_status()
            assert wc.imm_data == got, (wc.imm_data, got)
            got += 1
            if got == count:
                return
            qps[1].post_recv(ib.RecvWR(wr_id=wc.wr_id))  # recycle the slot

    async def sender() -> None:
        posted = done = 0
        while done < count:
            while posted < count and posted - done < 32:
                qps[0].post_send(
                    ib.SendWR(
                        wr_id=posted,
                        opcode=ib.WROpcode.SEND_WITH_IMM,
                        send_flags=ib.SendFlags.SIGNALED,
                        imm_data=posted,
                    )
                )
                posted += 1
            for wc in await aio.poll(cqs[0], 16):
                wc.raise_for_status()
                done += 1

    async def device_events() -> None:
        async for ev in aio.async_events(ctx):  # each one already acked
            print("device event:", ib.EventType(ev.event_type).name)

    watcher = asyncio.ensure_future(device_events())
    await asyncio.wait_for(asyncio.gather(receiver(), sender()), 120)
    watcher.cancel()
    await asyncio.gather(watcher, return_exceptions=True)  # fd unregistered
    print(f"{count} messages sent and received in order")
    for obj in (*qps, *cqs, chan, pd, ctx):
        obj.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
