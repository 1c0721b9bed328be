"""`lakegraph sql` is read-only: queries, SHOW, DESCRIBE and EXPLAIN of a query run; everything that
writes, changes the session or calls Java is refused with one line, and nothing changes."""
from __future__ import annotations

import os
import shutil

import pytest

from pipelines import cli

ALLOWED = [
    "SELECT op, count(*) AS n FROM bronze GROUP BY op",
    "WITH m AS (SELECT * FROM bronze) SELECT count(*) FROM m",
    "VALUES (1, 2)",
    "TABLE ingest_log",
    "FROM bronze SELECT seq",
    "SHOW TABLES",
    "SHOW COLUMNS IN bronze",
    "DESCRIBE bronze",
    "EXPLAIN SELECT * FROM bronze",
    "SELECT count(*) FROM bronze@v1",
]

REFUSED = [
    "INSERT INTO bronze SELECT * FROM bronze",
    "WITH m AS (SELECT * FROM bronze) INSERT INTO bronze SELECT * FROM m",
    "INSERT OVERWRITE DIRECTORY '{dir}' USING parquet SELECT * FROM bronze",
    "INSERT OVERWRITE LOCAL DIRECTORY '{dir}' SELECT * FROM bronze",
    "CREATE TABLE t USING parquet LOCATION '{dir}' AS SELECT 1 AS a",
    "CREATE TABLE t (a INT)",
    "CREATE TEMP VIEW v AS SELECT 1",
    "CREATE OR REPLACE TEMPORARY VIEW bronze AS SELECT 1",
    "DROP TABLE bronze",
    "DROP VIEW bronze",
    "DELETE FROM bronze WHERE seq = 1",
    "UPDATE bronze SET op = 'insert'",
    "MERGE INTO bronze USING bronze s ON bronze.seq = s.seq WHEN MATCHED THEN DELETE",
    "ALTER TABLE bronze ADD COLUMN x INT",
    "TRUNCATE TABLE bronze",
    "SET spark.sql.shuffle.partitions=1",
    "SET",
    "RESET",
    "ADD JAR {dir}/x.jar",
    "ADD FILE {dir}/x",
    "CACHE TABLE bronze",
    "UNCACHE TABLE bronze",
    "CLEAR CACHE",
    "REFRESH TABLE bronze",
    "USE default",
    "CREATE DATABASE d",
    "CREATE FUNCTION f AS 'x.Y'",
    "ANALYZE TABLE bronze COMPUTE STATISTICS",
    "LOAD DATA LOCAL INPATH '{dir}/x' INTO TABLE bronze",
    "DECLARE x INT",
    "EXECUTE IMMEDIATE 'DROP TABLE bronze'",
    "EXPLAIN INSERT INTO bronze SELECT * FROM bronze",
    "SELECT reflect('java.lang.System', 'exit', 0)",
    "SELECT java_method('java.lang.System', 'exit', 0)",
    "SELECT 1; DROP TABLE bronze",
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):  # noqa: ARG001 - the shared session, which the CLI reuses
    path = tmp_path_factory.mktemp("sql") / "lake"
    landing = os.path.join(os.path.dirname(__file__), "..", "examples", "landing", "03_updates.jsonl")
    assert cli.main(["--lake", str(path), "-q", "ingest", landing]) == 0
    return str(path)


def _listing(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                  if "_logs" not in d)


@pytest.mark.parametrize("query", ALLOWED)
def test_a_query_runs(lake, capsys, query):
    assert cli.main(["--lake", lake, "sql", query]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("template", REFUSED)
def test_anything_else_is_refused_in_one_line(lake, tmp_path, capsys, spark, template):
    query = template.format(dir=tmp_path / "out")
    before = _listing(lake)
    tables = {t.name for t in spark.catalog.listTables()}
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    capsys.readouterr()
    assert cli.main(["--lake", lake, "sql", query]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lakegraph: error: "), err
    assert "read-only" in err[0] or "SQL failed" in err[0], err
    assert _listing(lake) == before and not (tmp_path / "out").exists()
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    assert {t.name for t in spark.catalog.listTables()} <= tables | {"bronze", "quarantine", "ingest_log",
                                                                      "queries", "batches", "bronze__v1"}


def test_an_analysis_error_is_one_line(lake, capsys):
    assert cli.main(["--lake", lake, "sql", "SELECT source FROM quarantine"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lakegraph: error: SQL failed: [UNRESOLVED_COLUMN"), err


@pytest.mark.parametrize("storage", ["delta-rs", "delta-spark"])
def test_version_and_timestamp_as_of_read_a_past_version_on_both_backends(lake, tmp_path, capsys, storage):
    """A time halfway between two commits: delta-spark times a commit by its log file, delta-rs by
    the commit's own record, which can differ by milliseconds."""
    from pipelines.storage import open_store

    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    landing = os.path.join(os.path.dirname(__file__), "..", "examples", "landing", "01_initial.nt")
    assert cli.main(["--lake", copy, "-q", "ingest", landing]) == 0
    store = open_store(copy, backend="delta-rs")
    stamps = {c["version"]: c["timestamp"] for c in store.history("bronze")}
    at = (stamps[1] + (stamps[2] - stamps[1]) / 2).strftime("%Y-%m-%d %H:%M:%S.%f")
    counts = []
    for query in ("SELECT count(*) AS n FROM bronze@v1", "SELECT count(*) AS n FROM bronze VERSION AS OF 1",
                  f"SELECT count(*) AS n FROM bronze TIMESTAMP AS OF '{at}'", "SELECT count(*) AS n FROM bronze"):
        assert cli.main(["--lake", copy, "--storage", storage, "sql", "--format", "csv", query]) == 0, \
            capsys.readouterr().err
        counts.append(int(capsys.readouterr().out.split()[-1]))
    assert counts[:3] == [store.row_count("bronze", 1)] * 3
    assert counts[3] == store.row_count("bronze") > counts[0]
