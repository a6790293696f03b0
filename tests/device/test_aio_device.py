"""ibverbs.aio against a real device (rxe0 in the Soft-RoCE guest): many
QPs awaited at once, every completion exactly once; an idle wait costs no
CPU; cancellation loses nothing; uvloop; device events as an async stream."""

import asyncio
import os
import shutil
import subprocess
import time

import pytest

import ibverbs as ib
from ibverbs import aio

pytestmark = pytest.mark.integration

NETDEV = os.environ.get("IBVERBS_TEST_NETDEV", "veth0")
ACCESS = ib.AccessFlags.LOCAL_WRITE | ib.AccessFlags.REMOTE_WRITE


class Pairs:
    """n RC QP pairs on one device, connected to each other (loopback).
    Each QP has its own send CQ and recv CQ; all CQs share one channel."""

    def __init__(self, ctx, pd, port, gid_index, n, depth):
        self.chan = ctx.create_comp_channel()
        attr = ctx.query_port(port)
        gid = ctx.query_gid(port, gid_index)
        self.pairs = []
        for _ in range(n):
            ends = []
            for _ in range(2):
                scq = ctx.create_cq(depth, channel=self.chan)
                rcq = ctx.create_cq(depth, channel=self.chan)
                qp = pd.create_qp(
                    ib.QPInitAttr(
                        send_cq=scq,
                        recv_cq=rcq,
                        qp_type=ib.QPType.RC,
                        max_send_wr=depth,
                        max_recv_wr=depth,
                    )
                )
                ends.append((qp, scq, rcq))
            (qa, _, _), (qb, _, _) = ends
            ia = ib.local_qp_info(qa, attr, gid, port=port, psn=11)
            ibb = ib.local_qp_info(qb, attr, gid, port=port, psn=22)
            ib.connect_rc(qa, ibb, port=port, sgid_index=gid_index, access=ACCESS, local_psn=11)
            ib.connect_rc(qb, ia, port=port, sgid_index=gid_index, access=ACCESS, local_psn=22)
            self.pairs.append(ends)

    def close(self):
        for ends in self.pairs:
            for qp, _, _ in ends:
                qp.close()
            for _, scq, rcq in ends:
                scq.close()
                rcq.close()
        self.chan.close()


def send_imm(qp, i):
    qp.post_send(
        ib.SendWR(
            wr_id=i, opcode=ib.WROpcode.SEND_WITH_IMM, send_flags=ib.SendFlags.SIGNALED, imm_data=i
        )
    )


@pytest.fixture
def pairs_factory(ctx, pd, port, gid_index):
    made = []

    def make(n, depth=256):
        p = Pairs(ctx, pd, port, gid_index, n, depth)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


QPS, MSGS, WINDOW = 32, 200, 32


async def traffic(pairs):
    """One task per QP: 32 senders, each with at most WINDOW sends in
    flight, awaiting its send CQ with aio.poll; 32 receivers, each taking
    its recv CQ's completions with aio.completions."""
    sent = {i: [] for i in range(QPS)}
    received = {i: [] for i in range(QPS)}

    async def sender(i, qp, scq):
        posted = 0
        while len(sent[i]) < MSGS:
            while posted < MSGS and posted - len(sent[i]) < WINDOW:
                send_imm(qp, posted)
                posted += 1
            for wc in await aio.poll(scq, 16):
                wc.raise_for_status()
                sent[i].append(wc.wr_id)

    async def receiver(i, rcq):
        async for wc in aio.completions(rcq):
            wc.raise_for_status()
            assert wc.opcode == ib.WCOpcode.RECV
            received[i].append(wc.imm_data)
            if len(received[i]) == MSGS:
                break

    tasks = []
    for i, ((qa, scq, _), (qb, _, rcq)) in enumerate(pairs.pairs):
        for k in range(MSGS):
            qb.post_recv(ib.RecvWR(wr_id=k))
        tasks.append(receiver(i, rcq))
    for i, ((qa, scq, _), _) in enumerate(pairs.pairs):
        tasks.append(sender(i, qa, scq))
    t0 = time.monotonic()
    await asyncio.wait_for(asyncio.gather(*tasks), 240)
    took = time.monotonic() - t0
    for i in range(QPS):
        assert sent[i] == list(range(MSGS)), i
        assert received[i] == list(range(MSGS)), i
    return took


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_32_qps_every_completion_exactly_once(pairs_factory, loop_kind):
    pairs = pairs_factory(QPS)
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed")
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    try:
        cpu0 = time.process_time()
        took = loop.run_until_complete(traffic(pairs))
        cpu = time.process_time() - cpu0
    finally:
        loop.close()
    print(
        f"\n{loop_kind}: {QPS} QPs x {MSGS} messages: {2 * QPS * MSGS} "
        f"completions in {took:.2f} s, {cpu:.2f} s CPU"
    )
    assert aio._debug_watches() == []
    for ends in pairs.pairs:
        for _, scq, rcq in ends:
            assert scq.events_unacked == 0 and rcq.events_unacked == 0
            assert scq.poll(16) == [] and rcq.poll(16) == []


