"""The delta-spark backend in the pipeline, and both backends on one lake.

The full oracle, crash and DAG tests run on delta-rs; here a representative subset runs with
delta-spark committing (a delta-spark MERGE costs seconds of Spark jobs where delta-rs takes
milliseconds, so the whole matrix would double the suite): three query classes (a chain, a FILTER, a
late registration with backfill) for three batches on the Spark engine; crashes at the first, a
middle and the last commit of a batch, re-run on the other backend; one Airflow DAG run
(tests/test_dag.py). Lakes
switch backends in the middle, both ways, with time travel and the change feed continuous.
"""
from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from pipelines import answers as A
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.ingest import ingest_paths
from pipelines.spark import has_delta_jars
from pipelines.storage import Txn, open_store
from pipelines.storage.delta_rs import DeltaRsStore
from pipelines.storage.delta_spark import DeltaSparkStore

from .conftest import JARS_MISSING
from .oracle import changes_bag, oracle_bag, table_bag
from .streams import PREFIXES, Stream
from .test_engine_oracle import QUERIES, plan_of
from .test_exactly_once import Crash, CrashAfter, snapshot

SCHEMA = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("_mult", pa.int64(), nullable=False)])
SUBSET = ("chain", "numeric", "gated")   # gated registers late: its backfill runs on delta-spark
LATE = {"gated"}


@pytest.fixture(autouse=True)
def _jars(spark):
    """Every test here needs the jars: set-up fetches them, so their absence fails, never skips."""
    assert has_delta_jars(spark), JARS_MISSING


def _counts(store, name: str, version: int | None = None) -> dict:
    return {r["k"]: r["_mult"] for r in store.read_arrow(name, version).to_pylist()}


@pytest.mark.parametrize("first,second", [("delta-rs", "delta-spark"), ("delta-spark", "delta-rs")])
def test_a_table_continues_on_the_other_backend(tmp_path, spark, first, second):
    lake = str(tmp_path / "lake")
    a = open_store(lake, spark, backend=first)
    a.create("t", SCHEMA)
    a.append("t", pa.table({"k": ["a", "b"], "_mult": [1, 1]}, schema=SCHEMA), Txn("job", 1))
    a.merge_counts("t", pa.table({"k": ["a", "c"], "_mult": [1, 3]}, schema=SCHEMA), ["k"], "_mult", Txn("job", 2))
    b = open_store(lake, spark, backend=second)
    assert b.merge_counts("t", pa.table({"k": ["a"], "_mult": [5]}, schema=SCHEMA), ["k"], "_mult",
                          Txn("job", 2)) is False                     # the first backend's txn holds
    b.merge_counts("t", pa.table({"k": ["a", "b"], "_mult": [-2, 1]}, schema=SCHEMA), ["k"], "_mult", Txn("job", 3))
    b.delete("t", "k = 'c'", Txn("job", 4))
    a.append("t", pa.table({"k": ["d"], "_mult": [1]}, schema=SCHEMA), Txn("job", 5))
    protocol = DeltaTable(a.path("t")).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 4)
    assert protocol.reader_features is None and protocol.writer_features is None
    expected = [{}, {"a": 1, "b": 1}, {"a": 2, "b": 1, "c": 3}, {"b": 2, "c": 3}, {"b": 2}, {"b": 2, "d": 1}]
    for store in (a, b):
        assert store.version("t") == 5 and store.committed("t", "job") == 5
        assert [_counts(store, "t", v) for v in range(6)] == expected
        assert {r["k"]: r["_mult"] for r in store.read("t", 3).collect()} == expected[3]
        feed = sorted((r["_commit_version"], r["_change_type"], r["k"]) for r in store.changes("t", 2, 5).to_pylist())
        assert feed == [(2, "insert", "c"), (2, "update_postimage", "a"), (2, "update_preimage", "a"),
                        (3, "delete", "a"), (3, "update_postimage", "b"), (3, "update_preimage", "b"),
                        (4, "delete", "c"), (5, "insert", "d")]


