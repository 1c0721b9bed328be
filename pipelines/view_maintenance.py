"""Per-triple-pattern views: which update messages touch a view, and the view's net change in a batch.

A view holds the triples of the current graph that match one canonical triple pattern (constants,
repeated variables and pushed-down FILTERs prune before storing), as rows of its variable columns.
The graph is a set, so within a batch the last message on a triple (by ``seq``) decides whether it
is present afterwards; comparing that with the view before the batch gives a +1/-1 change or nothing.
Inserting a present triple and deleting an absent one are counted as no-ops.

Every view's change is computed in ONE Spark job: the per-view frames are padded to a common shape
(``c0..c2``, at most three variable positions) and unioned before a single collect.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from schemas.tables import MULT
from views.plan import ViewDef

_PAD = ("c0", "c1", "c2")
_KIND_DELTA = "delta"
_KIND_NOOP = "noop"


def view_schema(view: ViewDef) -> pa.Schema:
    """The Delta schema of a view table: its variable columns and a multiplicity (always 1)."""
    return pa.schema([pa.field(c, pa.string(), nullable=False) for c in view.columns]
                     + [pa.field(MULT, pa.int64(), nullable=False)])


def matching(messages: DataFrame, view: ViewDef) -> DataFrame:
    """Messages whose triple matches ``view``, with the view's columns bound from the triple."""
    cond = F.lit(True)
    for position, constant in (("s", view.s), ("p", view.p), ("o", view.o)):
        if constant is not None:
            cond = cond & (F.col(position) == F.lit(constant))
    first: dict[str, str] = {}
    for position, column in view.positions:
        if column in first:
            cond = cond & (F.col(position) == F.col(first[column]))
        else:
            first[column] = position
    selected = messages.where(cond).select(
        "seq", "op", *[F.col(first[c]).alias(c) for c in view.columns])
    return selected.where(F.expr(view.filter_sql)) if view.filter_sql else selected


def triples_in_graph(messages: DataFrame) -> DataFrame:
    """The graph a message history leaves behind: triples whose last message is an insert."""
    last = Window.partitionBy("s", "p", "o").orderBy(F.desc("seq"))
    return (messages.withColumn("_rank", F.row_number().over(last))
            .where((F.col("_rank") == 1) & (F.col("op") == "insert"))
            .select("s", "p", "o"))


def view_rows(graph: DataFrame, view: ViewDef) -> DataFrame:
    """A view's full contents from a graph of (s, p, o) rows (used by backfill)."""
    as_messages = graph.withColumn("seq", F.lit(0)).withColumn("op", F.lit("insert"))
    return matching(as_messages, view).select(*view.columns).distinct().withColumn(MULT, F.lit(1).cast("long"))


def _changes(messages: DataFrame, view: ViewDef, before: DataFrame) -> DataFrame:
    """Rows of the common shape for one view: net changes (+1/-1) and no-op messages."""
    cols = list(view.columns) + ["_k"]
    hits = matching(messages, view).withColumn("_k", F.lit(1))
    present = before.select(*view.columns).withColumn("_k", F.lit(1)).withColumn("_present", F.lit(True))
    by_key = Window.partitionBy(*cols).orderBy("seq")
    newest = Window.partitionBy(*cols).orderBy(F.desc("seq"))
    walked = (hits.join(present, on=cols, how="left")
              .withColumn("_present", F.coalesce(F.col("_present"), F.lit(False)))
              .withColumn("_prev", F.lag("op").over(by_key))
              .withColumn("_rank", F.row_number().over(newest)))
    state_before = F.when(F.col("_prev").isNull(), F.col("_present")).otherwise(F.col("_prev") == "insert")
    is_insert = F.col("op") == "insert"
    mult = is_insert.cast("long") - F.col("_present").cast("long")
    pads = [F.col(c).alias(_PAD[i]) for i, c in enumerate(view.columns)]
    pads += [F.lit(None).cast("string").alias(p) for p in _PAD[len(view.columns):]]

    def shaped(rows: DataFrame, kind: str, weight) -> DataFrame:
        return rows.select(F.lit(view.id).alias("_view"), F.lit(kind).alias("_kind"), F.col("seq"),
                           *pads, weight.alias(MULT))

    noops = shaped(walked.where(is_insert == state_before), _KIND_NOOP, F.lit(0).cast("long"))
    deltas = shaped(walked.where((F.col("_rank") == 1) & (mult != 0)), _KIND_DELTA, mult)
    return noops.unionByName(deltas)


@dataclass
class ViewChanges:
    """A batch's effect on every view: Arrow deltas per view and the no-op message seqs."""

    deltas: dict[str, pa.Table]
    noop_seqs: set[int]


def compute_view_changes(messages: DataFrame, views: Iterable[ViewDef],
                         before: Callable[[ViewDef], DataFrame]) -> ViewChanges:
    """Net change of each view for the batch ``messages`` against the view contents ``before(view)``."""
    views = list(views)
    if not views:
        return ViewChanges({}, set())
    frames = [_changes(messages, v, before(v)) for v in views]
    rows = reduce(lambda a, b: a.unionByName(b), frames).toArrow()
    deltas: dict[str, pa.Table] = {}
    kinds = rows["_kind"]
    changed = rows.filter(pc.equal(kinds, _KIND_DELTA))
    for view in views:
        mine = changed.filter(pc.equal(changed["_view"], view.id))
        deltas[view.id] = pa.table(
            [mine[_PAD[i]] for i in range(len(view.columns))] + [mine[MULT]],
            schema=view_schema(view))
    noops = rows.filter(pc.equal(kinds, _KIND_NOOP))["seq"].to_pylist()
    return ViewChanges(deltas, set(noops))