def test_idle_wait_uses_no_cpu(pairs_factory):
    pairs = pairs_factory(1, depth=16)
    (qa, scq, _), (qb, _, rcq) = pairs.pairs[0]
    qb.post_recv(ib.RecvWR(wr_id=1))

    async def main():
        t = asyncio.ensure_future(aio.poll(rcq))
        await asyncio.sleep(0.2)
        assert not t.done()
        cpu0, wall0 = time.process_time(), time.monotonic()
        await asyncio.sleep(2.0)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        assert not t.done()
        send_imm(qa, 7)
        (wc,) = await asyncio.wait_for(t, 30)
        assert wc.imm_data == 7
        assert [w.wr_id for w in await asyncio.wait_for(aio.poll(scq), 30)] == [7]
        return cpu, wall

    cpu, wall = asyncio.run(main())
    print(
        f"\nidle wait: {cpu * 1000:.1f} ms CPU in {wall:.2f} s "
        f"({100 * cpu / wall:.2f}% of one core)"
    )
    assert cpu / wall < 0.05


def test_cancelled_poll_then_new_poll_loses_nothing(pairs_factory):
    pairs = pairs_factory(1, depth=64)
    (qa, scq, _), (qb, _, rcq) = pairs.pairs[0]
    for k in range(40):
        qb.post_recv(ib.RecvWR(wr_id=k))

    async def main():
        got = []
        for round_ in range(4):
            t = asyncio.ensure_future(aio.poll(rcq, 4))
            await asyncio.sleep(0.05)
            t.cancel()  # armed, waiting on the fd: cancelled
            with pytest.raises(asyncio.CancelledError):
                await t
            assert aio._debug_watches() == []
            for k in range(10):  # the event fires with nobody waiting
                send_imm(qa, round_ * 10 + k)
            await asyncio.sleep(0.05)
            while len(got) < (round_ + 1) * 10:
                got += [wc.imm_data for wc in await asyncio.wait_for(aio.poll(rcq, 4), 30)]
        sends = []
        while len(sends) < 40:
            sends += [wc.wr_id for wc in await asyncio.wait_for(aio.poll(scq), 30)]
        return got, sends

    got, sends = asyncio.run(main())
    assert got == list(range(40)) and sends == list(range(40))
    assert rcq.events_unacked == 0


def test_loop_closed_with_waiters_pending(pairs_factory):
    pairs = pairs_factory(1, depth=16)
    (qa, scq, _), (qb, _, rcq) = pairs.pairs[0]
    qb.post_recv(ib.RecvWR(wr_id=1))
    seen = {}

    async def main():
        asyncio.ensure_future(aio.poll(rcq))
        asyncio.ensure_future(aio.poll(scq))
        await asyncio.sleep(0.05)
        seen["watched"] = list(aio._debug_watches())
        # returns with both waiters pending: asyncio.run cancels them

    asyncio.run(main())
    assert len(seen["watched"]) == 1
    assert aio._debug_watches() == []
    # The CQs are still usable and closable: nothing is left unacked.
    send_imm(qa, 3)

    async def again():
        return await asyncio.wait_for(aio.poll(rcq), 30)

    assert [wc.imm_data for wc in asyncio.run(again())] == [3]
    assert rcq.events_unacked == 0


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="needs root and ip(8) (runs in the rxe guest)",
)
def test_async_events_of_a_link_flap(ctx, port, gid_index):
    ET = ib.EventType

    async def main():
        loop = asyncio.get_running_loop()
        types = []

        async def watch():
            async for ev in aio.async_events(ctx):
                assert ev.acked
                types.append(ev.event_type)
                if ev.event_type == ET.PORT_ACTIVE:
                    assert ev.element_type == "port" and ev.element == port
                    return

        t = asyncio.ensure_future(watch())
        await asyncio.sleep(0.2)
        assert not t.done()
        await loop.run_in_executor(None, subprocess.run, ["ip", "link", "set", NETDEV, "down"])
        await asyncio.sleep(0.5)
        await loop.run_in_executor(None, subprocess.run, ["ip", "link", "set", NETDEV, "up"])
        await asyncio.wait_for(t, 30)
        return types

    try:
        types = asyncio.run(main())
    finally:
        subprocess.run(["ip", "link", "set", NETDEV, "up"], check=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if (
                ctx.query_port(port).state == ib.PortState.ACTIVE
                and not ctx.query_gid(port, gid_index).is_zero()
            ):
                break
            time.sleep(0.1)
    assert ET.PORT_ERR in types and types[-1] == ET.PORT_ACTIVE
    assert aio._debug_watches() == []


def test_aio_example_runs(capsys):
    """examples/aio_sendrecv.py, the README's asyncio program (its main(),
    in this process: a new interpreter costs many seconds in the guest)."""
    from pathlib import Path

    from support import load_path

    path = Path(__file__).resolve().parents[2] / "examples" / "aio_sendrecv.py"
    example = load_path("aio_sendrecv", path)
    asyncio.run(example.main(300))
    assert "300 messages sent and received in order" in capsys.readouterr().out
    assert aio._debug_watches() == []