def test_answers_on_delta_spark_equal_the_oracle_after_every_batch(tmp_path, spark):
    store = open_store(str(tmp_path / "lake"), spark, backend="delta-spark")
    assert isinstance(store, DeltaSparkStore)
    stream = Stream(seed=7)
    plans = {name: plan_of(name) for name in SUBSET}
    for name in SUBSET:
        if name not in LATE:
            register(store, spark, plans[name])
    golds = []
    for i in range(3):
        ingest_paths(store, [str(Stream.write(tmp_path / "landing" / f"b{i}.jsonl", stream.next_batch()))])
        if i == 1:
            for name in LATE:
                register(store, spark, plans[name])
        report = Runner(store, spark, engine="spark").run()
        batch = report.batches[0]["batch"]
        for name in SUBSET:
            if name in LATE and i < 1:
                continue
            gold = table_bag(A.answers(store, name), plans[name].projection)
            assert gold == oracle_bag(PREFIXES + QUERIES[name], stream.graph, plans[name].projection), \
                f"{name} differs from pyoxigraph after batch {batch}"
            golds.append((name, batch, gold))
    for name, batch, gold in golds:   # time travel and the change feed, read by Spark
        assert table_bag(A.answers(store, name, batch=batch), plans[name].projection) == gold
        assert changes_bag(A.changes(store, name), plans[name].projection, batch) == gold


class CrashingSparkStore(CrashAfter, DeltaSparkStore):
    """delta-spark that dies right after its ``budget``-th commit."""


@pytest.fixture(scope="module")
def crash_lake(tmp_path_factory, spark):
    """A delta-rs lake with two queries, one batch done and one waiting; its uninterrupted run."""
    root = tmp_path_factory.mktemp("crash")
    store = open_store(str(root / "lake"), spark, backend="delta-rs")
    stream = Stream(seed=11, batch_size=40)
    ingest_paths(store, [str(Stream.write(root / "l0.jsonl", stream.next_batch()))])
    for name in ("chain", "gated"):
        register(store, spark, plan_of(name))
    Runner(store, spark).run()
    ingest_paths(store, [str(Stream.write(root / "l1.jsonl", stream.next_batch()))])
    reference = root / "reference"
    shutil.copytree(root / "lake", reference)
    commits = CountingStore(str(reference), spark)
    Runner(commits, spark).run()
    return root / "lake", snapshot(reference), commits.commits


