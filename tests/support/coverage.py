"""What the two coverage-table tests (test_verbs_coverage: libibverbs'
verbs; test_provider_coverage: the provider headers' functions) check
alike: every reached row names Python names that exist and say what they
wrap."""

from __future__ import annotations


def name_problems(rows, fn, module, docs_of, names_it) -> list[str]:
    """The faults of the table's rows: an unreached row (where "none")
    that lists names fails the test at once; for each reached row (which
    must list names), each name that docs_of(name) cannot find
    (AttributeError) and, unless the row marks it called inside that
    name, each whose docs fail names_it(row, docs).  fn(row): the row's
    C function, module: the names' module, both for the messages."""
    bad = []
    for row in rows:
        if row.where == "none":
            assert not row.names, f"{fn(row)}: unreached but names {row.names}"
            continue
        assert row.names, f"{fn(row)}: reached ({row.where}) but no Python name"
        for name, inside in zip(row.names, row.inside):
            try:
                docs = docs_of(name)
            except AttributeError:
                bad.append(f"{fn(row)}: {module}.{name} does not exist")
                continue
            if not inside and not names_it(row, docs):
                bad.append(f"{fn(row)}: the docstring of {name} does not name it")
    return bad
