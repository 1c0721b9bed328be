"""The four systems under test, behind one interface: load the initial graph, register the queries,
apply one landing file of updates, and give each query's current answers as a bag.

* :class:`Lakegraph`: the public pipeline (ingest to bronze, ``Runner.run`` from bronze to gold).
* :class:`SparkRecompute`: what a Spark user writes without lakegraph: the graph as a parquet table,
  each batch merged into it (last message per triple wins), every query re-run as SQL self-joins
  over the whole graph (an aggregate query: grouped in SQL), the answers diffed against the
  previous ones.
* :class:`DuckDBRecompute`: the same on one machine with DuckDB: the graph as a table, each batch
  merged into it, every query re-run as the same SQL in DuckDB's dialect and diffed.
* :class:`Oxigraph`: an in-memory pyoxigraph store, updated quad by quad, every query re-run.

Each reads the same landing file, so parsing the messages is part of every system's batch time.
Answers are ``Counter``s of tuples of N-Triples terms in projection order, so they compare directly.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, Iterator, Mapping, Protocol, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyoxigraph as ox
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipelines.answers import answers as gold_answers
from pipelines.ingest import ingest_paths
from pipelines.lake import init_lake
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.storage import open_store
from views.aggregates import Aggregation
from views.filters import sql_string
from views.model import Compare, Const, Query, Var
from views.plan import QueryPlan, compile_query
from views.sparql import parse_query

from .measure import commits, disk_bytes, spark_jobs

Bag = Counter


@dataclass(frozen=True)
class BenchQuery:
    """A benchmark query: its name (file stem), text, parsed model and lakegraph plan."""

    name: str
    text: str
    query: Query
    plan: QueryPlan

    @classmethod
    def from_file(cls, path: Path, shared_paths: Collection[str] = ()) -> "BenchQuery":
        """The query of file ``path``, planned as ``lakegraph register`` plans it on a lake whose
        queries keep the path views ``shared_paths``."""
        text = path.read_text(encoding="utf-8")
        query = parse_query(text, path.name)
        return cls(path.stem, text, query, compile_query(query, path.stem, shared_paths=shared_paths))


@dataclass
class BatchTiming:
    """One system's cost for one batch: total seconds, named parts, Spark jobs and Delta commits."""

    seconds: float
    parts: dict[str, float] = field(default_factory=dict)
    jobs: int = 0
    commits: int = 0
    stats: dict = field(default_factory=dict)


class System(Protocol):
    name: str

    def load(self, nt_path: Path) -> float:
        """Load the initial graph; returns seconds."""

    def register(self, queries: list[BenchQuery]) -> float:
        """Start maintaining ``queries`` over the loaded graph; returns seconds."""

    def apply(self, batch_path: Path) -> BatchTiming:
        """Apply one landing file of updates and bring every query's answers up to date."""

    def answers(self, name: str) -> Bag:
        """Query ``name``'s current answers."""

    def close(self) -> None:
        """Release what the system holds (files stay for measuring)."""


T = TypeVar("T")


def _timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _recompute_all(queries: list[BenchQuery], evaluate: Callable[[BenchQuery], Bag],
                   current: dict[str, Bag]) -> tuple[dict[str, float], int]:
    """Re-run every query and diff with its previous answers (the answer changes a recomputing
    system reports); ``current`` is updated in place. Returns seconds per query and the number of
    answer changes (added + removed, with multiplicity)."""
    seconds: dict[str, float] = {}
    changes = 0
    for query in queries:
        start = time.perf_counter()
        fresh = evaluate(query)
        before = current[query.name]
        changes += sum(((fresh - before) + (before - fresh)).values())
        current[query.name] = fresh
        seconds[query.name] = time.perf_counter() - start
    return seconds, changes


