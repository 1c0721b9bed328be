"""The delta rules of a registered query, on Spark, from view changes to gold answer changes.

A query is the product of its components (the subqueries of the connected-variable decomposition;
a ground component is a zero-column relation acting as a gate), each component a join of its triple
pattern views. For a join R1 ⋈ ... ⋈ Rn of Z-sets:

    Δ(R1 ⋈ ... ⋈ Rn) = Σ_i  R1' ⋈ ... ⋈ R(i-1)' ⋈ ΔRi ⋈ R(i+1) ⋈ ... ⋈ Rn

(R = before the batch, R' = R + ΔR). Each term starts from the small ΔRi and joins the other
patterns in the plan's delta order (every next pattern shares a variable with those joined: the
star decomposition's overlapping-subqueries order), so the work follows the changed rows and what
they join with. The same rule over components gives the product's change; FILTERs act row by row
and projection sums multiplicities, so both commute with deltas. DISTINCT (and ASK) keep the
projected bag and emit only the changes of its support.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas.tables import MULT
from views.plan import Component, PatternRef, QueryPlan

from . import zsets
from .lake import bag_table, pe_table

Frames = Callable[[str], DataFrame]


def binding_schema(columns: Sequence[str]) -> pa.Schema:
    """Schema of a bag of bindings: one string column per variable and the multiplicity."""
    return pa.schema([pa.field(c, pa.string(), nullable=False) for c in columns]
                     + [pa.field(MULT, pa.int64(), nullable=False)])


def keeps_components(plan: QueryPlan) -> bool:
    """Partial-embedding tables are kept only where a product needs the other factors' state."""
    return len(plan.components) > 1


def is_distinct(plan: QueryPlan) -> bool:
    return plan.distinct or plan.form == "ask"


def pattern_frame(ref: PatternRef, view: DataFrame) -> DataFrame:
    """A view's rows renamed to the query variables the pattern binds."""
    return view.select(*[F.col(c).alias(v) for c, v in ref.bind], MULT)


def _plus(old: DataFrame, delta: DataFrame | None) -> DataFrame:
    return old if delta is None else zsets.add([old, delta])


def component_delta(component: Component, old: Frames, delta: Callable[[str], DataFrame | None]
                    ) -> DataFrame | None:
    """ΔC for one component, or None when no pattern of it changed."""
    terms = []
    for i, order in enumerate(component.delta_orders):
        changed = delta(component.patterns[i].view)
        if changed is None:
            continue
        frame = pattern_frame(component.patterns[i], changed)
        for j in order[1:]:
            ref = component.patterns[j]
            source = _plus(old(ref.view), delta(ref.view)) if j < i else old(ref.view)
            frame = zsets.join(frame, pattern_frame(ref, source))
        terms.append(frame)
    if not terms:
        return None
    return zsets.consolidate(zsets.where(zsets.add(terms), component.filter_sql), component.variables)


def component_full(component: Component, current: Frames) -> DataFrame:
    """All embeddings of a component (backfill and the full-recompute baseline)."""
    order = component.delta_orders[0]
    frame = pattern_frame(component.patterns[order[0]], current(component.patterns[order[0]].view))
    for j in order[1:]:
        ref = component.patterns[j]
        frame = zsets.join(frame, pattern_frame(ref, current(ref.view)))
    return zsets.consolidate(zsets.where(frame, component.filter_sql), component.variables)


def product_delta(deltas: Sequence[DataFrame | None], old: Sequence[DataFrame]) -> DataFrame | None:
    """Δ(C1 × ... × Ck) from each component's change and state before the batch."""
    terms = []
    for i, changed in enumerate(deltas):
        if changed is None:
            continue
        frame = changed
        for j in range(len(deltas)):
            if j != i:
                frame = zsets.join(frame, _plus(old[j], deltas[j]) if j < i else old[j])
        terms.append(frame)
    return zsets.add(terms) if terms else None


def project(plan: QueryPlan, rows: DataFrame) -> DataFrame:
    """Global FILTERs, then projection onto the output variables (multiplicities summed)."""
    return zsets.consolidate(zsets.where(rows, plan.filter_sql), plan.projection)


