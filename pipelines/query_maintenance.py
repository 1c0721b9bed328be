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

from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
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


GOLD = "gold"   # the key of a query's answer change among its outputs


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

    def schemas(self) -> dict[str, pa.Schema]:
        """The schema of every output of :meth:`outputs`: owned tables and the gold change."""
        return {**self.tables(), GOLD: binding_schema(self.plan.projection)}

    def outputs(self, delta_frames: dict[str, DataFrame]) -> dict[str, DataFrame]:
        """The batch's changes as lazy Spark frames, keyed by owned table name or :data:`GOLD`;
        nothing is evaluated here, so the caller collects every query's outputs in one job. A query
        no changed view touches has no outputs."""
        plan = self.plan
        out: dict[str, DataFrame] = {}
        comp_deltas = [component_delta(c, self.read, delta_frames.get) for c in plan.components]
        if keeps_components(plan):
            for i, d in enumerate(comp_deltas):
                if d is not None:
                    out[pe_table(plan.name, i)] = d
            old = [self.read(pe_table(plan.name, i)) for i in range(len(plan.components))]
            rows = product_delta(comp_deltas, old)
        else:
            rows = comp_deltas[0]
        if rows is None:
            return out
        projected = project(plan, rows)
        if not is_distinct(plan):
            out[GOLD] = projected
            return out
        out[bag_table(plan.name)] = projected
        out[GOLD] = support_delta(projected, self.read(bag_table(plan.name)), plan.projection)
        return out

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


def collect(outputs: dict[tuple[str, str], DataFrame], schemas: dict[tuple[str, str], pa.Schema]
            ) -> dict[tuple[str, str], pa.Table]:
    """Evaluate many Z-set frames in ONE Spark job: each is padded to a common shape (an output
    key, ``c0..cN``, ``_mult``), the shapes are unioned and collected once, then split in Arrow.
    Spark's fixed cost is per job, so this is what keeps a batch's job count flat in the number of
    queries. Outputs absent from ``outputs`` come back empty."""
    width = max([len(s) - 1 for s in schemas.values()] + [0])
    pads = [f"c{i}" for i in range(width)]
    keys = {key: f"{i}" for i, key in enumerate(outputs)}
    shaped = []
    for key, frame in outputs.items():
        columns = [f.name for f in schemas[key] if f.name != MULT]
        cells = [F.col(f"`{c}`").alias(pads[i]) for i, c in enumerate(columns)]
        cells += [F.lit(None).cast("string").alias(p) for p in pads[len(columns):]]
        shaped.append(frame.select(F.lit(keys[key]).alias("_out"), *cells, F.col(MULT).cast("long").alias(MULT)))
    rows = reduce(lambda a, b: a.unionByName(b), shaped).toArrow() if shaped else None
    result: dict[tuple[str, str], pa.Table] = {}
    for key, schema in schemas.items():
        if rows is None or key not in keys:
            result[key] = schema.empty_table()
            continue
        mine = rows.filter(pc.equal(rows["_out"], keys[key]))
        columns = [f.name for f in schema if f.name != MULT]
        result[key] = pa.table([mine[pads[i]] for i in range(len(columns))] + [mine[MULT]], schema=schema)
    return result
