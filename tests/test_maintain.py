"""Table maintenance on a real lake: compaction keeps answers and time travel, its commits are not
read as new data, vacuum below the horizon needs force, and the unconsumed bronze change feed
survives even a forced vacuum."""
from __future__ import annotations

import pytest

from pipelines import answers as A
from pipelines.lake import BRONZE, BatchLog, BatchRecord
from pipelines.ops.maintain import MaintenanceError, maintain
from pipelines.engine.runner import Runner

from .lakes import build_lake, ops_context
from .oracle import oracle_bag, table_bag
from .streams import PREFIXES

QUERIES = {"pairs": "SELECT ?x ?z WHERE { ?x ex:knows ?y . ?y ex:knows ?z . ?z ex:type ex:Person }"}
PROJECTION = ("x", "z")


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):
    """Three completed batches, then one more file ingested and not yet consumed by a batch."""
    lake = build_lake(tmp_path_factory.mktemp("maintain"), spark, QUERIES, batches=3, seed=33)
    lake.ingest()
    return lake


def _answers_by_batch(store) -> dict[int, object]:
    return {r.batch: table_bag(A.answers(store, "pairs", batch=r.batch), PROJECTION)
            for r in BatchLog(store).records("done")}


def _caught_up_equals_oracle(lake, store, spark) -> None:
    report = Runner(store, spark).run()
    assert [b["messages"] for b in report.batches] == [30], "the unconsumed file, once, and nothing else"
    expected = oracle_bag(PREFIXES + QUERIES["pairs"], lake.stream.graph, PROJECTION)
    assert table_bag(A.answers(store, "pairs"), PROJECTION) == expected


def test_a_retention_below_the_horizon_is_refused_without_force(lake):
    with pytest.raises(MaintenanceError, match=r"^retention 24 h is shorter than the 168 h time-travel horizon"):
        maintain(lake.store, retention_hours=24)
    with pytest.raises(MaintenanceError, match="at least 0 hours"):
        maintain(lake.store, retention_hours=-1, force=True)


def test_an_interrupted_batch_is_refused(lake, tmp_path):
    store = lake.copy(tmp_path / "lake")
    last = BatchLog(store).last_done()
    BatchLog(store).write(BatchRecord(batch=last.batch + 1, status="planned", bronze_from=last.bronze_to,
                                      bronze_to=store.version(BRONZE), seq_from=last.seq_to, seq_to=last.seq_to + 30))
    with pytest.raises(MaintenanceError, match=f"batch {last.batch + 1} was interrupted"):
        maintain(store)


def test_compaction_keeps_answers_and_time_travel_and_is_not_new_data(lake, spark, tmp_path):
    store = lake.copy(tmp_path / "lake")
    before = _answers_by_batch(store)
    bronze_head = store.version(BRONZE)
    left = tmp_path / "lake" / "_spark_out" / "killed"          # a Spark append killed before its commit
    left.mkdir(parents=True)
    (left / "part-0.parquet").write_bytes(b"never committed")
    report = maintain(store)
    assert not (tmp_path / "lake" / "_spark_out").exists()
    compacted = {t.table for t in report.tables if t.files_removed > 1}
    assert {"bronze", "batches", "ingest_log"} <= compacted
    ordered = {t.table: t.note for t in report.tables if t.note.startswith("Z-ordered")}
    assert "views" in ordered and "pe_pairs_0" not in ordered   # one component
    assert all(name == "views" or name.startswith(("p_", "pe_")) for name in ordered)
    assert all(t.vacuumed == 0 for t in report.tables), "nothing is older than the horizon"
    assert _answers_by_batch(store) == before
    after_compaction = store.changes(BRONZE, bronze_head + 1)
    assert store.version(BRONZE) > bronze_head and after_compaction.num_rows == 0
    _caught_up_equals_oracle(lake, store, spark)


def test_a_forced_vacuum_keeps_the_unconsumed_change_feed(lake, spark, tmp_path):
    store = lake.copy(tmp_path / "lake")
    resume = BatchLog(store).last_done().bronze_to
    report = maintain(store, retention_hours=0, force=True)
    tables = {t.table: t for t in report.tables}
    assert tables["bronze"].vacuumed == 0
    assert tables["bronze"].note == f"kept files from version {resume} on for the unconsumed change feed"
    assert sum(t.vacuumed for t in report.tables) > 0, "the other tables lost their old files"
    assert store.changes(BRONZE, resume).num_rows > 0
    _caught_up_equals_oracle(lake, store, spark)


def test_the_maintain_command(lake, tmp_path, capsys):
    store = lake.copy(tmp_path / "lake")
    ctx = ops_context(store, ["maintain", "--retention-hours", "24"])
    with pytest.raises(MaintenanceError, match="shorter than the 168 h time-travel horizon"):
        ctx.args.func(ctx)
    ctx = ops_context(store, ["maintain"])
    ctx.args.func(ctx)
    out = capsys.readouterr().out
    assert "(retention 168 h)" in out and out.splitlines()[-1].startswith("maintained 10 table(s)")
