"""Z-sets: relations whose rows carry a signed multiplicity ``_mult``, and the engines that run them.

Why Z-sets: insertions and deletions become one algebra. A join multiplies multiplicities, a union
adds them, a projection sums them; the delta rules of a join then hold exactly for bags, deletions
included, with no special case for duplicates under projection.

The delta rules (:mod:`pipelines.engine.bgp`) are written once against :class:`ZSetEngine`;
two engines run them:

* :class:`pipelines.engine.spark.SparkZSets`: a batch's plan as SQL text, all of its outputs evaluated
  in one Spark job. It scales out with the cluster, but every job pays Spark's fixed planning and
  scheduling cost (seconds, whatever the batch size).
* :class:`pipelines.engine.arrow.ArrowZSets`: eager Arrow tables in this process (Acero hash joins,
  group-bys). No job overhead, so a small batch costs what its rows cost; the state tables it reads
  must fit in the driver's memory. FILTERs, compiled to Spark SQL, still go to Spark.
"""
from __future__ import annotations

from typing import Generic, Mapping, Protocol, Sequence, TypeVar

import pyarrow as pa

from schemas.tables import MULT
from views.conditions import Condition
from views.decompose import PatternSize

Frame = TypeVar("Frame")
Key = TypeVar("Key")


def binding_schema(columns: Sequence[str], nullable: Sequence[str] = ()) -> pa.Schema:
    """Schema of a bag of bindings: one string column per variable (unbound allowed only in the
    ``nullable`` ones) and the multiplicity."""
    return pa.schema([pa.field(c, pa.string(), nullable=c in nullable) for c in columns]
                     + [pa.field(MULT, pa.int64(), nullable=False)])


class ZSetEngine(Protocol, Generic[Frame]):
    """The Z-set operations the delta rules need; frames are the engine's own (opaque) values."""

    name: str

    def read(self, table: str) -> Frame:
        """A state table as it was when the batch started (the versions the batch log recorded)."""

    def arrow(self, table: str) -> pa.Table:
        """A state table as it was when the batch started, as Arrow in this process (for the path
        operator, whose rounds on small frontiers would cost a Spark job each)."""

    def lookup(self, table: str, frame: Frame, on: Sequence[tuple[str, str]]) -> Frame:
        """State table ``table`` as :meth:`read` gives it, or only the rows of it that can join
        ``frame``: those whose column ``c`` holds a value of ``frame``'s column ``v``, for every
        pair ``(c, v)`` of ``on`` whose ``v`` ``frame`` has. A delta rule joins a batch's few
        changed rows with the views, and reading only the rows their keys hit is what keeps its
        cost following the change rather than the graph."""

    def from_arrow(self, table: pa.Table) -> Frame:
        """An Arrow Z-set (a view's change, say) as a frame."""

    def size(self, frame: Frame) -> PatternSize | None:
        """A frame's rows and each column's distinct values (estimated, on Spark, in a job), by
        which a backfill orders its joins (:func:`views.decompose.cheapest_order`); None where
        they say nothing of a join's rows (a backfill then joins in its plan's first order)."""

    def rename(self, frame: Frame, pairs: Sequence[tuple[str, str]]) -> Frame:
        """Columns ``old`` renamed ``new`` for each pair (the others dropped), multiplicity kept."""

    def join(self, left: Frame, right: Frame) -> Frame:
        """Natural join on the shared columns (a Cartesian product when none); multiplicities multiply."""

    def semijoin(self, frame: Frame, keys: Frame, columns: Sequence[str]) -> Frame:
        """The rows of ``frame`` whose ``columns`` equal those of some row of ``keys`` (multiplicities
        of ``frame`` kept, those of ``keys`` ignored): reading only the groups a batch touches."""

    def add(self, frames: Sequence[Frame]) -> Frame:
        """Z-set sum without consolidation (every row kept with its multiplicity)."""

    def consolidate(self, frame: Frame, columns: Sequence[str]) -> Frame:
        """Project onto ``columns``, summing multiplicities, dropping rows that cancel out."""

    def where(self, frame: Frame, condition: Condition | None) -> Frame:
        """Rows satisfying a condition (filters act row by row, so they commute with deltas)."""

    def support_delta(self, bag_delta: Frame, bag_old: Frame, columns: Sequence[str]) -> Frame:
        """How the set of bindings with positive multiplicity changes when the bag ``bag_old`` changes
        by ``bag_delta`` (both consolidated): +1 for a binding that appears, -1 for one that goes."""

    def collect(self, outputs: Mapping[Key, Frame], schemas: Mapping[Key, pa.Schema]) -> dict[Key, pa.Table]:
        """Every output as Arrow in its schema (outputs absent from ``outputs`` come back empty)."""