# -- (a) lakegraph ------------------------------------------------------------------------------
class Lakegraph:
    """The incremental pipeline on a lake committed by ``storage`` (delta-rs or delta-spark); times
    ingest and bronze-to-gold separately. One :class:`Runner` runs every batch, as a long-running
    job would: what it holds from one batch to the next (the path operator's indexed tables) is
    part of what is measured; the first batch pays for reading them."""

    name = "lakegraph"

    def __init__(self, spark: SparkSession, lake: Path, engine: str = "auto", storage: str = "delta-rs") -> None:
        self.spark = spark
        self.lake = lake
        self.engine = engine
        self.store = open_store(str(lake), spark, backend=storage)
        init_lake(self.store)
        self.queries: list[BenchQuery] = []
        self.runner = Runner(self.store, spark, engine)

    def load(self, nt_path: Path) -> float:
        return _timed(lambda: ingest_paths(self.store, [str(nt_path)]))[0]

    def register(self, queries: list[BenchQuery]) -> float:
        """Register ``queries`` one after the other, each backfilled on the engine ``--engine``
        names (as ``lakegraph register --engine`` does: ``auto`` takes Spark on a cluster)."""
        self.queries = queries
        return sum(_timed(lambda q=q: register(self.store, self.spark, q.plan, self.engine))[0] for q in queries)

    def apply(self, batch_path: Path) -> BatchTiming:
        ingest_s = _timed(lambda: ingest_paths(self.store, [str(batch_path)]))[0]
        before, bytes_before = commits(self.lake), disk_bytes(self.lake)
        reads, served = replace(self.store.reads), self.runner.held.served
        with spark_jobs(self.spark) as jobs:
            run_s, report = _timed(self.runner.run)
        stats = {k: sum(b.get(k, 0) for b in report.batches)
                 for k in ("messages", "noops", "view_changes", "answer_changes")}
        read = {f"{k}_read": getattr(self.store.reads, k) - getattr(reads, k) for k in asdict(reads)}
        read["memory_rows_read"] += self.runner.held.served - served
        return BatchTiming(ingest_s + run_s, {"ingest": ingest_s, "run": run_s}, jobs.count,
                           commits(self.lake) - before, {**stats, **read, "engine_batches": len(report.batches),
                            "bytes_written": disk_bytes(self.lake) - bytes_before,
                            "engines": sorted({b["engine"] for b in report.batches})})

    def answers(self, name: str) -> Bag:
        table = gold_answers(self.store, name)
        plan = next(q.plan for q in self.queries if q.name == name)
        bag: Bag = Counter()
        for row in table.to_pylist():
            bag[tuple(row[v] for v in plan.projection)] += row["_mult"]
        return bag  # kept as is: a zero or negative multiplicity is an engine bug the check must see

    def count(self, name: str) -> int:
        """How many answers (with multiplicity) query ``name`` has: its gold table's multiplicities
        summed in Arrow, without a bag."""
        return pc.sum(gold_answers(self.store, name)["_mult"]).as_py() or 0

    def close(self) -> None:
        """Nothing to release: the lake stays on disk for the size figures."""


# -- (b) full recompute on Spark ----------------------------------------------------------------
_MESSAGE_SCHEMA = StructType([StructField(c, StringType()) for c in ("time", "op", "s", "p", "o")])


@dataclass(frozen=True)
class Dialect:
    """How an SQL engine spells a string literal and a quoted identifier."""

    string: Callable[[str], str]
    identifier: Callable[[str], str]


SPARK_SQL = Dialect(sql_string, lambda name: f"`{name}`")
DUCKDB_SQL = Dialect(lambda text: "'" + text.replace("'", "''") + "'",
                     lambda name: '"' + name.replace('"', '""') + '"')


def bgp_sql(query: Query, table: str = "graph", sources: Mapping[int, str] | None = None,
            columns: tuple[str, ...] | None = None, dialect: Dialect = SPARK_SQL) -> str:
    """The query's basic graph pattern as one Spark SQL self-join over ``table(s, p, o)``, constants
    inlined as literals: named parameters (``spark.sql(text, args=...)``) stay unbound in a session
    with Delta's SQL extension (Spark 4.2, Delta 4.4.0), and the bench shares the pipeline's session.
    ``sources`` names another table (columns ``s``, ``o``) for some patterns by their position: the
    pairs of a property path. SELECT only, no FILTER; ``columns`` (default: the projection) are the
    variables selected."""
    if query.form != "select" or query.filters:
        raise ValueError("the recompute baseline evaluates SELECT queries without FILTER")
    tables, conditions, first = [], [], {}
    for i, pattern in enumerate(query.patterns):
        tables.append(f"{(sources or {}).get(i, table)} t{i}")
        for position, node in pattern.nodes():
            column = f"t{i}.{position}"
            if isinstance(node, Var):
                if node.name in first:
                    conditions.append(f"{column} = {first[node.name]}")
                else:
                    first[node.name] = column
            else:
                conditions.append(f"{column} = {dialect.string(node)}")
    select = ", ".join(f"{first[v]} AS {dialect.identifier(v)}"
                       for v in (query.projection if columns is None else columns)) or "1"
    where = " AND ".join(conditions) or "TRUE"
    distinct = "DISTINCT " if query.distinct else ""
    return f"SELECT {distinct}{select} FROM {', '.join(tables)} WHERE {where}"