class CountingStore(CrashingSparkStore):
    """delta-spark that counts its commits and never crashes."""

    def __init__(self, root: str, spark) -> None:
        super().__init__(root, spark, budget=10**9)


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_crash_on_delta_spark_then_a_rerun_on_delta_rs_equals_uninterrupted(crash_lake, spark, tmp_path, where):
    lake, expected, commits = crash_lake
    budget = {"first": 1, "middle": commits // 2, "last": commits - 1}[where]
    trial = tmp_path / "trial"
    shutil.copytree(lake, trial)
    with pytest.raises(Crash):
        Runner(CrashingSparkStore(str(trial), spark, budget), spark).run()
    Runner(open_store(str(trial), spark, backend="delta-rs"), spark).run()
    assert snapshot(trial) == expected


@pytest.mark.parametrize("argv,backend", [
    (["run", "--engine", "spark"], DeltaRsStore),       # the Spark engine's changes come to the driver
    (["--master", "spark://head:7077", "status"], DeltaRsStore),     # on a cluster too
    (["run"], DeltaRsStore),
    (["--storage", "delta-spark", "run"], DeltaSparkStore),          # the JVM writer when asked for
])
def test_auto_storage_is_delta_rs_unless_asked_or_inside_a_session_with_delta(tmp_path, spark, monkeypatch, argv,
                                                                             backend):
    """A command's store is delta-rs wherever its work runs, and delta-spark when ``--storage``
    says so or when the caller's own Spark session, already running, has the Delta jars."""
    from pipelines.cli import build_parser
    from pipelines.cli.context import Context

    monkeypatch.delenv("LAKEGRAPH_STORAGE", raising=False)
    monkeypatch.delenv("LAKEGRAPH_SPARK_MASTER", raising=False)
    context = Context(build_parser().parse_args(["--lake", str(tmp_path / "lake"), *argv]))
    assert type(context.store()) is backend
    assert type(open_store(str(tmp_path / "lake"), spark)) is DeltaSparkStore     # the test run's session


def test_rows_another_writer_deleted_by_deletion_vector_are_gone_from_every_read(tmp_path, spark):
    """A lake's table may be written by an engine with deletion vectors on (delta-spark, Databricks,
    Trino): its DELETE marks rows in a file rather than rewriting it. The delta-rs store reads the
    version's files itself (pyarrow, and Spark as plain parquet), so it must leave the marked rows
    out, at every version, and keep writing the table as delta-rs does."""
    store = DeltaRsStore(str(tmp_path / "lake"), spark)
    store.create("t", SCHEMA)
    keys = [f"k{i:04d}" for i in range(3000)]
    store.append("t", pa.table({"k": keys, "_mult": [1] * 3000}, schema=SCHEMA))      # version 1: one file
    location = store.path("t").replace("`", "``")
    spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
    spark.sql(f"DELETE FROM delta.`{location}` WHERE k LIKE 'k1%' OR k = 'k0007'")      # version 3
    dt = DeltaTable(store.path("t"))
    assert len(dt.file_uris()) == 1 and dt.version() == 3, "the DELETE rewrote the file: no deletion vector"
    kept = {k: 1 for k in keys if not k.startswith("k1") and k != "k0007"}
    store.merge_counts("t", pa.table({"k": ["k0008", "k1500", "k0007"], "_mult": [1, 1, 1]}, schema=SCHEMA),
                       ["k"], "_mult")                                               # version 4, by delta-rs
    merged = {**kept, "k0008": 2, "k1500": 1, "k0007": 1}
    for fresh in (False, True):      # what the store holds, and a store that reads the files anew
        reader = DeltaRsStore(store.root, spark) if fresh else store
        assert _counts(reader, "t", 1) == {k: 1 for k in keys}
        assert _counts(reader, "t", 3) == kept and reader.row_count("t", 3) == len(kept)
        assert _counts(reader, "t") == merged and reader.row_count("t") == len(merged)
        assert {r["k"]: r["_mult"] for r in reader.read("t", 3).collect()} == kept
        assert {r["k"]: r["_mult"] for r in reader.read("t").collect()} == merged
    feed = store.changes("t", 3, 3)
    assert sorted(feed.column("k").to_pylist()) == sorted(set(keys) - set(kept))
    assert set(feed.column("_change_type").to_pylist()) == {"delete"}


def test_a_table_merged_by_deletion_vectors_continues_on_delta_spark_and_back(tmp_path, spark, monkeypatch):
    """A gold table the delta-rs backend MERGEs by deletion vectors (past ``VECTOR_MERGE_ROWS``, 0
    here) is a table delta-spark reads, MERGEs, deletes from and appends to, and delta-rs then
    merges by deletion vectors again, from what delta-spark left: every version reads the same on
    both backends."""
    from pipelines.storage import delta_rs

    monkeypatch.setattr(delta_rs, "VECTOR_MERGE_ROWS", 0)
    lake = str(tmp_path / "lake")
    rs, sp = open_store(lake, spark, backend="delta-rs"), open_store(lake, spark, backend="delta-spark")
    rs.create("t", SCHEMA)
    expected = [{}]

    def then(change: dict) -> None:
        counts = dict(expected[-1])
        for k, m in change.items():
            counts[k] = counts.get(k, 0) + m
        expected.append({k: m for k, m in counts.items() if m})

    def merge(store, change: dict, txn: int) -> None:
        store.merge_counts("t", pa.table({"k": list(change), "_mult": list(change.values())}, schema=SCHEMA),
                           ["k"], "_mult", Txn("job", txn))
        then(change)

    rs.append("t", pa.table({"k": [f"k{i}" for i in range(10)], "_mult": [1] * 10}, schema=SCHEMA), Txn("job", 1))
    then({f"k{i}": 1 for i in range(10)})
    merge(rs, {"k1": -1, "k2": 2, "n1": 1}, 2)
    assert pa.RecordBatchReader.from_stream(DeltaTable(rs.path("t")).deletion_vectors()).read_all().num_rows == 1
    merge(sp, {"k2": 1, "k3": -1, "n2": 1}, 3)
    sp.delete("t", "k = 'k4'", Txn("job", 4))
    then({"k4": -1})
    sp.append("t", pa.table({"k": ["n3"], "_mult": [2]}, schema=SCHEMA), Txn("job", 5))
    then({"n3": 2})
    merge(rs, {"k5": -1, "n3": 1, "k2": -3}, 6)
    for store in (rs, sp, open_store(lake, spark, backend="delta-rs")):
        assert store.committed("t", "job") == 6 and store.version("t") == 6
        assert [_counts(store, "t", v) for v in range(7)] == expected
        assert {r["k"]: r["_mult"] for r in store.read("t").collect()} == expected[-1]
