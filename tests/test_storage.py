"""The storage interface on real Delta tables, on both backends: change feed, MERGE shapes, time
travel, history, maintenance, idempotence."""
from __future__ import annotations

import os
import random
import time
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from pipelines.storage import StorageError, TableNotFound, Txn, delta_rs, delta_spark, open_store
from schemas import tables as S

SCHEMA = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("_mult", pa.int64(), nullable=False)])


@pytest.fixture
def store(tmp_path, spark, backend):
    """Every test of this module runs on each backend (overrides conftest's delta-rs store)."""
    return open_store(str(tmp_path / "lake"), spark, backend=backend)


@pytest.fixture
def short_log(monkeypatch):
    """New tables make a checkpoint every four commits on either backend (by default a hundred on
    delta-rs, ten on delta-spark), so a test crosses checkpoints in a few commits: each is a Spark
    job on delta-spark."""
    every = {"delta.checkpointInterval": "4"}
    monkeypatch.setattr(delta_rs, "_NEW_TABLE", {**delta_rs._NEW_TABLE, **every})
    monkeypatch.setattr(delta_spark, "TABLE_PROPERTIES", {**delta_spark.TABLE_PROPERTIES, **every})


def rows(table: pa.Table) -> dict:
    return {r["k"]: r["_mult"] for r in table.to_pylist()}


def test_change_feed_after_append_merge_delete(store):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a", "b"], "_mult": [1, 1]}, schema=SCHEMA))
    store.merge_counts("t", pa.table({"k": ["a", "c"], "_mult": [-1, 2]}, schema=SCHEMA), ["k"], "_mult")
    store.delete("t", "k = 'b'")
    assert store.version("t") == 3
    feed = store.changes("t", 1, 3)
    assert feed.schema.field("_commit_version").type == pa.int64()
    assert feed.schema.field("k").type == pa.string()
    seen = sorted((r["_commit_version"], r["_change_type"], r["k"]) for r in feed.to_pylist())
    assert (1, "insert", "a") in seen and (1, "insert", "b") in seen
    assert (2, "delete", "a") in seen and (2, "insert", "c") in seen
    assert (3, "delete", "b") in seen
    assert rows(store.read_arrow("t")) == {"c": 2}


def test_merge_counts_accumulates_and_deletes_at_zero(store):
    store.create("t", SCHEMA)
    for delta in ({"a": 2, "b": 1}, {"a": -1, "b": -1}, {"a": 3}):
        store.merge_counts("t", pa.table({"k": list(delta), "_mult": list(delta.values())}, schema=SCHEMA),
                           ["k"], "_mult")
    assert rows(store.read_arrow("t")) == {"a": 4}


def test_zero_key_table_holds_one_count(store):
    unit = pa.schema([pa.field("_mult", pa.int64(), nullable=False)])
    store.create("g", unit)
    for d, expect in ((1, [1]), (2, [3]), (-3, [])):
        store.merge_counts("g", pa.table({"_mult": [d]}, schema=unit), [], "_mult")
        assert store.read_arrow("g")["_mult"].to_pylist() == expect


def test_spark_reads_every_version(store, spark):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA))
    store.merge_counts("t", pa.table({"k": ["a", "b"], "_mult": [-1, 5]}, schema=SCHEMA), ["k"], "_mult")
    assert store.read("t", 0).count() == 0
    assert {r["k"]: r["_mult"] for r in store.read("t", 1).collect()} == {"a": 1}
    assert {r["k"]: r["_mult"] for r in store.read("t", 2).collect()} == {"b": 5}
    assert {r["k"]: r["_mult"] for r in store.read("t").collect()} == {"b": 5}


def test_time_travel_by_timestamp(store):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA))
    time.sleep(0.05)
    between = datetime.now(timezone.utc)
    time.sleep(0.05)
    store.append("t", pa.table({"k": ["b"], "_mult": [1]}, schema=SCHEMA))
    v = store.version_at("t", between)
    assert v == 1
    assert rows(store.read_arrow("t", v)) == {"a": 1}
    with pytest.raises(StorageError):
        store.version_at("t", datetime(2000, 1, 1, tzinfo=timezone.utc))


def test_txn_makes_writes_idempotent(store):
    store.create("t", SCHEMA)
    data = pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA)
    assert store.append("t", data, Txn("job", 1)) is True
    assert store.append("t", data, Txn("job", 1)) is False
    assert store.merge_counts("t", data, ["k"], "_mult", Txn("job", 1)) is False
    assert store.merge_counts("t", data, ["k"], "_mult", Txn("job", 2)) is True
    assert store.committed("t", "job") == 2
    assert rows(store.read_arrow("t")) == {"a": 2}


