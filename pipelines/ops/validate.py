"""Quality gates over the lake: the bronze suite and the gold suites, every outcome kept for audit.

Why keep outcomes in a Delta table: a gate's verdict must be explainable later ("were the answers of
gold_q1 valid when the 09:00 report was read?"). ``quality_results`` is append-only, one row per
expectation per run, and SQL and time travel read it like any other table.
"""
from __future__ import annotations

import uuid
from datetime import datetime

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from quality.bronze import SUITE_NAME as BRONZE_SUITE
from quality.bronze import bronze_suite
from quality.gold import check_query
from quality.report import Outcome, Report, check
from schemas.tables import UTC_TS

from .. import catalog
from ..lake import BRONZE, gold_table, now
from ..storage import TableStore, open_store

QUALITY_RESULTS = "quality_results"

RESULTS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("validated_at", UTC_TS, nullable=False),
    pa.field("suite", pa.string(), nullable=False),
    pa.field("table", pa.string(), nullable=False),
    pa.field("expectation", pa.string(), nullable=False),
    pa.field("success", pa.bool_(), nullable=False),
    pa.field("observed", pa.string(), nullable=False),
])


def _on_spark(store: TableStore, spark: SparkSession) -> TableStore:
    """The store reading through ``spark`` (the suites run on Spark DataFrames); a store opened
    without Spark, as ingest opens it, is reopened on the same backend."""
    return store if store.spark is not None else open_store(store.root, spark, store.backend)


def _bronze(store: TableStore, ingest_ids: list[int] | None = None) -> list[Outcome]:
    frame = store.read(BRONZE)
    if ingest_ids is not None:
        frame = frame.where(F.col("ingest_id").isin(ingest_ids))
    return check(bronze_suite(), frame, BRONZE_SUITE, BRONZE)


def _gold_tables(store: TableStore) -> dict[str, str]:
    """``{gold table: query name}`` for every registered query."""
    return {gold_table(q.plan.name): q.plan.name for q in catalog.registered(store)}


def _keep(store: TableStore, report: Report) -> Report:
    """Append the report's outcomes to ``quality_results`` (created on first use)."""
    if report.outcomes:
        store.create(QUALITY_RESULTS, RESULTS_SCHEMA)
        rows = [{"run_id": report.run_id, "validated_at": report.validated_at, "suite": o.suite, "table": o.table,
                 "expectation": o.expectation, "success": o.success, "observed": o.observed}
                for o in report.outcomes]
        store.append(QUALITY_RESULTS, pa.Table.from_pylist(rows, schema=RESULTS_SCHEMA))
    return report


def _new_report(run_id: str | None) -> Report:
    return Report(run_id or uuid.uuid4().hex[:12], now())


def _run(store: TableStore, tables: list[str], run_id: str | None, since: datetime | None = None) -> Report:
    """Validate ``tables`` (bronze whole, gold per query) into one kept report."""
    gold = _gold_tables(store)
    report = _new_report(run_id)
    for name in tables:
        report.outcomes += _bronze(store) if name == BRONZE else check_query(store, gold[name], since)
    return _keep(store, report)


def validate(store: TableStore, spark: SparkSession, table: str | None = None,
             run_id: str | None = None) -> Report:
    """Run the bronze suite on the whole bronze table and the gold suites of every registered query
    (or only ``table``: ``bronze`` or a ``gold_<query>``); the outcomes are kept in ``quality_results``."""
    store = _on_spark(store, spark)
    choices = [BRONZE] + sorted(_gold_tables(store))
    if table is not None and table not in choices:
        raise ValueError(f"cannot validate {table!r}: choose one of {', '.join(choices)}")
    return _run(store, [table] if table else choices, run_id)


def validate_gold(store: TableStore, spark: SparkSession, since: datetime | None = None,
                  run_id: str | None = None) -> Report:
    """The gold suites of every registered query (the gate after micro-batches); the step check
    covers the batches completed after ``since`` (the gate's own run)."""
    store = _on_spark(store, spark)
    return _run(store, sorted(_gold_tables(store)), run_id, since)


def validate_ingest(store: TableStore, spark: SparkSession, ingest_ids: list[int],
                    run_id: str | None = None) -> Report:
    """The bronze suite over the rows the given ingests added (the gate after an ingest); no ids, no
    validation."""
    report = _new_report(run_id)
    if ingest_ids:
        report.outcomes += _bronze(_on_spark(store, spark), ingest_ids)
    return _keep(store, report)