_INTEGER = "^^<http://www.w3.org/2001/XMLSchema#integer>"


def _count_having(query: Query, aggregation: Aggregation, dialect: Dialect) -> str:
    """HAVING as comparisons of COUNTs with integers, the only form the DuckDB baseline needs (the
    plan compiles HAVING to Spark SQL only)."""
    counts = {c.name for c in aggregation.calls if c.function == "COUNT"}
    conditions = []
    for expr in query.grouping.having:
        right = getattr(expr, "right", None)
        if not (isinstance(expr, Compare) and isinstance(expr.left, Var) and expr.left.name in counts
                and isinstance(right, Const) and right.term.endswith(_INTEGER)):
            raise ValueError("the DuckDB baseline compares COUNTs with integers in HAVING, nothing else")
        value = f"CAST(split_part({dialect.identifier(expr.left.name)}, '\"', 2) AS BIGINT)"
        conditions.append(f"{value} {expr.op} {int(right.term.split(chr(34))[1])}")
    return " AND ".join(conditions) or "TRUE"


def aggregate_sql(query: Query, aggregation: Aggregation, table: str = "graph", dialect: Dialect = SPARK_SQL) -> str:
    """An aggregate query as the Spark SQL a user would write: the BGP's solutions
    (:func:`bgp_sql` over the grouped and aggregated variables) grouped, each aggregate spelled as
    the canonical literal SPARQL gives, then HAVING as the plan compiled it. Only what the
    benchmark's aggregates use: GROUP BY variables, COUNT (an ``xsd:integer``), and MIN and MAX of
    IRIs (SPARQL orders IRIs by their text, as SQL orders strings, once the brackets are off)."""
    if aggregation.keys or aggregation.computed or aggregation.distinct:
        raise ValueError("the recompute baseline groups by variables and projects aggregates only")
    name = dialect.identifier
    values = []
    for call in aggregation.calls:
        arg = "*" if call.arg is None else ("DISTINCT " if call.distinct else "") + name(call.arg)
        if call.function == "COUNT":
            values.append(f"concat('\"', CAST(count({arg}) AS STRING), '\"{_INTEGER}') AS {name(call.name)}")
        elif call.function in ("MIN", "MAX") and call.arg is not None:     # of the IRIs' text, unbracketed
            text = f"substr({arg}, 2, length({arg}) - 2)"
            values.append(f"concat('<', {call.function.lower()}({text}), '>') AS {name(call.name)}")
        else:
            raise ValueError(f"the recompute baseline has no SQL for {call.text()}")
    keys = ", ".join(name(v) for v in aggregation.group_by)
    grouped = (f"SELECT {', '.join([*(name(v) for v in aggregation.group_by), *values])} "
               f"FROM ({bgp_sql(query, table, columns=aggregation.inputs, dialect=dialect)})"
               + (f" GROUP BY {keys}" if keys else ""))
    having = (aggregation.having_sql or "TRUE") if dialect is SPARK_SQL else _count_having(query, aggregation, dialect)
    return f"SELECT * FROM ({grouped}) WHERE {having}"


def recompute_sql(query: BenchQuery, table: str = "graph", dialect: Dialect = SPARK_SQL) -> str:
    """The SQL that recomputes a benchmark query from scratch."""
    aggregation = query.plan.aggregation
    if aggregation is None:
        return bgp_sql(query.query, table, dialect=dialect)
    return aggregate_sql(query.query, aggregation, table, dialect)


