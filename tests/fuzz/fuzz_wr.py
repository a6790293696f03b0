"""Work requests and SGEs from buffers and integers: SendBatch and
RecvBatch from columns (any 1-D buffer: the input picks the item format,
the length and the bytes), SGE, SendWR and RecvWR from the input's
integers, posted on a QP of the recording double; CQ.poll_into into
columns.  Each returns or raises a promised exception (harness.PROMISED),
and nothing the input gives makes C read or write outside a buffer."""

import array

import harness

ib, _ = harness.instrumented_import()
FAKE = harness.fake()

import apiseq  # noqa: E402

CTX = ib.Context("fake0")
PD = CTX.alloc_pd()
CQ = CTX.create_cq(64)
QP = PD.create_qp(ib.QPInitAttr(send_cq=CQ, qp_type=ib.QPType.RC, max_send_sge=4, max_recv_sge=4))
SRQ = PD.create_srq()
MR = PD.reg_mr(0x100000, 1 << 20)
FORMATS = "bBhHiIlLqQfd"


def column(src: apiseq.Source):
    """A column, an int, None or a wrong type, as the input says."""
    kind = src.below(8)
    if kind == 0:
        return None
    if kind == 1:
        return src.pick(apiseq.INTS)
    if kind == 2:
        return src.pick(("x", 1.5, [1, 2], object()))
    fmt = src.pick(FORMATS)
    item = array.array(fmt).itemsize
    raw = src.take(item * src.below(17))
    raw = raw[: len(raw) - len(raw) % item]
    col = array.array(fmt)
    col.frombytes(raw)
    if kind == 3:
        return memoryview(bytes(raw))  # a read-only buffer of bytes
    if kind == 4 and len(col) > 1:
        return memoryview(col)[::2]  # not contiguous
    return col


def call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - sorted here
        if harness.is_promised(e):
            return None
        raise


def test_one_input(data: bytes) -> None:
    src = apiseq.Source(data)
    while src.more():
        what = src.below(6)
        if what == 0:
            b = call(
                ib.SendBatch,
                src.pick((MR, None, CQ)),
                column(src),
                column(src),
                column(src),
                column(src),
                opcode=src.pick(apiseq.INTS),
                remote_base=src.pick(apiseq.INTS),
                lkey=column(src),
                wr_id=column(src),
                signal_every=src.pick(apiseq.INTS),
                inline_threshold=src.pick(apiseq.INTS),
            )
            if b is not None:
                call(b.post, QP, src.pick(apiseq.INTS), src.pick((None, *apiseq.INTS)))
                call(b.update, local=column(src), lengths=column(src), wr_id=column(src))
                call(b.post, QP)
        elif what == 1:
            b = call(
                ib.RecvBatch,
                src.pick((MR, None)),
                column(src),
                column(src),
                lkey=column(src),
                wr_id=column(src),
            )
            if b is not None:
                call(b.post, src.pick((QP, SRQ)), src.pick(apiseq.INTS), None)
        elif what == 2:
            sges = [
                call(ib.SGE, src.pick((MR, *apiseq.INTS)), src.pick((None, *apiseq.INTS)))
                for _ in range(src.below(6))
            ]
            wr = call(
                ib.SendWR,
                src.pick(apiseq.INTS),
                [s for s in sges if s is not None],
                src.pick(apiseq.INTS),
                src.pick(apiseq.INTS),
                imm_data=src.pick((None, *apiseq.INTS)),
            )
            if wr is not None:
                call(QP.post_send, wr)
                rwr = call(ib.RecvWR, wr.wr_id, wr.sg_list)
                if rwr is not None:
                    call(QP.post_recv, rwr)
        elif what == 3:
            call(MR.sge, src.pick((None, *apiseq.INTS)), src.pick(apiseq.INTS))
        else:
            call(
                CQ.poll_into,
                wr_id=column(src),
                status=column(src),
                byte_len=column(src),
                num_entries=src.pick(apiseq.INTS),
            )
    CQ.poll(64)


if __name__ == "__main__":
    harness.main(test_one_input)
