"""Context.find_gid with an ip whose text cannot be had (its __str__
raises, or it has no UTF-8), against the recording double
(tests/fakes/recording/): the error passes through, no verb is called."""

from __future__ import annotations


def test_find_gid_passes_on_an_ip_without_text(recording):
    def body(fake):
        import ipaddress

        import ibverbs

        class NoText(ipaddress.IPv4Address):
            def __str__(self):
                raise RuntimeError("no text")

        out = {}
        with ibverbs.Context("fake0") as ctx:
            fake.clear()
            for name, ip in (
                ("no_text", NoText("192.0.2.1")),
                ("bad_text", "\udcff"),  # a lone surrogate: no UTF-8
            ):
                try:
                    ctx.find_gid(ip=ip)
                except (RuntimeError, UnicodeEncodeError) as e:
                    out[name] = type(e).__name__
            out["verbs"] = [r.verb for r in fake.records()]
        return out

    res = recording.run(body)
    out = res.ok()
    assert out == {"no_text": "RuntimeError", "bad_text": "UnicodeEncodeError", "verbs": []}
    assert res.live == 0, res.live_report
