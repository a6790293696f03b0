"""ibverbs.bootstrap's collectives against a dict-backed store, ranks as
threads (no device, no torch)."""

import threading
import time

import pytest

from ibverbs import bootstrap


class DictStore:
    """The Store protocol over a dict: set, blocking get, add."""

    def __init__(self):
        self.data = {}
        self.cond = threading.Condition()
        self.calls = 0

    def set(self, key, value):
        assert isinstance(key, str)
        with self.cond:
            self.calls += 1
            self.data[key] = bytes(value)
            self.cond.notify_all()

    def get(self, key):
        with self.cond:
            self.calls += 1
            if not self.cond.wait_for(lambda: key in self.data, timeout=5):
                raise TimeoutError(f"DictStore.get({key!r})")
            v = self.data[key]
            return v if isinstance(v, bytes) else str(v).encode()

    def add(self, key, amount):
        with self.cond:
            self.calls += 1
            v = int(self.data.get(key, 0)) + amount
            self.data[key] = v
            self.cond.notify_all()
            return v


def run_ranks(world_size, fn, *, ranks=None, store=None):
    """Run fn(store, rank) in one thread per rank; returns {rank: result}
    and re-raises the first exception."""
    store = DictStore() if store is None else store
    results, errors = {}, {}

    def body(r):
        try:
            results[r] = fn(store, r)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors[r] = e

    threads = [
        threading.Thread(target=body, args=(r,))
        for r in (range(world_size) if ranks is None else ranks)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    if errors:
        raise next(iter(errors.values()))
    return results


@pytest.mark.parametrize("world_size", [1, 2, 5, 16])
def test_allgather_every_rank_sees_all(world_size):
    res = run_ranks(
        world_size,
        lambda s, r: bootstrap.allgather(
            s, r, world_size, f"rank {r}".encode() * (r + 1), timeout=20
        ),
    )
    want = [f"rank {r}".encode() * (r + 1) for r in range(world_size)]
    assert res == {r: want for r in range(world_size)}


def test_many_exchanges_on_one_store_and_prefix():
    def body(s, r):
        out = []
        for i in range(20):
            out.append(bootstrap.allgather(s, r, 3, bytes([r, i]), timeout=20))
            bootstrap.barrier(s, r, 3, timeout=20)
        return out

    res = run_ranks(3, body)
    for r in range(3):
        assert res[r] == [[bytes([p, i]) for p in range(3)] for i in range(20)]


def test_prefixes_are_independent():
    def body(s, r):
        a = bootstrap.allgather(s, r, 2, b"a%d" % r, prefix="x", timeout=20)
        b = bootstrap.allgather(s, r, 2, b"b%d" % r, prefix="y", timeout=20)
        return a, b

    res = run_ranks(2, body)
    assert res[0] == res[1] == ([b"a0", b"a1"], [b"b0", b"b1"])


def test_barrier_waits_for_the_last_rank():
    left = {}

    def body(s, r):
        if r == 2:
            time.sleep(0.3)
        bootstrap.barrier(s, r, 3, timeout=20)
        left[r] = time.monotonic()

    t0 = time.monotonic()
    run_ranks(3, body)
    assert all(t - t0 >= 0.3 for t in left.values())


def test_timeout_names_the_missing_ranks():
    """Ranks 0, 2 and 4 of 5 come; rank 0's error names 1 and 3.  Rank 0
    starts its clock once 2 and 4 have counted in (on a loaded machine a
    thread can start later than another's whole timeout), and theirs time
    out unseen: the error raised is rank 0's."""

    def body(s, r):
        if r != 0:
            try:
                return bootstrap.allgather(s, r, 5, b"x", timeout=0.3)
            except TimeoutError:
                return None
        with s.cond:
            arrived = s.cond.wait_for(
                lambda: all(f"ibverbs/1/in/{p}" in s.data for p in (2, 4)), timeout=30
            )
        assert arrived, sorted(s.data)
        return bootstrap.allgather(s, r, 5, b"x", timeout=0.3)

    store = DictStore()
    with pytest.raises(TimeoutError) as ei:
        run_ranks(5, body, ranks=[0, 2, 4], store=store)
    msg = str(ei.value)
    assert "rank(s) 1, 3 never arrived" in msg
    assert "of 5" in msg and "generation 1" in msg
    with pytest.raises(TimeoutError, match=r"barrier: .*rank\(s\) 0 never arrived"):
        bootstrap.barrier(DictStore(), 1, 2, timeout=0.1)


def test_stale_generation_is_ignored():
    """A job restarted on a store that holds an earlier run's keys: its
    first exchange is a new generation and reads none of them."""
    store = DictStore()
    run_ranks(3, lambda s, r: bootstrap.allgather(s, r, 3, b"old%d" % r, timeout=20), store=store)
    # What a dead run could also have left: data of the next generation
    # from rank 1 only (it died before counting itself in is irrelevant:
    # the new run's ranks all start after generation 1).
    res = run_ranks(
        3, lambda s, r: bootstrap.allgather(s, r, 3, b"new%d" % r, timeout=20), store=store
    )
    assert res[0] == res[1] == res[2] == [b"new0", b"new1", b"new2"]
    assert store.data["ibverbs/1/data/1"] == b"old1"
    assert store.data["ibverbs/2/data/1"] == b"new1"


def test_get_is_only_called_for_keys_that_exist():
    """The store's blocking get never waits: a rank that arrives late does
    not leave the others blocked inside get (where no timeout of ours
    applies)."""

    class Strict(DictStore):
        def get(self, key):
            assert key in self.data, key
            return super().get(key)

    res = run_ranks(
        4, lambda s, r: bootstrap.allgather(s, r, 4, b"%d" % r, timeout=20), store=Strict()
    )
    assert res[3] == [b"0", b"1", b"2", b"3"]


def test_exchange_mr_records():
    class FakeMR:
        def __init__(self, r):
            self.addr, self.length, self.rkey = 0x7F0000000000 + r, 4096 * r, r + 7

    res = run_ranks(3, lambda s, r: bootstrap.exchange_mr(s, r, 3, FakeMR(r), timeout=20))
    want = [bootstrap.RemoteMR(0x7F0000000000 + r, 4096 * r, r + 7) for r in range(3)]
    assert res[0] == res[2] == want
    assert res[1][2].rkey == 9
    with pytest.raises(TypeError, match="addr, length and rkey"):
        bootstrap.exchange_mr(DictStore(), 0, 1, object())


@pytest.mark.parametrize(
    "args, exc",
    [
        ((0, 0), ValueError),
        ((2, 2), ValueError),
        ((-1, 2), ValueError),
        (("0", 2), TypeError),
        ((0, 2.0), TypeError),
        ((True, 2), TypeError),
    ],
)
def test_bad_group_arguments(args, exc):
    with pytest.raises(exc):
        bootstrap.allgather(DictStore(), *args, b"")


def test_bad_data_prefix_timeout():
    with pytest.raises(TypeError, match="data must be bytes"):
        bootstrap.allgather(DictStore(), 0, 1, "text")
    with pytest.raises(ValueError, match="prefix"):
        bootstrap.barrier(DictStore(), 0, 1, prefix="")
    with pytest.raises(ValueError, match="timeout"):
        bootstrap.barrier(DictStore(), 0, 1, timeout=0)


def test_torch_stores_and_torch_store(monkeypatch):
    """The real torch.distributed stores (imported once here: torch is
    slow to import) serve as they are."""
    dist = pytest.importorskip("torch.distributed", reason="torch is not installed")
    from datetime import timedelta

    tcp = dist.TCPStore(
        "127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=30), wait_for_workers=False
    )
    clients = [
        dist.TCPStore("127.0.0.1", tcp.port, is_master=False, timeout=timedelta(seconds=30))
        for _ in range(3)
    ]
    for store in (dist.HashStore(), dist.PrefixStore("job", dist.HashStore())):
        res = run_ranks(
            3, lambda s, r: bootstrap.allgather(s, r, 3, b"%d" % r, timeout=20), store=store
        )
        assert res[2] == [b"0", b"1", b"2"]
    res = run_ranks(
        3,
        lambda s, r: (
            bootstrap.allgather(clients[r], r, 3, b"t%d" % r, timeout=20),
            bootstrap.barrier(clients[r], r, 3, timeout=20),
        ),
    )
    assert res[0][0] == res[1][0] == [b"t0", b"t1", b"t2"]
    with pytest.raises(TimeoutError, match=r"rank\(s\) 1 never arrived"):
        bootstrap.barrier(clients[0], 0, 2, prefix="lonely", timeout=0.2)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(RuntimeError, match="RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set"):
        bootstrap.torch_store()
    # With a default process group, torch_store() hands out its store.
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        store, rank, world_size = bootstrap.torch_store()
        assert (rank, world_size) == (0, 1)
        assert bootstrap.allgather(store, 0, 1, b"pg", timeout=5) == [b"pg"]
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------------------
# connect_mesh against stand-in verbs objects (the real ones: rxe0, in
# tests/device/test_bootstrap_device.py)
# ---------------------------------------------------------------------------

import itertools  # noqa: E402
import types  # noqa: E402

import ibverbs as ib  # noqa: E402

_qp_nums = itertools.count(0x100)
V4_GID = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1])
LINK_LOCAL = b"\xfe\x80" + bytes(14)