def test_parquet_files_are_appended_in_one_commit_once(store, tmp_path):
    import pyarrow.parquet as pq

    store.create("t", SCHEMA)
    files = [str(tmp_path / f"part{i}.parquet") for i in range(2)]
    for i, path in enumerate(files):
        pq.write_table(pa.table({"k": [f"a{i}", f"b{i}"], "_mult": [i, 5]}, schema=SCHEMA), path)
    with store.writing():                   # where the store follows its own commits
        assert store.append_parquet("t", files, Txn("ingest", 1)) is True
        assert store.version("t") == 1 and store.row_count("t") == 4
    assert not any(os.path.exists(path) for path in files)                 # taken by the table
    assert rows(store.read_arrow("t")) == {"a0": 0, "b0": 5, "a1": 1, "b1": 5}
    assert sorted(r["k"] for r in store.changes("t", 1).to_pylist()) == ["a0", "a1", "b0", "b1"]
    again = str(tmp_path / "again.parquet")
    pq.write_table(pa.table({"k": ["c"], "_mult": [1]}, schema=SCHEMA), again)
    assert store.append_parquet("t", [again], Txn("ingest", 1)) is False and os.path.exists(again)


def test_a_spark_frame_is_appended_in_one_commit_once_whatever_its_size(store, spark):
    """A frame Spark computed (a registration's backfill) is appended without being collected to
    the driver on delta-rs; every backend keeps the rows, the types and the exactly-once rule, an
    empty frame included."""
    store.create("t", SCHEMA)
    frame = spark.createDataFrame([(f"k{i}", i) for i in range(1000)], "k string, _mult int").repartition(3)
    assert store.append("t", frame, Txn("job", 1)) is True
    assert store.append("t", frame, Txn("job", 1)) is False
    assert store.append("t", spark.createDataFrame([], "k string, _mult long"), Txn("job", 2)) is True
    assert store.version("t") == 2 and store.committed("t", "job") == 2
    table = store.read_arrow("t")
    assert table.schema == store.schema("t") and rows(table) == {f"k{i}": i for i in range(1000)}
    assert not os.path.exists(os.path.join(store.root, "_spark_out")) or not os.listdir(
        os.path.join(store.root, "_spark_out"))


def test_overwrite_replaces_every_row_once_per_txn(store):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a", "b"], "_mult": [1, 1]}, schema=SCHEMA))
    assert store.overwrite("t", pa.table({"k": ["c"], "_mult": [2]}, schema=SCHEMA), Txn("job", 1)) is True
    assert store.overwrite("t", pa.table({"k": ["d"], "_mult": [1]}, schema=SCHEMA), Txn("job", 1)) is False
    assert rows(store.read_arrow("t")) == {"c": 2} and rows(store.read_arrow("t", 1)) == {"a": 1, "b": 1}
    assert store.overwrite("t", SCHEMA.empty_table(), Txn("job", 2)) is True
    assert store.read_arrow("t").num_rows == 0 == store.row_count("t")


def test_a_folds_rows_read_apart_from_the_rows_appended_since_sum_to_the_table(store):
    """A fold's rows, and those appended as part of it, come back apart from the rows appended
    plainly, at every version, and the two together are the table's rows; on delta-rs the first
    are exactly the fold's rows still held, on delta-spark (which names its files its own way)
    none. A compaction may take them into its files: they then come back among the others."""
    def multiset(table: pa.Table) -> list:
        return sorted((r["k"], r["_mult"]) for r in table.to_pylist())

    def table(pairs: dict) -> pa.Table:
        return pa.table({"k": list(pairs), "_mult": list(pairs.values())}, schema=SCHEMA)

    store.create("t", SCHEMA)
    store.append("t", table({"a": 1, "b": 1}))
    assert store.fold("t", table({"a": 1, "c": 1}), Txn("job", 1)) is True
    assert store.fold("t", table({"z": 1}), Txn("job", 1)) is False
    folded_at = store.version("t")
    store.append("t", table({"d": 1, "a": -1}))
    assert store.append_folded("t", table({"e": 1}), Txn("job", 2)) is True
    assert store.append_folded("t", table({"z": 1}), Txn("job", 2)) is False
    expected = {folded_at - 1: [], folded_at: [("a", 1), ("c", 1)], folded_at + 1: [("a", 1), ("c", 1)],
                folded_at + 2: [("a", 1), ("c", 1), ("e", 1)]}
    assert store.version("t") == folded_at + 2
    for version, fold in expected.items():
        folded, rest = store.read_folded("t", version)
        assert multiset(pa.concat_tables([folded, rest])) == multiset(store.read_arrow("t", version))
        assert multiset(folded) == (fold if store.backend == "delta-rs" else [])
    store.compact("t")
    folded, rest = store.read_folded("t")
    assert multiset(pa.concat_tables([folded, rest])) == [("a", -1), ("a", 1), ("c", 1), ("d", 1), ("e", 1)]


