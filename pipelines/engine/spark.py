"""The Spark Z-set engine: a batch's plan written as SQL text, evaluated in one job by :meth:`SparkZSets.collect`."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Callable, Mapping, Sequence, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from schemas.tables import MULT
from views.conditions import Condition
from views.decompose import PatternSize
from views.filters import column

from ..spark import SparkSource, session, session_conf
from ..storage.spark_arrow import arrow_type_to_spark, frame_of
from .conditions import where_in_process

Key = TypeVar("Key")

#: How the engine's plans run: a batch's plan is one union of many small joins, and under adaptive
#: execution each of its shuffle stages is a Spark job of its own, as is each broadcast exchange
#: (75 jobs for a nine-query batch of 1,000 updates at 133k triples, 77 for 10,000 at 1M). Without
#: them the plan runs as one job of sort-merge joins, in the same time at 133k triples.
PLAN_CONF = {"spark.sql.adaptive.enabled": "false", "spark.sql.autoBroadcastJoinThreshold": "-1"}

#: How a batch's plan runs besides: its dozens of joins and scans are independent stages that
#: Spark runs side by side, so they fill the cores between them. One shuffle partition per join,
#: not the session's four, and a scan's files not split for more tasks (``minPartitionNum`` 1),
#: took a nine-query batch's tasks from ~900 to ~370 at 1M triples (docs/engines.md). And no
#: whole-stage code generation: Spark compiles Java for each of the plan's ~125 stages at every
#: batch, which cost more than the compiled code saves on a batch's rows (at 1M triples, 10,000
#: updates: the plan's job 6.5-7.4 s with it, 4.7-5.2 s without). A backfill's few large joins
#: keep the session's partitions and code generation (:data:`PLAN_CONF` alone).
BATCH_CONF = {**PLAN_CONF, "spark.sql.shuffle.partitions": "1", "spark.sql.files.minPartitionNum": "1",
              "spark.sql.codegen.wholeStage": "false"}


@dataclass(frozen=True)
class Relation:
    """A frame of the Spark engine: a named relation of the batch's SQL plan. Either a leaf (a
    Spark frame read or made from Arrow, registered as a temporary view when a plan uses it) or a
    query over earlier relations (a common table expression of the plan)."""

    name: str
    columns: tuple[str, ...]             # data columns, then the multiplicity
    sql: str | None = None               # the query; None for a leaf
    uses: tuple[str, ...] = ()           # the relations the query reads
    frame: DataFrame | None = field(default=None, compare=False)   # a leaf's Spark frame

    @property
    def data(self) -> list[str]:
        return [c for c in self.columns if c != MULT]


class SparkZSets:
    """:class:`pipelines.engine.zsets.ZSetEngine` on Spark; ``read`` gives a state table's frame,
    ``read_arrow`` the same table as Arrow.

    The rules' operations write SQL text, not Spark frames: each gives a :class:`Relation`, a
    common table expression of the plan, and :meth:`collect` sends the plan to Spark as one
    statement. Building it as frames cost a py4j call or more per column and per operation, some
    22,000 for a nine-query batch (1.3-1.7 s before its job started); now a batch makes a few per
    table it reads.

    A frame read may hold a merge-on-read table's signed copies of a row unconsolidated: the delta
    rules only join, add and consolidate at the end, each linear in its inputs, so the copies sum
    there as they would have before. Reading each view consolidated cost a shuffle per read, a
    third of a nine-query batch's Spark stages. The probe, which needs a key's net presence, sums
    it itself (:func:`pipelines.engine.views.probe_spark`)."""

    name = "spark"

    def __init__(self, spark: SparkSession, read: Callable[[str], DataFrame | pa.Table],
                 read_arrow: Callable[[str], pa.Table], conf: Mapping[str, str] = BATCH_CONF) -> None:
        self.spark = spark
        self.conf = conf
        self._read = read
        self._read_arrow = read_arrow
        self._relations: dict[str, Relation] = {}     # in the order made: each reads earlier ones
        self._renamed: dict[tuple[str, tuple[tuple[str, str], ...]], Relation] = {}

    def read(self, table: str) -> Relation:
        # ``read`` gives the table's Spark frame, or its Arrow rows when the caller holds them
        rows = self._read(table)
        return self.from_arrow(rows) if isinstance(rows, pa.Table) else self._leaf(rows, tuple(rows.columns))

    def arrow(self, table: str) -> pa.Table:
        return self._read_arrow(table)

    def lookup(self, table: str, frame: Relation, on: Sequence[tuple[str, str]]) -> Relation:
        # the join that follows prunes: a filter by the frame's keys would be that join once more
        return self.read(table)

    def to_arrow(self, frame: Relation) -> pa.Table:
        """Evaluate ``frame`` (one Spark job, with the engine's ``conf``)."""
        return self._run(f"SELECT * FROM {frame.name}", [frame.name])

    def from_arrow(self, table: pa.Table) -> Relation:
        columns = tuple(table.column_names)
        if table.num_rows == 0:   # an empty relation is text: no frame, no py4j call
            nulls = ", ".join(f"CAST(NULL AS {arrow_type_to_spark(f.type).simpleString()}) AS {column(f.name)}"
                              for f in table.schema)
            return self.query(columns, f"SELECT {nulls} WHERE FALSE", ())
        return self._leaf(frame_of(self.spark, table), columns)

    def size(self, frame: Relation) -> PatternSize:
        # a job: the one caller is a backfill, whose joins of whole views cost far more in a bad order
        cells = ["COUNT(*) AS _rows"] + [f"approx_count_distinct({column(c)}) AS _v{i}" for i, c in enumerate(frame.data)]
        row = self._run(f"SELECT {', '.join(cells)} FROM {frame.name}", [frame.name]).to_pylist()[0]
        return row["_rows"], {c: row[f"_v{i}"] for i, c in enumerate(frame.data)}

    def rename(self, frame: Relation, pairs: Sequence[tuple[str, str]]) -> Relation:
        # The delta rules rename the same view (or view change) the same way in every term that
        # joins it: one relation for them all, and one subtree Spark can see is the same
        key = (frame.name, tuple(pairs))
        if key not in self._renamed:
            cells = [f"{column(old)} AS {column(new)}" for old, new in pairs]
            self._renamed[key] = self.query((*[new for _, new in pairs], MULT),
                                            f"SELECT {', '.join([*cells, MULT])} FROM {frame.name}", (frame,))
        return self._renamed[key]

    def join(self, left: Relation, right: Relation) -> Relation:
        shared = [c for c in left.data if c in set(right.data)]
        extra = [c for c in right.data if c not in set(shared)]
        cells = [f"l.{column(c)}" for c in left.data] + [f"r.{column(c)}" for c in extra]
        on = " AND ".join(f"l.{column(c)} = r.{column(c)}" for c in shared)
        how = f"JOIN {right.name} r ON {on}" if shared else f"CROSS JOIN {right.name} r"
        cells.append(f"l.{MULT} * r.{MULT} AS {MULT}")
        return self.query((*left.data, *extra, MULT), f"SELECT {', '.join(cells)} FROM {left.name} l {how}",
                          (left, right))

    def semijoin(self, frame: Relation, keys: Relation, columns: Sequence[str]) -> Relation:
        on = " AND ".join(f"f.{column(c)} = k.{column(c)}" for c in columns) or "TRUE"
        return self.query(frame.columns, f"SELECT f.* FROM {frame.name} f LEFT SEMI JOIN {keys.name} k ON {on}",
                          (frame, keys))

    def add(self, frames: Sequence[Relation]) -> Relation:
        order = ", ".join(column(c) for c in frames[0].columns)
        union = " UNION ALL ".join(f"SELECT {order} FROM {f.name}" for f in frames)
        return self.query(frames[0].columns, union, frames)

    def consolidate(self, frame: Relation, columns: Sequence[str]) -> Relation:
        cells = ", ".join(column(c) for c in columns)
        group = f" GROUP BY {cells}" if columns else ""
        total = f"SUM({MULT})"
        return self.query((*columns, MULT),
                          f"SELECT {cells + ', ' if columns else ''}{total} AS {MULT} FROM {frame.name}{group} "
                          f"HAVING {total} IS NOT NULL AND {total} != 0", (frame,))

    def where(self, frame: Relation, condition: Condition | None) -> Relation:
        if not condition:
            return frame
        return self.query(frame.columns, f"SELECT * FROM {frame.name} WHERE {condition.sql}", (frame,))

    def support_delta(self, bag_delta: Relation, bag_old: Relation, columns: Sequence[str]) -> Relation:
        on = " AND ".join(f"d.{column(c)} = b.{column(c)}" for c in columns) or "TRUE"
        old = f"COALESCE(b.{MULT}, 0)"
        change = f"CAST({old} + d.{MULT} > 0 AS BIGINT) - CAST({old} > 0 AS BIGINT)"
        cells = ", ".join([*[f"d.{column(c)}" for c in columns], f"{change} AS {MULT}"])
        joined = self.query((*columns, MULT), f"SELECT {cells} FROM {bag_delta.name} d LEFT JOIN {bag_old.name} b ON {on}",
                            (bag_delta, bag_old))
        return self.query(joined.columns, f"SELECT * FROM {joined.name} WHERE {MULT} != 0", (joined,))

    def query(self, columns: Sequence[str], sql: str, uses: Sequence[Relation]) -> Relation:
        """The relation ``sql`` gives (columns ``columns``), reading the relations ``uses`` by
        their names: the SQL the operations above write, and the probe's own."""
        relation = Relation(f"lg_rel_{next(_NAMES)}", tuple(columns), sql, tuple(r.name for r in uses))
        self._relations[relation.name] = relation
        return relation

    def collect(self, outputs: Mapping[Key, Relation], schemas: Mapping[Key, pa.Schema]) -> dict[Key, pa.Table]:
        """Evaluate many Z-set relations in ONE Spark job: each is padded to a common shape (an
        output key, ``c0..cN``, ``_mult``), the shapes are unioned and collected once, then split
        in Arrow. Spark's fixed cost is per job, so this is what keeps a batch's job count flat in
        the number of queries."""
        width = max([len(s) - 1 for s in schemas.values()] + [0])
        pads = [f"c{i}" for i in range(width)]
        keys = {key: f"{i}" for i, key in enumerate(outputs)}
        shaped = []
        for key, frame in outputs.items():
            columns = [f.name for f in schemas[key] if f.name != MULT]
            cells = [f"{column(c)} AS {pads[i]}" for i, c in enumerate(columns)]
            cells += [f"CAST(NULL AS STRING) AS {p}" for p in pads[len(columns):]]
            shaped.append(f"SELECT '{keys[key]}' AS _out, {', '.join([*cells, f'CAST({MULT} AS BIGINT) AS {MULT}'])} "
                          f"FROM {frame.name}")
        rows = self._run(" UNION ALL ".join(shaped), [f.name for f in outputs.values()]) if shaped else None
        result: dict[Key, pa.Table] = {}
        for key, schema in schemas.items():
            if rows is None or key not in keys:
                result[key] = schema.empty_table()
                continue
            mine = rows.filter(pc.equal(rows["_out"], keys[key]))
            columns = [f.name for f in schema if f.name != MULT]
            result[key] = pa.table([mine[pads[i]] for i in range(len(columns))] + [mine[MULT]], schema=schema)
        return result

    def _leaf(self, frame: DataFrame, columns: tuple[str, ...]) -> Relation:
        relation = Relation(f"lg_leaf_{next(_NAMES)}", columns, frame=frame)
        self._relations[relation.name] = relation
        return relation

    def _run(self, body: str, outputs: Sequence[str]) -> pa.Table:
        """``body`` over the relations it reads, as one statement: the queries it reaches as common
        table expressions (in the order made, so each follows those it reads), the leaves as
        temporary views for as long as Spark takes to analyse it."""
        reached, todo = set(), list(outputs)
        while todo:
            name = todo.pop()
            if name not in reached:
                reached.add(name)
                todo.extend(self._relations[name].uses)
        mine = [r for name, r in self._relations.items() if name in reached]
        ctes = ",\n".join(f"{r.name} AS ({r.sql})" for r in mine if r.sql is not None)
        leaves = [r for r in mine if r.sql is None]
        with session_conf(self.spark, self.conf):
            try:
                for leaf in leaves:
                    leaf.frame.createOrReplaceTempView(leaf.name)
                plan = self.spark.sql(f"WITH {ctes}\n{body}" if ctes else body)   # analysed here
            finally:
                for leaf in leaves:
                    self.spark.catalog.dropTempView(leaf.name)
            return plan.toArrow()


#: Names of relations, unique in the process (a temporary view is the session's).
_NAMES = count()


def where_arrow(spark: SparkSource, table: pa.Table, condition: Condition) -> pa.Table:
    """The rows of an Arrow table ``condition`` keeps, decided in process (:mod:`.conditions`);
    only rows that leaves undecided are handed to Spark SQL (starting a lazy ``spark`` then)."""
    return where_in_process(table, condition, lambda undecided, sql: filter_arrow(session(spark), undecided, sql))


def filter_arrow(spark: SparkSession, table: pa.Table, predicate: str) -> pa.Table:
    """The rows of an Arrow table satisfying a Spark SQL predicate, evaluated by Spark (one job)."""
    if table.num_rows == 0:
        return table
    kept = frame_of(spark, table).where(F.expr(predicate)).toArrow()
    return kept.select(table.column_names).cast(table.schema) if kept.num_rows else table.schema.empty_table()