class FakeQP:
    def __init__(self, init, pd):
        self.init = init
        self.pd = pd  # connect_rc reads the port's MTU through qp.pd.context
        self.qp_num = next(_qp_nums)
        self.calls = []
        self.closed = False

    def to_init(self, port, access):
        self.port = port
        self.calls.append(("init", port, int(access)))

    def to_rtr(self, remote, *, sgid_index, mtu, port=None, **kw):
        # As QP.to_rtr: without port=, the one the QP was given at INIT
        # (connect_rc passes none, as the published package does).
        self.calls.append(("rtr", remote, sgid_index, self.port if port is None else port))

    def to_rts(self, psn, **kw):
        self.calls.append(("rts", psn))

    def close(self):
        self.closed = True


class FakeCtx:
    name = "fake0"

    def __init__(self, link_layer=ib.LinkLayer.ETHERNET, table=None):
        self.port_attr = types.SimpleNamespace(
            lid=0x2A, active_mtu=ib.MTU.MTU_1024, link_layer=link_layer, gid_tbl_len=4
        )
        # index -> (raw gid, type); index 1 an IPv4 RoCE v1 GID, 2 the v2 one
        self.table = (
            table
            if table is not None
            else {0: (LINK_LOCAL, 2), 1: (V4_GID, 1), 2: (V4_GID, 2), 3: (LINK_LOCAL, 2)}
        )

    def query_port(self, port):
        return self.port_attr

    def query_gid(self, port, index):
        if index not in self.table:
            raise ib.VerbsError(22, "no such GID", "ibv_query_gid")
        return ib.Gid(self.table[index][0])

    def query_gid_ex(self, port, index):
        return self.query_gid(port, index), self.table[index][1], 0