def test_missing_table_is_a_clear_error(store):
    with pytest.raises(TableNotFound, match="'nope' does not exist"):
        store.version("nope")


def test_row_count_follows_appends_merges_deletes_and_old_versions(store):
    store.create("t", SCHEMA)
    assert store.row_count("t") == 0
    store.append("t", pa.table({"k": ["a", "b", "c"], "_mult": [1, 1, 1]}, schema=SCHEMA))
    store.merge_counts("t", pa.table({"k": ["a", "d"], "_mult": [-1, 2]}, schema=SCHEMA), ["k"], "_mult")
    assert store.row_count("t") == 3
    store.delete("t", "k = 'b'")
    assert store.row_count("t") == 2 == store.read_arrow("t").num_rows
    assert [store.row_count("t", v) for v in range(4)] == [0, 3, 3, 2]


def test_read_arrow_selects_columns_in_the_table_types(store):
    store.create("t", SCHEMA)
    assert store.read_arrow("t", columns=["_mult"]).schema == pa.schema([SCHEMA.field("_mult")])
    store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA))
    store.append("t", pa.table({"k": ["b"], "_mult": [2]}, schema=SCHEMA))
    assert store.read_arrow("t").schema == SCHEMA
    assert sorted(store.read_arrow("t", columns=["_mult", "k"]).to_pylist(), key=lambda r: r["k"]) == \
        [{"_mult": 1, "k": "a"}, {"_mult": 2, "k": "b"}]


def test_added_columns_read_null_in_the_rows_written_before_on_every_reader(store, spark):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA))
    store.add_columns("t", [pa.field("x", pa.string(), nullable=False)])
    wider = pa.schema([*SCHEMA, pa.field("x", pa.string())])
    assert store.schema("t") == wider and store.version("t") == 2
    store.append("t", pa.table({"k": ["b"], "_mult": [2], "x": ["y"]}, schema=wider))
    expected = [{"k": "a", "_mult": 1, "x": None}, {"k": "b", "_mult": 2, "x": "y"}]
    assert sorted(store.read_arrow("t").to_pylist(), key=lambda r: r["k"]) == expected
    assert sorted((r.asDict() for r in store.read("t").collect()), key=lambda r: r["k"]) == expected
    assert store.read_arrow("t", 1).to_pylist() == [{"k": "a", "_mult": 1, "x": None}]


def test_appended_rows_are_those_of_the_commits_that_only_added_files(store):
    def keys(table: pa.Table | None) -> list[str] | None:
        return None if table is None else sorted(table["k"].to_pylist())

    store.create("t", SCHEMA)
    for k in "abc":                                         # versions 1, 2, 3
        store.append("t", pa.table({"k": [k], "_mult": [1]}, schema=SCHEMA))
    assert keys(store.appended("t", 1, 3)) == ["b", "c"] and keys(store.appended("t", 3, 3)) == []
    store.overwrite("t", pa.table({"k": ["d"], "_mult": [1]}, schema=SCHEMA))      # 4 removes files
    store.append("t", pa.table({"k": ["e"], "_mult": [1]}, schema=SCHEMA))
    assert store.appended("t", 3, 5) is None and keys(store.appended("t", 4, 5)) == ["e"]
    made = store.table_id("t")
    assert made is not None and store.table_id("t") == made
    store.drop("t")
    store.create("t", SCHEMA)
    assert store.table_id("t") not in (None, made), "a table made again at the path is another"