def support_delta(bag_delta: DataFrame, bag_old: DataFrame, columns: Sequence[str]) -> DataFrame:
    """How the set of bindings with positive multiplicity changes when the bag changes by ``bag_delta``."""
    keyed = [*columns, "_k"]
    before = bag_old.withColumnRenamed(MULT, "_old").withColumn("_k", F.lit(1))
    joined = bag_delta.withColumn("_k", F.lit(1)).join(before, on=keyed, how="left")
    old = F.coalesce(F.col("_old"), F.lit(0))
    new = old + F.col(MULT)
    change = (new > 0).cast("long") - (old > 0).cast("long")
    return (joined.select(*[F.col(f"`{c}`") for c in columns], change.alias(MULT))
            .where(F.col(MULT) != 0))


@dataclass
class QueryDelta:
    """What one batch changes for one query, as Arrow tables ready to commit."""

    state: dict[str, pa.Table]   # changes of the partial-embedding and bag tables the query owns
    gold: pa.Table               # answer change


class QueryMaintainer:
    """Turns view changes into a query's partial-embedding, bag and gold changes.

    ``frame`` builds a Spark frame from an Arrow table; ``read`` reads a state table at the version
    the batch started from, so a re-run after a crash computes the very same deltas.
    """

    def __init__(self, plan: QueryPlan, frame: Callable[[pa.Table], DataFrame],
                 read: Callable[[str], DataFrame]) -> None:
        self.plan = plan
        self.frame = frame
        self.read = read

    def tables(self) -> dict[str, pa.Schema]:
        """The state tables this query owns, with their schemas (gold and changes excluded)."""
        owned: dict[str, pa.Schema] = {}
        if keeps_components(self.plan):
            for i, component in enumerate(self.plan.components):
                owned[pe_table(self.plan.name, i)] = binding_schema(component.variables)
        if is_distinct(self.plan):
            owned[bag_table(self.plan.name)] = binding_schema(self.plan.projection)
        return owned

    def delta(self, view_deltas: dict[str, pa.Table]) -> QueryDelta:
        plan = self.plan
        state: dict[str, pa.Table] = {}
        delta_frames = {v: self.frame(t) for v, t in view_deltas.items() if t.num_rows}
        comp_deltas = [component_delta(c, self.read, delta_frames.get) for c in plan.components]
        if keeps_components(plan):
            for i, d in enumerate(comp_deltas):
                if d is not None:
                    state[pe_table(plan.name, i)] = d.toArrow()
            comp_deltas = [self._nonempty(state.get(pe_table(plan.name, i))) for i in range(len(comp_deltas))]
            old = [self.read(pe_table(plan.name, i)) for i in range(len(plan.components))]
            rows = product_delta(comp_deltas, old)
        else:
            rows = comp_deltas[0]
        empty = pa.Table.from_pylist([], schema=binding_schema(plan.projection))
        if rows is None:
            return QueryDelta(state, empty)
        projected = project(plan, rows).toArrow()
        if not is_distinct(plan):
            return QueryDelta(state, projected)
        state[bag_table(plan.name)] = projected
        if projected.num_rows == 0:
            return QueryDelta(state, empty)
        gold = support_delta(self.frame(projected), self.read(bag_table(plan.name)), plan.projection)
        return QueryDelta(state, gold.toArrow())

    def _nonempty(self, table: pa.Table | None) -> DataFrame | None:
        return None if table is None or table.num_rows == 0 else self.frame(table)

    def full(self, current: Frames) -> QueryDelta:
        """The query's whole state and answers from views ``current`` (a delta from empty):
        used by backfill at registration and by the full-recompute baseline."""
        plan = self.plan
        state: dict[str, pa.Table] = {}
        components = [component_full(c, current) for c in plan.components]
        if keeps_components(plan):
            for i, component in enumerate(components):
                state[pe_table(plan.name, i)] = component.toArrow()
            components = [self.frame(state[pe_table(plan.name, i)]) for i in range(len(components))]
        rows = components[0]
        for other in components[1:]:
            rows = zsets.join(rows, other)
        bag = project(plan, rows).toArrow()
        if not is_distinct(plan):
            return QueryDelta(state, bag)
        state[bag_table(plan.name)] = bag
        ones = pa.array([1] * bag.num_rows, pa.int64())
        return QueryDelta(state, bag.set_column(bag.schema.get_field_index(MULT), MULT, ones))
