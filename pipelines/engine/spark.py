"""The Spark Z-set engine: lazy frames, evaluated together in one job by :meth:`SparkZSets.collect`."""
from __future__ import annotations

from functools import reduce
from typing import Callable, Mapping, Sequence, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from schemas.tables import MULT

from ..spark import session_conf
from ..storage.spark_arrow import arrow_schema_to_spark, frame_of

Key = TypeVar("Key")

#: How the engine's plans run: a batch's plan is one union of many small joins, and under adaptive
#: execution each of its shuffle stages is a Spark job of its own, as is each broadcast exchange
#: (75 jobs for a nine-query batch of 1,000 updates at 133k triples, 77 for 10,000 at 1M). Without
#: them the plan runs as one job of sort-merge joins, in the same time at 133k triples. Its dozens
#: of joins are independent stages that Spark runs side by side, so they fill the cores between
#: them: one shuffle partition each, not the session's four, cut the tasks by a third and a
#: nine-query batch by 10-17% on 2 cores (docs/engines.md).
PLAN_CONF = {"spark.sql.adaptive.enabled": "false", "spark.sql.autoBroadcastJoinThreshold": "-1",
             "spark.sql.shuffle.partitions": "1"}


def _data_columns(frame: DataFrame) -> list[str]:
    return [c for c in frame.columns if c != MULT]


def consolidate_frame(frame: DataFrame, columns: Sequence[str]) -> DataFrame:
    """Project onto ``columns``, summing multiplicities, dropping rows that cancel out."""
    cols = [F.col(f"`{c}`") for c in columns]
    grouped = frame.groupBy(*cols).agg(F.sum(MULT).alias(MULT)) if cols else frame.agg(F.sum(MULT).alias(MULT))
    return grouped.where(F.col(MULT).isNotNull() & (F.col(MULT) != 0))