def test_rows_match_pyarrow_with_utc_timestamps(store):
    stamped = pa.schema([pa.field("k", pa.string()), pa.field("at", S.UTC_TS)])
    store.create("t", stamped)
    at = datetime(2026, 11, 23, 9, 30, 1, 5, tzinfo=timezone.utc)
    store.append("t", pa.Table.from_pylist([{"k": "a", "at": at}, {"k": "b", "at": None}], schema=stamped))
    table = store.read_arrow("t")
    assert S.rows(table) == table.to_pylist()
    assert {r["k"]: r["at"] for r in S.rows(table)} == {"a": at, "b": None}


def test_history_lists_every_commit_newest_first(store):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA))
    store.merge_counts("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA), ["k"], "_mult")
    history = store.history("t")
    assert [c["version"] for c in history] == [2, 1, 0]
    assert [c["operation"] for c in history] == ["MERGE", "WRITE", "CREATE TABLE"]
    assert history[0]["timestamp"] >= history[-1]["timestamp"]


def test_compaction_keeps_rows_versions_and_an_empty_change_feed(store):
    store.create("t", SCHEMA)
    for k in "abc":
        store.append("t", pa.table({"k": [k], "_mult": [1]}, schema=SCHEMA))
    before = store.version("t")
    metrics = store.compact("t")
    assert int(metrics.get("metrics", metrics)["numFilesRemoved"]) == 3
    assert store.version("t") == before + 1
    assert rows(store.read_arrow("t")) == {"a": 1, "b": 1, "c": 1}
    assert rows(store.read_arrow("t", before - 1)) == {"a": 1, "b": 1}
    assert store.changes("t", before + 1).num_rows == 0   # dataChange=false: not reported as new rows


def test_z_ordered_compaction_keeps_rows_and_an_empty_change_feed(store):
    store.create("t", SCHEMA)
    for k in "cab":
        store.append("t", pa.table({"k": [k], "_mult": [1]}, schema=SCHEMA))
    before = store.version("t")
    metrics = store.compact("t", zorder=["k"])
    assert int(metrics.get("metrics", metrics)["numFilesRemoved"]) == 3
    assert rows(store.read_arrow("t")) == {"a": 1, "b": 1, "c": 1}
    assert store.changes("t", before + 1).num_rows == 0
    assert store.history("t")[0]["operation"] == "OPTIMIZE"


def test_vacuum_removes_only_unreferenced_files(store):
    store.create("t", SCHEMA)
    for k in "ab":
        store.append("t", pa.table({"k": [k], "_mult": [1]}, schema=SCHEMA))
    store.compact("t")
    assert store.vacuum("t", 168) == []             # removed just now: inside any retention
    planned = store.vacuum("t", 0, dry_run=True)
    assert len(planned) == 2
    assert sorted(store.vacuum("t", 0)) == sorted(planned)
    assert not any(os.path.exists(os.path.join(store.path("t"), f)) for f in planned)
    assert rows(store.read_arrow("t")) == {"a": 1, "b": 1}


def test_vacuum_removes_change_data_files_older_than_the_retention(store):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a", "b"], "_mult": [1, 1]}, schema=SCHEMA))
    for k in "ab":
        store.merge_counts("t", pa.table({"k": [k], "_mult": [1]}, schema=SCHEMA), ["k"], "_mult")
    folder = os.path.join(store.path("t"), "_change_data")
    written = [f for _, _, names in os.walk(folder) for f in names]
    assert written                                          # a MERGE writes its changes as files
    store.vacuum("t", 168)
    assert [f for _, _, names in os.walk(folder) for f in names] == written      # written just now
    store.vacuum("t", 0)
    assert [f for _, _, names in os.walk(folder) for f in names] == []
    assert rows(store.read_arrow("t")) == {"a": 2, "b": 2}


def test_app_transaction_makes_a_retried_delete_a_no_op(store):
    store.create("t", SCHEMA)
    store.append("t", pa.table({"k": ["a", "b"], "_mult": [1, 1]}, schema=SCHEMA), Txn("job", 1))
    assert store.delete("t", "k = 'a'", Txn("job", 2)) is True
    store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA))
    assert store.delete("t", "k = 'a'", Txn("job", 2)) is False
    assert rows(store.read_arrow("t")) == {"a": 1, "b": 1}
    assert store.committed("t", "job") == 2 and store.committed("t", "other") is None


