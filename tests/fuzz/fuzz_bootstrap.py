"""The bootstrap's Store messages (ibverbs.bootstrap): what the other
ranks publish, read by exchange_mr (their MR records) and connect_mesh
(their QPInfo records, then connect_rc on the recording double).  The
input gives world_size, this rank and every other rank's value."""

import harness

ib, (bootstrap,) = harness.instrumented_import("ibverbs.bootstrap")
FAKE = harness.fake()


class Store:
    """Every other rank has arrived; their values are the input's."""

    def __init__(self, world_size: int, values: list[bytes]):
        self.world_size = world_size
        self.values = values
        self.data: dict[str, bytes] = {}
        self.counts: dict[str, int] = {}

    def set(self, key, value):
        self.data[key] = bytes(value)

    def get(self, key):
        if key in self.data:
            return self.data[key]
        rank = int(key.rsplit("/", 1)[1])
        return self.values[rank % len(self.values)]

    def add(self, key, amount):
        if key.endswith("/count") or "/in/" in key:
            return self.world_size
        self.counts[key] = self.counts.get(key, 0) + amount
        return self.counts[key]


def values(data: bytes, n: int) -> list[bytes]:
    out, pos = [], 0
    for _ in range(n):
        k = data[pos] if pos < len(data) else 0
        out.append(data[pos + 1 : pos + 1 + k])
        pos += 1 + k
    return out


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    world_size = 1 + data[0] % 4
    rank = data[1] % world_size
    store = Store(world_size, values(data[2:], world_size) or [b""])
    base = FAKE.live()
    with ib.Context("fake0") as ctx, ctx.alloc_pd() as pd, ctx.create_cq(16) as cq:
        mr = pd.reg_mr(0x10000, 4096)
        try:
            bootstrap.exchange_mr(store, rank, world_size, mr, timeout=1)
        except ValueError:
            pass
        try:
            qps = bootstrap.connect_mesh(
                store, rank, world_size, pd, send_cq=cq, gid_index=0, timeout=1
            )
        except (ValueError, OSError):
            qps = {}
        for qp in qps.values():
            qp.close()
        mr.close()
    if FAKE.live() != base:
        raise AssertionError(f"left in the double: {FAKE.live_report()}")


if __name__ == "__main__":
    harness.main(test_one_input)