class SparkRecompute:
    """The graph as parquet, rewritten each batch; every query recomputed from scratch."""

    name = "recompute"

    def __init__(self, spark: SparkSession, workdir: Path) -> None:
        self.spark = spark
        self.workdir = workdir
        self.version = 0
        self.queries: list[BenchQuery] = []
        self.current: dict[str, Bag] = {}

    def _path(self, version: int) -> str:
        return str(self.workdir / f"graph_v{version}")

    def _publish(self) -> None:
        self.spark.read.parquet(self._path(self.version)).createOrReplaceTempView("graph")

    def load(self, nt_path: Path) -> float:
        def write() -> None:
            lines = self.spark.read.text(str(nt_path)).where(F.trim("value") != "")
            # generated N-Triples: "<s> <p> object ." with IRI subject and predicate, no comments
            parts = F.split(F.regexp_replace("value", r"\s*\.\s*$", ""), " ", 3)
            lines.select(parts[0].alias("s"), parts[1].alias("p"), parts[2].alias("o")).write.parquet(self._path(0))
        seconds = _timed(write)[0]
        self._publish()
        return seconds

    def _evaluate(self, query: BenchQuery) -> Bag:
        return _bag(self.spark.sql(recompute_sql(query)).toArrow(), query.query.projection)

    def register(self, queries: list[BenchQuery]) -> float:
        self.queries = queries
        seconds, self.current = _timed(lambda: {q.name: self._evaluate(q) for q in queries})
        return seconds

    def _merge(self, batch_path: Path) -> None:
        messages = (self.spark.read.schema(_MESSAGE_SCHEMA).json(str(batch_path))
                    .withColumn("seq", F.monotonically_increasing_id()))
        newest = Window.partitionBy("s", "p", "o").orderBy(F.desc("seq"))
        last = messages.withColumn("_rank", F.row_number().over(newest)).where("_rank = 1")
        graph = self.spark.read.parquet(self._path(self.version))
        kept = graph.join(last.select("s", "p", "o"), ["s", "p", "o"], "left_anti")
        merged = kept.unionByName(last.where(F.col("op") == "+").select("s", "p", "o"))
        merged.write.parquet(self._path(self.version + 1))
        shutil.rmtree(self._path(self.version), ignore_errors=True)
        self.version += 1
        self._publish()

    def apply(self, batch_path: Path) -> BatchTiming:
        with spark_jobs(self.spark) as jobs:
            apply_s = _timed(lambda: self._merge(batch_path))[0]
            parts, changes = _recompute_all(self.queries, self._evaluate, self.current)
        return BatchTiming(apply_s + sum(parts.values()), {"apply": apply_s, **parts}, jobs.count,
                           stats={"answer_changes": changes})

    def answers(self, name: str) -> Bag:
        return self.current[name]

    def close(self) -> None:
        self.spark.catalog.dropTempView("graph")


# -- (c) full recompute on DuckDB ---------------------------------------------------------------
def _bag(table, projection: tuple[str, ...]) -> Bag:
    """A result table's rows as a bag of tuples in projection order."""
    columns = [table.column(v).to_pylist() for v in projection]
    return Counter(zip(*columns)) if columns else Counter({(): table.num_rows})