def test_another_writers_commits_and_transactions_are_seen(store, spark, tmp_path):
    """A store keeps each table's newest state and the app transactions its own commits carried;
    another process's commit (here another store on the same lake) must still be seen by its next
    read and by its exactly-once check: the cache is refreshed when the log has a newer commit."""
    other = open_store(str(tmp_path / "lake"), spark, backend=store.backend)
    store.create("t", SCHEMA)
    assert store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA), Txn("app", 1))
    assert rows(store.read_arrow("t")) == {"a": 1}
    assert other.append("t", pa.table({"k": ["b"], "_mult": [1]}, schema=SCHEMA), Txn("app", 2))
    assert rows(store.read_arrow("t")) == {"a": 1, "b": 1}
    assert store.version("t") == other.version("t") == 2
    assert not store.append("t", pa.table({"k": ["c"], "_mult": [1]}, schema=SCHEMA), Txn("app", 2))
    assert store.append("t", pa.table({"k": ["c"], "_mult": [1]}, schema=SCHEMA), Txn("app", 3))
    assert not other.append("t", pa.table({"k": ["c"], "_mult": [1]}, schema=SCHEMA), Txn("app", 3))
    assert rows(other.read_arrow("t")) == {"a": 1, "b": 1, "c": 1}


def test_appends_inside_a_run_take_the_next_free_version_after_another_writers(store, spark, tmp_path):
    """Inside ``writing`` the delta-rs store commits appends itself and does not read its own
    commits back; another writer's commit in between takes the version it meant to write, so the
    append goes to the next one, once, and every reader sees both."""
    other = open_store(str(tmp_path / "lake"), spark, backend=store.backend)
    store.create("t", SCHEMA)
    with store.writing():
        assert store.append("t", pa.table({"k": ["a"], "_mult": [1]}, schema=SCHEMA), Txn("run", 1))
        assert other.append("t", pa.table({"k": ["b"], "_mult": [1]}, schema=SCHEMA), Txn("ingest", 1))
        assert rows(store.read_arrow("t", 1)) == {"a": 1}
        assert store.append("t", pa.table({"k": ["c"], "_mult": [1]}, schema=SCHEMA), Txn("run", 2))
        assert not store.append("t", pa.table({"k": ["c"], "_mult": [1]}, schema=SCHEMA), Txn("run", 2))
        assert store.version("t") == 3 and store.committed("t", "ingest") == 1
        assert rows(store.read_arrow("t")) == {"a": 1, "b": 1, "c": 1}
    assert rows(other.read_arrow("t")) == {"a": 1, "b": 1, "c": 1}
    assert other.committed("t", "run") == 2


def test_a_long_run_of_appends_reads_right_at_every_version_across_checkpoints(store, spark, tmp_path, short_log):
    """Ten appends in one run to two tables in step (as a batch commits to each of its tables),
    each checked at once through the store and, at the end, every version through a fresh store:
    rows, row counts, app transactions and the files' statistics (string bounds too, for file
    skipping). A checkpoint every four versions: on delta-rs at an offset of each table's own, so
    that tables moving in step do not all checkpoint in the same batch ("t" at 4 and 8, "u" at 2, 6
    and 10); Spark's writer checkpoints both at 4 and 8."""
    names = ("t", "u")
    for name in names:
        store.create(name, SCHEMA)
    with store.writing():
        for i in range(1, 11):
            data = pa.table({"k": [f"k{i:02d}", f"x{i:02d}"], "_mult": [i, -i]}, schema=SCHEMA)
            for name in names:
                assert store.append(name, data, Txn("run", i))
                assert not store.append(name, data, Txn("run", i))
                assert store.version(name) == i and store.row_count(name) == 2 * i
                assert rows(store.read_arrow(name, i))[f"k{i:02d}"] == i
    fresh = open_store(str(tmp_path / "lake"), spark, backend=store.backend)
    expected = {"t": [4, 8], "u": [2, 6, 10] if store.backend == "delta-rs" else [4, 8]}
    for name in names:
        assert fresh.version(name) == 10 and fresh.committed(name, "run") == 10
        checkpoints = (tmp_path / "lake" / name / "_delta_log").glob("*.checkpoint.parquet")
        assert sorted(int(c.name.split(".")[0]) for c in checkpoints) == expected[name]
        for version in (1, 2, 3, 4, 5, 6, 8, 10):
            assert rows(fresh.read_arrow(name, version)) == {
                **{f"k{i:02d}": i for i in range(1, version + 1)}, **{f"x{i:02d}": -i for i in range(1, version + 1)}}
        assert sorted(r["k"] for r in fresh.changes(name, 10).to_pylist()) == ["k10", "x10"]
    from deltalake import DeltaTable
    adds = pa.RecordBatchReader.from_stream(DeltaTable(store.path("t")).get_add_actions(flatten=True)).read_all()
    adds = adds.to_pylist()
    assert sum(a["num_records"] for a in adds) == 20
    assert all(a["min.k"] is not None and a["min.k"] <= a["max.k"] for a in adds)


