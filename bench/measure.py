"""Counting what a batch costs besides time: Spark jobs, Delta commits, and a lake's size on disk.

Why from the outside: the figures must not depend on the engine reporting them. Spark jobs are
counted through a job group set around the call (pinned-thread PySpark gives the calling thread's
jobs that group); Delta commits are the ``_delta_log/*.json`` files of every table; sizes are the
bytes and rows of each table's live files (the Delta log's add actions) plus everything in its
directory (old versions that vacuum has not removed yet).
"""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from pipelines.spark import SparkSource, running
from views.model import TriplePattern, Var

_GROUPS = itertools.count()


@dataclass
class JobCount:
    count: int = 0


@contextmanager
def spark_jobs(spark: SparkSource) -> Iterator[JobCount]:
    """Count the Spark jobs the block runs (from this thread); none when ``spark`` is a lazy
    session not started (a block that starts it is not counted)."""
    live = running(spark)
    if live is None:
        yield JobCount()
        return
    sc = live.sparkContext
    group = f"bench-{next(_GROUPS)}"
    sc.setJobGroup(group, "lakegraph bench")
    counted = JobCount()
    try:
        yield counted
    finally:
        counted.count = len(sc.statusTracker().getJobIdsForGroup(group))
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]


def _tables(lake: Path) -> Iterator[Path]:
    return (p for p in sorted(lake.iterdir()) if (p / "_delta_log").is_dir()) if lake.is_dir() else iter(())


def commits(lake: Path) -> int:
    """Delta commits made so far, summed over every table of the lake."""
    return sum(len(list((t / "_delta_log").glob("*.json"))) for t in _tables(lake))


def disk_bytes(lake: Path) -> int:
    """Bytes on disk under every table of the lake (data, change data and log files)."""
    return sum(f.stat().st_size for t in _tables(lake) for f in t.rglob("*") if f.is_file())


def category(table: str) -> str:
    """Which part of the lake a table belongs to (table names as in :mod:`pipelines.lake`)."""
    if table == "views" or table.startswith("v_"):     # the views table, or a view's own (earlier lakes)
        return "views"
    if table.startswith("pe_"):
        return "partial_embeddings"
    if table == "answer_changes" or (table.startswith("gold_") and table.endswith("_changes")):
        return "changes"            # every query's, or (earlier lakes) a query's own
    if table.startswith("gold_"):
        return "gold"
    return table if table == "bronze" else "other"


def lake_sizes(lake: Path) -> dict[str, dict[str, int]]:
    """Per category: ``live_bytes``, ``rows`` and data ``files`` of the current version (and
    ``max_files``, the most of any one table), ``disk_bytes`` of the table directories (history and
    logs included), ``log_bytes`` of their Delta logs."""
    sizes: dict[str, dict[str, int]] = {}
    for table in _tables(lake):
        actions = pa.table(DeltaTable(str(table)).get_add_actions(flatten=True))
        entry = sizes.setdefault(category(table.name), {"live_bytes": 0, "rows": 0, "files": 0,
                                                        "max_files": 0, "disk_bytes": 0, "log_bytes": 0})
        entry["files"] += actions.num_rows
        entry["max_files"] = max(entry["max_files"], actions.num_rows)
        entry["live_bytes"] += int(pc.sum(actions["size_bytes"]).as_py() or 0)
        entry["rows"] += int(pc.sum(actions["num_records"]).as_py() or 0)
        entry["disk_bytes"] += sum(f.stat().st_size for f in table.rglob("*") if f.is_file())
        entry["log_bytes"] += sum(f.stat().st_size for f in (table / "_delta_log").iterdir() if f.is_file())
    return sizes


def _matches(pattern: TriplePattern, triple: tuple[str, str, str]) -> bool:
    bound: dict[str, str] = {}
    for (_, node), term in zip(pattern.nodes(), triple):
        if isinstance(node, Var):
            if bound.setdefault(node.name, term) != term:
                return False
        elif node != term:
            return False
    return True


def matchable(graph: Iterable[tuple[str, str, str]], patterns: Iterable[TriplePattern]) -> int:
    """How many triples of ``graph`` match at least one of ``patterns`` (the data the queries can
    use at all: the yardstick for the size of their state)."""
    by_predicate: dict[str | None, list[TriplePattern]] = {}
    for pattern in set(patterns):
        by_predicate.setdefault(None if isinstance(pattern.p, Var) else pattern.p, []).append(pattern)
    anywhere = by_predicate.get(None, [])
    return sum(1 for t in graph if any(_matches(p, t) for p in by_predicate.get(t[1], []) + anywhere))