class DuckDBRecompute:
    """What a user on one machine would reach for first: the graph as a DuckDB table, each batch
    merged into it (last message per triple wins), every query re-run as SQL self-joins (the same
    SQL as the Spark recompute, in DuckDB's dialect) and diffed."""

    name = "duckdb"

    def __init__(self, spill: Path) -> None:
        import duckdb

        # DuckDB takes 80% of the machine's memory by default, blind to the JVM and lakegraph in the
        # same run (at 10M triples, past the 24 GB): two fifths, spilling to ``spill`` beyond
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        self.db = duckdb.connect(config={"memory_limit": f"{int(memory * 0.4) >> 20}MB", "temp_directory": str(spill)})
        self.queries: list[BenchQuery] = []
        self.current: dict[str, Bag] = {}

    def load(self, nt_path: Path) -> float:
        def create() -> None:
            # generated: "<s> <p> object ." per line, split in Arrow (a Python list per line took
            # gigabytes at 10M triples)
            lines = pa_csv.read_csv(nt_path, read_options=pa_csv.ReadOptions(column_names=["line"]),
                                    parse_options=pa_csv.ParseOptions(delimiter="\x1f", quote_char=False),
                                    convert_options=pa_csv.ConvertOptions(column_types={"line": pa.string()}))
            parts = pc.extract_regex(lines["line"], r"^(?P<s>\S+) (?P<p>\S+) (?P<o>.*\S)\s*\.\s*$").combine_chunks()
            self.db.from_arrow(pa.Table.from_struct_array(parts)).create("graph")
        return _timed(create)[0]

    def _evaluate(self, query: BenchQuery) -> Bag:
        return _bag(self.db.sql(recompute_sql(query, dialect=DUCKDB_SQL)).to_arrow_table(), query.query.projection)

    def register(self, queries: list[BenchQuery]) -> float:
        self.queries = queries
        seconds, self.current = _timed(lambda: {q.name: self._evaluate(q) for q in queries})
        return seconds

    def merge(self, batch_path: Path) -> None:
        """Apply a landing file's messages to the graph table (the last message per triple wins)."""
        read = pa_json.read_json(batch_path, parse_options=pa_json.ParseOptions(
            explicit_schema=pa.schema([(c, pa.string()) for c in ("op", "s", "p", "o")]),
            unexpected_field_behavior="ignore"))
        self.db.register("messages", read.append_column("seq", pa.array(range(read.num_rows), pa.int64())))
        self.db.execute("""CREATE OR REPLACE TEMP TABLE last AS
                           SELECT s, p, o, op FROM (SELECT *, row_number() OVER (PARTITION BY s, p, o ORDER BY seq DESC) AS r
                                                    FROM messages) WHERE r = 1""")
        self.db.execute("DELETE FROM graph USING last WHERE graph.s = last.s AND graph.p = last.p AND graph.o = last.o")
        self.db.execute("INSERT INTO graph SELECT s, p, o FROM last WHERE op = '+'")
        self.db.unregister("messages")

    def replay(self, queries: list[BenchQuery], batch_paths: list[Path]) -> None:
        """Every batch merged, then each query run once: the answers after the last batch, for a
        check that does not time a re-run per batch (``python -m bench.growth``)."""
        self.queries = queries
        for path in batch_paths:
            self.merge(path)
        self.current = {q.name: self._evaluate(q) for q in queries}

    def apply(self, batch_path: Path) -> BatchTiming:
        apply_s = _timed(lambda: self.merge(batch_path))[0]
        parts, changes = _recompute_all(self.queries, self._evaluate, self.current)
        return BatchTiming(apply_s + sum(parts.values()), {"apply": apply_s, **parts}, stats={"answer_changes": changes})

    def answers(self, name: str) -> Bag:
        return self.current[name]

    def close(self) -> None:
        self.db.close()


# -- (d) pyoxigraph -----------------------------------------------------------------------------
def _quads(batch_path: Path) -> Iterator[tuple[str, ox.Quad]]:
    """The file's updates in order, as (op, quad); the terms are parsed by pyoxigraph's N-Triples
    parser from the messages' N-Triples strings."""
    with batch_path.open(encoding="utf-8") as handle:
        messages = [json.loads(line) for line in handle if line.strip()]
    text = "".join(f"{m['s']} {m['p']} {m['o']} .\n" for m in messages)
    quads = ox.parse(text.encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
    return zip((m["op"] for m in messages), quads)


class Oxigraph:
    """An in-memory pyoxigraph store: apply quad by quad, re-run every query, diff."""

    name = "oxigraph"

    def __init__(self) -> None:
        self.store = ox.Store()
        self.queries: list[BenchQuery] = []
        self.current: dict[str, Bag] = {}

    def load(self, nt_path: Path) -> float:
        return _timed(lambda: self.store.bulk_load(path=str(nt_path), format=ox.RdfFormat.N_TRIPLES))[0]

    def _evaluate(self, query: BenchQuery) -> Bag:
        variables = query.query.projection
        return Counter(tuple(str(s[v]) for v in variables) for s in self.store.query(query.text))

    def register(self, queries: list[BenchQuery]) -> float:
        self.queries = queries
        seconds, self.current = _timed(lambda: {q.name: self._evaluate(q) for q in queries})
        return seconds

    def update(self, batch_path: Path) -> None:
        """Apply one landing file of updates to the store."""
        for op, quad in _quads(batch_path):
            if op == "+":
                self.store.add(quad)
            else:
                self.store.remove(quad)

    def apply(self, batch_path: Path) -> BatchTiming:
        apply_s = _timed(lambda: self.update(batch_path))[0]
        parts, changes = _recompute_all(self.queries, self._evaluate, self.current)
        return BatchTiming(apply_s + sum(parts.values()), {"apply": apply_s, **parts},
                           stats={"answer_changes": changes})

    def answers(self, name: str) -> Bag:
        return self.current[name]

    def count(self, query: BenchQuery) -> int:
        """How many answers (with multiplicity) ``query`` has now, counted as they stream: no
        bag is kept, so a graph whose answers would not fit in memory as Python tuples can be
        measured."""
        return sum(1 for _ in self.store.query(query.text))

    def close(self) -> None:
        self.store = ox.Store()
