"""Z-set algebra on Spark DataFrames: relations whose rows carry a signed multiplicity ``_mult``.

Why Z-sets: insertions and deletions become one algebra. A join multiplies multiplicities, a union
adds them, a projection sums them; the delta rules of a join then hold exactly for bags, deletions
included, with no special case for duplicates under projection.
"""
from __future__ import annotations

from functools import reduce
from typing import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas.tables import MULT


def data_columns(frame: DataFrame) -> list[str]:
    return [c for c in frame.columns if c != MULT]


def join(left: DataFrame, right: DataFrame) -> DataFrame:
    """Natural join on the shared columns (a Cartesian product when none); multiplicities multiply."""
    shared = [c for c in data_columns(left) if c in set(data_columns(right))]
    a = left.withColumnRenamed(MULT, "_m_left")
    b = right.withColumnRenamed(MULT, "_m_right")
    joined = a.join(b, on=shared, how="inner") if shared else a.crossJoin(b)
    return joined.withColumn(MULT, F.col("_m_left") * F.col("_m_right")).drop("_m_left", "_m_right")


def add(frames: Sequence[DataFrame]) -> DataFrame:
    """Z-set sum without consolidation (a union keeping every row and its multiplicity)."""
    return reduce(lambda a, b: a.unionByName(b), frames)


def consolidate(frame: DataFrame, columns: Sequence[str]) -> DataFrame:
    """Project onto ``columns``, summing multiplicities, dropping rows that cancel out."""
    cols = [F.col(f"`{c}`") for c in columns]
    grouped = frame.groupBy(*cols).agg(F.sum(MULT).alias(MULT)) if cols else \
        frame.agg(F.sum(MULT).alias(MULT))
    return grouped.where(F.col(MULT).isNotNull() & (F.col(MULT) != 0))


def where(frame: DataFrame, predicate: str | None) -> DataFrame:
    """Filter rows by a SQL predicate; filters commute with Z-set deltas since they act row by row."""
    return frame.where(F.expr(predicate)) if predicate else frame