class SparkZSets:
    """:class:`pipelines.engine.zsets.ZSetEngine` on Spark; ``read`` gives a state table's frame,
    ``read_arrow`` the same table as Arrow.

    A frame read may hold a merge-on-read table's signed copies of a row unconsolidated: the delta
    rules only join, add and consolidate at the end, each linear in its inputs, so the copies sum
    there as they would have before. Reading each view consolidated cost a shuffle per read, a
    third of a nine-query batch's Spark stages. The probe, which needs a key's net presence, sums
    it itself (:func:`pipelines.engine.views.probe_spark`)."""

    name = "spark"

    def __init__(self, spark: SparkSession, read: Callable[[str], DataFrame],
                 read_arrow: Callable[[str], pa.Table]) -> None:
        self.spark = spark
        self._read = read
        self._read_arrow = read_arrow
        self._renamed: dict[tuple[int, tuple[tuple[str, str], ...]], tuple[DataFrame, DataFrame]] = {}

    def read(self, table: str) -> DataFrame:
        return self._read(table)

    def arrow(self, table: str) -> pa.Table:
        return self._read_arrow(table)

    def lookup(self, table: str, frame: DataFrame, on: Sequence[tuple[str, str]]) -> DataFrame:
        # the join that follows prunes: a filter by the frame's keys would be that join once more
        return self._read(table)

    def to_arrow(self, frame: DataFrame) -> pa.Table:
        """Evaluate ``frame`` (one Spark job, :data:`PLAN_CONF`)."""
        with session_conf(self.spark, PLAN_CONF):
            return frame.toArrow()

    def from_arrow(self, table: pa.Table) -> DataFrame:
        if table.num_rows == 0:   # an empty frame keeps its schema
            return self.spark.createDataFrame([], arrow_schema_to_spark(table.schema))
        return frame_of(self.spark, table)

    def rename(self, frame: DataFrame, pairs: Sequence[tuple[str, str]]) -> DataFrame:
        # The delta rules rename the same view (or view change) the same way in every term that
        # joins it: one frame for them all, built once (a third of a batch's py4j calls were
        # these renames), and one subtree Spark can see is the same
        key = (id(frame), tuple(pairs))
        held = self._renamed.get(key)
        if held is None or held[0] is not frame:
            held = self._renamed[key] = (frame, frame.select(*[F.col(f"`{old}`").alias(new) for old, new in pairs],
                                                             MULT))
        return held[1]

    def join(self, left: DataFrame, right: DataFrame) -> DataFrame:
        shared = [c for c in _data_columns(left) if c in set(_data_columns(right))]
        a = left.withColumnRenamed(MULT, "_m_left")
        b = right.withColumnRenamed(MULT, "_m_right")
        joined = a.join(b, on=shared, how="inner") if shared else a.crossJoin(b)
        return joined.withColumn(MULT, F.col("_m_left") * F.col("_m_right")).drop("_m_left", "_m_right")

    def semijoin(self, frame: DataFrame, keys: DataFrame, columns: Sequence[str]) -> DataFrame:
        return frame.join(keys.select(*[F.col(f"`{c}`") for c in columns]).distinct(), on=list(columns),
                          how="left_semi")

    def add(self, frames: Sequence[DataFrame]) -> DataFrame:
        return reduce(lambda a, b: a.unionByName(b), frames)

    def consolidate(self, frame: DataFrame, columns: Sequence[str]) -> DataFrame:
        return consolidate_frame(frame, columns)

    def where(self, frame: DataFrame, predicate: str | None) -> DataFrame:
        return frame.where(F.expr(predicate)) if predicate else frame

    def support_delta(self, bag_delta: DataFrame, bag_old: DataFrame, columns: Sequence[str]) -> DataFrame:
        keyed = [*columns, "_k"]
        before = bag_old.withColumnRenamed(MULT, "_old").withColumn("_k", F.lit(1))
        joined = bag_delta.withColumn("_k", F.lit(1)).join(before, on=keyed, how="left")
        old = F.coalesce(F.col("_old"), F.lit(0))
        new = old + F.col(MULT)
        change = (new > 0).cast("long") - (old > 0).cast("long")
        return (joined.select(*[F.col(f"`{c}`") for c in columns], change.alias(MULT))
                .where(F.col(MULT) != 0))

    def collect(self, outputs: Mapping[Key, DataFrame], schemas: Mapping[Key, pa.Schema]) -> dict[Key, pa.Table]:
        """Evaluate many Z-set frames in ONE Spark job: each is padded to a common shape (an output
        key, ``c0..cN``, ``_mult``), the shapes are unioned and collected once, then split in Arrow.
        Spark's fixed cost is per job, so this is what keeps a batch's job count flat in the number
        of queries."""
        width = max([len(s) - 1 for s in schemas.values()] + [0])
        pads = [f"c{i}" for i in range(width)]
        keys = {key: f"{i}" for i, key in enumerate(outputs)}
        shaped = []
        for key, frame in outputs.items():
            columns = [f.name for f in schemas[key] if f.name != MULT]
            cells = [F.col(f"`{c}`").alias(pads[i]) for i, c in enumerate(columns)]
            cells += [F.lit(None).cast("string").alias(p) for p in pads[len(columns):]]
            shaped.append(frame.select(F.lit(keys[key]).alias("_out"), *cells,
                                       F.col(MULT).cast("long").alias(MULT)))
        rows = self.to_arrow(self.add(shaped)) if shaped else None
        result: dict[Key, pa.Table] = {}
        for key, schema in schemas.items():
            if rows is None or key not in keys:
                result[key] = schema.empty_table()
                continue
            mine = rows.filter(pc.equal(rows["_out"], keys[key]))
            columns = [f.name for f in schema if f.name != MULT]
            result[key] = pa.table([mine[pads[i]] for i in range(len(columns))] + [mine[MULT]], schema=schema)
        return result


def filter_arrow(spark: SparkSession, table: pa.Table, predicate: str) -> pa.Table:
    """The rows of an Arrow table satisfying a Spark SQL predicate, evaluated by Spark (one job):
    FILTERs compile to Spark SQL, so the Arrow engine hands them here."""
    if table.num_rows == 0:
        return table
    kept = frame_of(spark, table).where(F.expr(predicate)).toArrow()
    return kept.select(table.column_names).cast(table.schema) if kept.num_rows else table.schema.empty_table()
