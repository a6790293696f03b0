"""Duck-typed address vectors (core/attrs.c's ah_attr_from_py) through
PD.create_ah, against the recording double (tests/fakes/recording/):
is_global defaulted from dgid when the record has none, an is_global
whose truth raises, and a record with no field at all."""

from __future__ import annotations


def test_create_ah_reads_duck_typed_records(recording):
    def body(fake):
        from types import SimpleNamespace

        import ibverbs

        class Truthless:
            def __bool__(self):
                raise RuntimeError("no truth")

        out = {}
        with ibverbs.Context("fake0") as ctx, ctx.alloc_pd() as pd:
            for name, rec in (
                ("dgid", SimpleNamespace(port_num=1, dgid="fe80::7")),
                ("no_dgid", SimpleNamespace(port_num=1, dlid=9)),
            ):
                fake.clear()
                with pd.create_ah(rec):
                    r = fake.one("create_ah")
                    out[name] = [r["attr.is_global"], r["attr.dlid"]]
            for name, rec in (
                ("truthless", SimpleNamespace(port_num=1, is_global=Truthless())),
                ("empty", SimpleNamespace()),
            ):
                try:
                    pd.create_ah(rec)
                except (RuntimeError, TypeError) as e:
                    out[name] = [type(e).__name__, str(e)]
        return out

    res = recording.run(body)
    out = res.ok()
    assert out["dgid"] == [1, 0]
    assert out["no_dgid"] == [0, 9]
    assert out["truthless"] == ["RuntimeError", "no truth"]
    assert out["empty"][0] == "TypeError"
    assert out["empty"][1].startswith("ah_attr must be an AHAttr (or have its fields)")
    assert res.live == 0, res.live_report
