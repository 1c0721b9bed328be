"""Every query's answer changes in one table (pipelines/engine/answer_changes.py): a batch logs them
in one commit; each query reads its own rows in its own shape, by its own variable spelling, also as
``gold_<query>_changes`` in ``lakegraph sql``; a lake of the earlier layout (a changes table per
query) is moved in once, at the version an interrupted batch read, and runs on as one that never
had it."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pipelines import cli
from pipelines.answers import changes
from pipelines.catalog import lookup, registered
from pipelines.engine.answer_changes import adopt_legacy, changes_schema, of_query
from pipelines.lake import ANSWER_CHANGES, legacy_changes_table
from pipelines.storage import Txn
from pipelines.storage.delta_rs import DeltaRsStore

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LANDING = ["01_initial.nt", "02_enrolments.rdfp", "03_updates.jsonl", "04_semester2.rdfp"]
QUERIES = ("classmates", "teaching", "db_students")


def lakegraph(lake: str, *argv: str) -> None:
    assert cli.main(["--lake", lake, "-q", *argv]) == 0


def feed(lake: str, files: list[str]) -> None:
    for name in files:
        lakegraph(lake, "ingest", str(EXAMPLES / "landing" / name))
        lakegraph(lake, "run")


def bag(table: pa.Table) -> list[str]:
    """A table's rows as sorted reprs: the order of changes within a batch is not content."""
    return sorted(map(repr, table.to_pylist()))


def registered_lake(lake: str) -> None:
    lakegraph(lake, "init")
    for query in QUERIES:
        lakegraph(lake, "register", str(EXAMPLES / "queries" / f"{query}.rq"))


def test_a_batch_logs_every_query_s_answer_changes_in_one_commit(tmp_path, spark):  # noqa: ARG001
    lake = str(tmp_path / "lake")
    registered_lake(lake)
    store = DeltaRsStore(lake)
    before = store.version(ANSWER_CHANGES)
    feed(lake, LANDING[:1])
    store = DeltaRsStore(lake)
    touched = {r["_query"] for r in store.read_arrow(ANSWER_CHANGES).to_pylist() if r["_batch"] == 1}
    assert len(touched) >= 2, "the batch changed the answers of several queries"
    assert store.version(ANSWER_CHANGES) == before + 1, "one commit for all of them"
    assert not any(store.exists(legacy_changes_table(q)) for q in QUERIES)


def test_queries_share_a_variable_s_column_whatever_its_case(tmp_path, spark, capsys):  # noqa: ARG001
    lake = str(tmp_path / "lake")
    lakegraph(lake, "init")
    for name, var in (("lower", "name"), ("upper", "Name")):
        text = f"SELECT ?s ?{var} WHERE {{ ?s <http://xmlns.com/foaf/0.1/name> ?{var} }}"
        (tmp_path / f"{name}.rq").write_text(text)
        lakegraph(lake, "register", str(tmp_path / f"{name}.rq"))
    feed(lake, LANDING[:1])
    store = DeltaRsStore(lake)
    assert [c for c in store.schema(ANSWER_CHANGES).names if c.lower() == "name"] == ["name"]
    upper, lower = changes(store, "upper").drop_columns(["_query"]), changes(store, "lower").drop_columns(["_query"])
    assert "Name" in upper.column_names and upper.num_rows > 0
    assert bag(upper.rename_columns(lower.column_names)) == bag(lower)
    capsys.readouterr()
    assert cli.main(["--lake", lake, "sql", "SELECT count(Name) AS n FROM gold_upper_changes", "--format", "tsv"]) == 0
    assert capsys.readouterr().out.split() == ["n", str(upper.num_rows)]
    assert cli.main(["--lake", lake, "sql", "SELECT * FROM gold_upper_changes@v99"]) != 0
    assert "'gold_upper_changes' (a view of 'answer_changes') has no version 99" in capsys.readouterr().err


def _to_legacy(store: DeltaRsStore, name: str) -> pa.Table:
    """Put query ``name``'s answer changes back in a table of its own (the earlier layout)."""
    plan = lookup(store, name).plan
    rows = of_query(store.read_arrow(ANSWER_CHANGES), plan)
    store.create(legacy_changes_table(name), changes_schema(plan))
    store.append(legacy_changes_table(name), rows)
    store.delete(ANSWER_CHANGES, f"_query = '{name}'")
    return rows


def test_a_query_s_changes_table_of_its_own_is_moved_in_once(tmp_path, spark):  # noqa: ARG001
    lake = str(tmp_path / "lake")
    registered_lake(lake)
    feed(lake, LANDING[:1])
    store = DeltaRsStore(lake)
    plans = [q.plan for q in registered(store)]
    rows = _to_legacy(store, "teaching")
    # a move interrupted after its append, before the old table was dropped: the next one only drops it
    assert adopt_legacy(store, plans, {}) == ["teaching"]
    store.create(legacy_changes_table("teaching"), changes_schema(lookup(store, "teaching").plan))
    store.append(legacy_changes_table("teaching"), rows)
    assert adopt_legacy(store, plans, {}) == ["teaching"]
    assert not store.exists(legacy_changes_table("teaching"))
    assert bag(changes(store, "teaching")) == bag(rows)
    assert adopt_legacy(store, plans, {}) == []


def test_changes_are_moved_in_at_the_version_an_interrupted_batch_read(tmp_path, spark):  # noqa: ARG001
    """A batch interrupted on the earlier layout is re-run from the versions it recorded, and
    appends its changes again: the rows moved in are the table's at that version."""
    lake = str(tmp_path / "lake")
    registered_lake(lake)
    feed(lake, LANDING[:1])
    store = DeltaRsStore(lake)
    rows = _to_legacy(store, "teaching")
    recorded = store.version(legacy_changes_table("teaching"))
    # the interrupted batch's append
    store.append(legacy_changes_table("teaching"), rows.slice(0, 1), Txn("lakegraph-batch", 2))
    assert adopt_legacy(store, [lookup(store, "teaching").plan], {legacy_changes_table("teaching"): recorded}) \
        == ["teaching"]
    assert changes(store, "teaching").num_rows == rows.num_rows


def test_a_lake_of_the_earlier_layout_runs_on_as_one_that_never_had_it(tmp_path, spark):  # noqa: ARG001
    straight, legacy = str(tmp_path / "straight"), str(tmp_path / "legacy")
    for lake in (straight, legacy):
        registered_lake(lake)
    feed(straight, LANDING)
    feed(legacy, LANDING[:2])
    store = DeltaRsStore(legacy)
    for query in QUERIES:
        _to_legacy(store, query)
    feed(legacy, LANDING[2:])
    store, expected = DeltaRsStore(legacy), DeltaRsStore(straight)
    assert not any(store.exists(legacy_changes_table(q)) for q in QUERIES)
    for query in QUERIES:
        assert bag(changes(store, query)) == bag(changes(expected, query)), query