class FakePD:
    def __init__(self, ctx=None, fail_at=None):
        self.context = ctx or FakeCtx()
        self.qps = []
        self.fail_at = fail_at

    def create_qp(self, init):
        if len(self.qps) == self.fail_at:
            raise ib.VerbsError(12, "Cannot allocate memory", "ibv_create_qp")
        qp = FakeQP(init, self)
        self.qps.append(qp)
        return qp


def test_connect_mesh_pairs_every_qp_with_its_peer(caplog):
    caplog.set_level("INFO", logger="ibverbs.bootstrap")
    world = 5
    pds = {r: FakePD() for r in range(world)}
    res = run_ranks(
        world,
        lambda s, r: bootstrap.connect_mesh(
            s, r, world, pds[r], send_cq="scq", qp_init={"max_send_wr": 7}, timeout=20
        ),
    )
    for r in range(world):
        assert sorted(res[r]) == [p for p in range(world) if p != r]
        for p, qp in res[r].items():
            peer_qp = res[p][r]
            init, rtr, rts = qp.calls
            assert init == ("init", 1, int(bootstrap._DEFAULT_ACCESS))
            remote = rtr[1]
            assert remote.qp_num == peer_qp.qp_num
            assert (rtr[2], rtr[3]) == (2, 1)  # the RoCE v2 IPv4 GID, port 1
            assert remote.gid == V4_GID and remote.lid == 0x2A
            # the psn this QP starts its send queue at is the one the peer
            # expects (its to_rtr got it through the store)
            assert rts[1] == peer_qp.calls[1][1].psn
            assert qp.init.send_cq == qp.init.recv_cq == "scq"
            assert qp.init.max_send_wr == 7
            assert qp.init.qp_type == ib.QPType.RC
    msgs = [r.getMessage() for r in caplog.records]
    assert (
        msgs.count("connect_mesh: fake0 port 1: RoCE v2 IPv4 GID index 2 (::ffff:10.0.0.1)")
        == world
    )