def test_commit_files_past_the_log_retention_go_at_the_next_checkpoint(store, spark, tmp_path, short_log):
    """Delta keeps a table's commit files for its log retention (30 days by default) and removes
    older ones when a writer makes a checkpoint, so a lake's logs stay within its time-travel
    horizon however long it runs (a commit per table per batch). The delta-rs store commits most
    versions itself, so it must do what delta-rs's writes do: commits 0-5, aged past the
    retention, go at the checkpoint of version 8, and stay in a table whose
    ``delta.enableExpiredLogCleanup`` is false. delta-spark's commits are Spark's, whose Delta
    writer keeps its log by rules of its own (it kept these). On both, the tables read the same
    through a fresh store, at their newest version and at those the retention keeps."""
    from deltalake import DeltaTable
    for name in ("t", "kept"):
        store.create(name, SCHEMA)
    DeltaTable(store.path("kept")).alter.set_table_properties({"delta.enableExpiredLogCleanup": "false"})
    logs = {name: tmp_path / "lake" / name / "_delta_log" for name in ("t", "kept")}
    first = {"t": 1, "kept": 2}   # the property's commit is version 1 of "kept"
    with store.writing():
        for i in range(1, 9):
            if i == 6:   # every log entry so far (the checkpoint of 4 too) written 40 days ago
                aged = time.time() - 40 * 86400
                for entry in [*logs["t"].iterdir(), *logs["kept"].iterdir()]:
                    os.utime(entry, (aged, aged))
            for name in ("t", "kept"):
                if i >= first[name]:
                    data = pa.table({"k": [f"k{i:02d}"], "_mult": [i]}, schema=SCHEMA)
                    assert store.append(name, data, Txn("run", i))
    kept = {name: {int(e.name.split(".")[0]) for e in log.iterdir() if e.name.endswith(".json")}
            for name, log in logs.items()}
    assert set(range(6, 9)) <= kept["t"] and kept["kept"] == set(range(9))
    if store.backend == "delta-rs":
        assert not kept["t"] & set(range(4))
    fresh = open_store(str(tmp_path / "lake"), spark, backend=store.backend)
    for name in ("t", "kept"):
        assert fresh.version(name) == 8 and fresh.committed(name, "run") == 8
        for version in (7, 8):
            assert rows(fresh.read_arrow(name, version)) == {f"k{i:02d}": i for i in range(first[name], version + 1)}


def test_overwrites_and_appends_in_one_run_read_right_at_every_version(store, spark, tmp_path, short_log):
    """Random appends and overwrites (empty ones too) in one run, across checkpoints (4, 8, 12),
    where the delta-rs store commits both itself and keeps the table's files from its own commits:
    every version through a fresh store, and the change feed of each overwrite (the old rows
    deleted, the new ones inserted)."""
    rng = random.Random(7)
    store.create("t", SCHEMA)
    model, versions = {}, {0: {}}
    with store.writing():
        for i in range(1, 13):
            data = {f"k{i}.{j}": rng.randint(1, 9) for j in range(rng.randint(0, 3))}
            table = pa.table({"k": list(data), "_mult": list(data.values())}, schema=SCHEMA)
            if rng.random() < 0.4:
                assert store.overwrite("t", table, Txn("run", i))
                model = dict(data)
            else:
                assert store.append("t", table, Txn("run", i))
                model.update(data)
            assert not store.overwrite("t", table, Txn("run", i))
            versions[i] = dict(model)
            assert store.version("t") == i and rows(store.read_arrow("t")) == model
    fresh = open_store(str(tmp_path / "lake"), spark, backend=store.backend)
    for version, expected in versions.items():
        assert rows(fresh.read_arrow("t", version)) == expected and fresh.row_count("t", version) == len(expected)
    feed = fresh.changes("t", 1)
    for version in range(1, 13):
        seen = {(r["_change_type"], r["k"]) for r in feed.to_pylist() if r["_commit_version"] == version}
        before, after = versions[version - 1], versions[version]
        assert {k for c, k in seen if c == "insert"} == set(after) - set(before)
        assert {k for c, k in seen if c == "delete"} == set(before) - set(after)


