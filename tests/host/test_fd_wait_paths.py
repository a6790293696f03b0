"""The GIL-free wait on a handle's fd (core/handle.c's fd_wait_readable)
interrupted by signals, against the recording double
(tests/fakes/recording/), whose completion channel fd blocks: a handler
that returns lets the wait go on, one that raises ends it with its
exception, one that closes the object ends it with EBADF.  The same for
Context.get_async_event on a blocking async_fd."""

from __future__ import annotations

import errno


def test_signals_during_a_blocking_wait(recording):
    def body(fake):
        import os
        import signal

        import ibverbs

        class Stop(Exception):
            pass

        out = {}
        ticks = []

        def run(obj, call, last):
            """call() with SIGALRM every 20 ms: the handler returns once,
            then does last(obj)."""
            ticks.clear()

            def handler(signum, frame):
                ticks.append(signum)
                if len(ticks) == 1:
                    signal.setitimer(signal.ITIMER_REAL, 0.02)
                else:
                    last(obj)

            old = signal.signal(signal.SIGALRM, handler)
            signal.setitimer(signal.ITIMER_REAL, 0.02)
            try:
                call()
            except ibverbs.VerbsError as e:
                return [len(ticks), "VerbsError", e.errno, e.operation]
            except Stop as e:
                return [len(ticks), "Stop", str(e)]
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
            return [len(ticks), "returned"]

        def stop(obj):
            raise Stop("from the handler")

        def close(obj):
            obj.close()

        with ibverbs.Context("fake0") as ctx:
            ch = ctx.create_comp_channel()
            out["raise"] = run(ch, ch.get_cq_event, stop)
            out["close"] = run(ch, ch.get_cq_event, close)
            out["ch_closed"] = ch.closed
        ctx = ibverbs.Context("fake0")
        os.set_blocking(ctx.async_fd, True)
        out["async_raise"] = run(ctx, ctx.get_async_event, stop)
        out["async_close"] = run(ctx, ctx.get_async_event, close)
        out["ctx_closed"] = ctx.closed
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["raise"] == [2, "Stop", "from the handler"]
    assert out["close"][:3] == [2, "VerbsError", errno.EBADF]
    assert out["ch_closed"] is True
    assert out["async_raise"] == [2, "Stop", "from the handler"]
    assert out["async_close"][:3] == [2, "VerbsError", errno.EBADF]
    assert out["ctx_closed"] is True
    # the waits read nothing: no event was taken from either fd
    assert res.calls("get_cq_event") == [] and res.calls("get_async_event") == []
    assert res.live == 0, res.live_report