def test_connect_mesh_on_infiniband_uses_the_lid():
    pds = {r: FakePD(FakeCtx(ib.LinkLayer.INFINIBAND)) for r in range(2)}
    res = run_ranks(
        2,
        lambda s, r: bootstrap.connect_mesh(s, r, 2, pds[r], send_cq="c", recv_cq="r", timeout=20),
    )
    _, rtr, _ = res[0][1].calls
    assert rtr[1].gid == bytes(16) and rtr[1].lid == 0x2A and rtr[2] == 0
    assert res[0][1].init.recv_cq == "r"


def test_connect_mesh_explicit_gid_index_and_no_v4_gid():
    pds = {r: FakePD() for r in range(2)}
    res = run_ranks(
        2,
        lambda s, r: bootstrap.connect_mesh(s, r, 2, pds[r], send_cq="c", gid_index=3, timeout=20),
    )
    assert res[1][0].calls[1][2] == 3 and res[1][0].calls[1][1].gid == LINK_LOCAL
    ctx = FakeCtx(table={0: (LINK_LOCAL, 2), 1: (V4_GID, 1)})
    with pytest.raises(ValueError, match="no RoCE v2 GID with an IPv4 address"):
        bootstrap.pick_gid_index(ctx, 1)


def test_connect_mesh_failure_closes_its_qps_and_names_the_missing_rank():
    """Rank 1 fails creating its second QP: it closes its first and raises;
    the others time out naming rank 1, closing theirs."""
    pds = {0: FakePD(), 1: FakePD(fail_at=1), 2: FakePD()}
    store, errors = DictStore(), {}

    def body(r):
        try:
            bootstrap.connect_mesh(store, r, 3, pds[r], send_cq="c", timeout=0.5)
        except BaseException as e:  # noqa: BLE001 - checked below
            errors[r] = e

    threads = [threading.Thread(target=body, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert isinstance(errors[1], ib.VerbsError)
    for r in (0, 2):
        assert isinstance(errors[r], TimeoutError)
        assert "rank(s) 1 never arrived" in str(errors[r])
    for pd in pds.values():
        assert pd.qps and all(qp.closed for qp in pd.qps)


def test_qp_init_may_not_set_what_connect_mesh_sets():
    with pytest.raises(TypeError, match="qp_init must not set 'send_cq'"):
        bootstrap.connect_mesh(DictStore(), 0, 1, FakePD(), send_cq="c", qp_init={"send_cq": "x"})


def test_the_package_never_imports_torch():
    import subprocess
    import sys

    code = "import sys, ibverbs, ibverbs.bootstrap, ibverbs.aio; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