def test_merges_of_counts_by_deletion_vectors_sum_at_every_version_for_every_reader(store, spark, monkeypatch):
    """Random signed changes, unbound values among the keys, MERGEd as a gold table takes a batch's
    change at any size: on delta-rs past ``VECTOR_MERGE_ROWS`` (0 here) by deletion vectors, on
    delta-spark by its MERGE. Every version reads as the running sum (zero counts gone) through
    pyarrow, Spark and the row count, from this store and from a fresh one, as do the rows of some
    key values where the store holds them (``find_held``), and the files a delta-rs table gathers
    stay bounded (compacted past ``_VECTOR_FILES``, 4 here)."""
    from deltalake import DeltaTable

    from pipelines.storage import delta_rs

    monkeypatch.setattr(delta_rs, "VECTOR_MERGE_ROWS", 0)
    monkeypatch.setattr(delta_rs, "_VECTOR_FILES", 4)
    schema = pa.schema([pa.field("a", pa.string()), pa.field("b", pa.string()),
                        pa.field("_mult", pa.int64(), nullable=False)])
    store.create("g", schema)
    rng = random.Random(3)
    values = [None, "<x>", "<y>", '"z"', "<w>"]
    truth: dict = {}
    expected = {}
    vectors = compactions = found = 0
    steps = 24 if store.backend == "delta-rs" else 6          # a delta-spark MERGE costs seconds
    for step in range(steps):
        change: dict = {}
        for _ in range(rng.randrange(1, 8)):
            key = (rng.choice(values), rng.choice(values))
            gone = key in truth and rng.random() < 0.5
            change[key] = change.get(key, 0) + (-truth[key] if gone else rng.choice([1, 2, -1]))
        store.merge_counts("g", pa.Table.from_pylist(
            [{"a": a, "b": b, "_mult": m} for (a, b), m in change.items() if m], schema), ["a", "b"], "_mult",
            Txn("job", step + 1))
        for key, m in change.items():
            truth[key] = truth.get(key, 0) + m
            if truth[key] == 0:
                del truth[key]
        expected[store.version("g")] = dict(truth)
        for i, column in enumerate(("a", "b")):      # the rows of some key values, as the store holds them
            wanted = rng.sample(values, 2)
            held = store.find_held("g", column, pa.array(wanted, pa.string()), store.version("g"))
            if held is not None:
                found += 1
                assert {(r["a"], r["b"]): r["_mult"] for r in held.to_pylist()} == \
                    {key: m for key, m in truth.items() if key[i] in wanted}
        if store.backend == "delta-rs":
            table = DeltaTable(store.path("g"))
            vectors += pa.RecordBatchReader.from_stream(table.deletion_vectors()).read_all().num_rows
            compactions += table.history(1)[0]["operation"] == "OPTIMIZE"
            assert len(table.file_uris()) <= 5
    if store.backend == "delta-rs":
        assert vectors and compactions >= 3 and found
    fresh = open_store(store.root, spark, backend=store.backend)
    for reader in (store, fresh):
        for version, counts in expected.items():
            table = reader.read_arrow("g", version)
            assert table.num_rows == len(counts) == reader.row_count("g", version)
            assert {(r["a"], r["b"]): r["_mult"] for r in table.to_pylist()} == counts
        last = max(expected)
        assert sorted((r["a"] or "", r["b"] or "", r["_mult"]) for r in reader.read("g", last).collect()) == \
            sorted((a or "", b or "", m) for (a, b), m in expected[last].items())
    assert store.committed("g", "job") == steps
    assert store.merge_counts("g", pa.table({"a": ["<x>"], "b": ["<x>"], "_mult": [5]}, schema=schema),
                              ["a", "b"], "_mult", Txn("job", steps)) is False
    # a store that did not make them merges on: it finds the vectors in the log (and its checkpoint)
    change = {key: -m for key, m in list(truth.items())[:3]} | {("<new>", None): 4}
    fresh.merge_counts("g", pa.Table.from_pylist([{"a": a, "b": b, "_mult": m} for (a, b), m in change.items()],
                                                 schema), ["a", "b"], "_mult", Txn("job", steps + 1))
    for key, m in change.items():
        truth[key] = truth.get(key, 0) + m
    truth = {key: m for key, m in truth.items() if m}
    for reader in (store, fresh, open_store(store.root, spark, backend=store.backend)):
        assert {(r["a"], r["b"]): r["_mult"] for r in reader.read_arrow("g").to_pylist()} == truth


@pytest.mark.parametrize("hashing", ["the store's", "all alike"])
def test_a_placed_table_follows_signed_changes_by_whole_key_hash_whatever_the_hashes(monkeypatch, hashing):
    """A merge by deletion vectors finds a change's rows by the hash of their whole key and keeps
    those whose values are the key's (``vector_merge.Placed``): with the store's hashes, and with
    every value hashed alike (each key's hash colliding with every other's), the table held reads
    as the running sum of random signed changes over keys with unbound values (a key's count at
    times in two rows), commit after commit (each pointing its keys' index slots at their new rows
    and giving new keys slots, the index rebuilt from the live rows as it fills)."""
    import numpy as np

    from pipelines.storage import vector_merge
    from pipelines.storage.vector_merge import Placed

    if hashing == "all alike":
        monkeypatch.setattr(vector_merge, "_hashes", lambda values: np.zeros(len(values), np.uint64))
    schema = pa.schema([pa.field("a", pa.string()), pa.field("b", pa.string()),
                        pa.field("_mult", pa.int64(), nullable=False)])
    first = pa.table({"a": ["<x>", None], "b": ["<y>", "<x>"], "_mult": [2, 1]}, schema=schema)
    encoded = first.set_column(0, "a", first["a"].dictionary_encode()).set_column(1, "b", first["b"].dictionary_encode())
    placed = Placed.read(0, ["f0"], lambda path: encoded, {}, {}, ["a", "b"], "_mult", schema)
    truth = {("<x>", "<y>"): 2, (None, "<x>"): 1}
    rng = random.Random(5)
    values = [None, "<x>", "<y>", '"z"']
    for version in range(1, 30):
        change: dict = {}
        for _ in range(rng.randrange(1, 6)):
            key = (rng.choice(values), rng.choice(values))
            change[key] = -truth[key] if key in truth and rng.random() < 0.5 else rng.choice([1, 2, -1])
        # a key's count in two rows at times: a change is summed by key where its rows repeat one
        split = [(key, part) for key, m in change.items() for part in ((m - 1, 1) if rng.random() < 0.3 else (m,))]
        delta = pa.Table.from_pylist([{"a": a, "b": b, "_mult": m} for (a, b), m in split], schema)
        made = placed.change(delta)
        placed.commit(version, made, placed.deleted(made.touched), {}, f"f{version}" if made.written.num_rows else None)
        for key, m in change.items():
            truth[key] = truth.get(key, 0) + m
        truth = {key: m for key, m in truth.items() if m}
        assert {(r["a"], r["b"]): r["_mult"] for r in placed.content(schema).to_pylist()} == truth
        assert placed.rows == len(truth)


def test_a_merged_tables_key_column_finds_and_takes_its_rows_as_values_are_appended():
    """A key column as a deletion-vector merge holds it (``vector_merge._Column``): the row groups'
    dictionaries as read (unbound values among them), then the commits' written values, in chunks
    merged as a binary counter carries (each more than twice the next, so a few). Whatever its
    chunks, it gives each row's value back, and the rows
    holding some values through its index of rows by code (in runs, merged as rows come) match a
    scan of the values."""
    import numpy as np

    from pipelines.storage.vector_merge import _Column

    rng = random.Random(7)
    pool = [None, "<a>", "<b>", '"c"', "<d>", "<e>"]
    groups = [[rng.choice(pool) for _ in range(rng.randrange(1, 9))] for _ in range(3)]
    column = _Column(pa.chunked_array([pa.array(g, pa.string()).dictionary_encode() for g in groups]))
    values = [v for g in groups for v in g]
    for commit in range(40):
        wanted = rng.sample(pool, 2)
        rows = column.rows_of(column.hits(pa.array(wanted, pa.string())), len(values))
        assert sorted(rows.tolist()) == [i for i, v in enumerate(values) if v in wanted]
        shuffled = rng.sample(range(len(values)), len(values))
        assert column.take(np.array(shuffled, np.int64)).to_pylist() == [values[i] for i in shuffled]
        written = [rng.choice(pool) for _ in range(rng.randrange(1, 4))]
        column.append(pa.array(written, pa.string()), len(values))
        values += written
        appended = [len(chunk) for chunk in column.dictionary[1:]]
        assert all(earlier > 2 * later for earlier, later in zip(appended, appended[1:]))
        assert len(appended) <= (len(values) - len(column.dictionary[0])).bit_length()
