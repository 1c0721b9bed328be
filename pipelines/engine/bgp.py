"""The delta rules of a registered query, from view changes to gold answer changes, on either
Z-set engine (:mod:`pipelines.engine.zsets`).

A query is the product of its components (the subqueries of the connected-variable decomposition;
a ground component is a zero-column relation acting as a gate), each component a join of its triple
pattern views. For a join R1 ⋈ ... ⋈ Rn of Z-sets:

    Δ(R1 ⋈ ... ⋈ Rn) = Σ_i  R1' ⋈ ... ⋈ R(i-1)' ⋈ ΔRi ⋈ R(i+1) ⋈ ... ⋈ Rn

(R = before the batch, R' = R + ΔR). Each term starts from the small ΔRi and joins the other
patterns in the plan's delta order (every next pattern shares a variable with those joined: the
star decomposition's overlapping-subqueries order), so the work follows the changed rows and what
they join with. The same rule over components gives the product's change; FILTERs act row by row
and projection sums multiplicities, so both commute with deltas. DISTINCT (and ASK) keep the
projected bag and emit only the changes of its support. An aggregate query keeps its bag too, and
the aggregate operator (:mod:`pipelines.engine.aggregates`) turns its change into answer changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

from schemas.tables import MULT
from views.decompose import cheapest_order
from views.plan import Component, QueryPlan

from ..lake import bag_table, pe_table, sums_table
from .aggregates import STATE, AggregateOperator
from .zsets import ZSetEngine, binding_schema

Frame = Any   # an engine's frame (a Spark engine relation or an Arrow table)


def keeps_components(plan: QueryPlan) -> bool:
    """Partial-embedding tables are kept only where a product needs the other factors' state."""
    return len(plan.components) > 1


def is_distinct(plan: QueryPlan) -> bool:
    return plan.distinct or plan.form == "ask"


def state_tables(plan: QueryPlan) -> dict[str, pa.Schema]:
    """The partial-embedding and bag tables a query owns, with their schemas."""
    owned: dict[str, pa.Schema] = {}
    if keeps_components(plan):
        for i, component in enumerate(plan.components):
            owned[pe_table(plan.name, i)] = binding_schema(component.variables)
    if is_distinct(plan) or plan.aggregation:
        owned[bag_table(plan.name)] = binding_schema(plan.bag_columns)
    if plan.aggregation and plan.aggregation.running:
        owned[sums_table(plan.name)] = binding_schema((STATE,))
    return owned


def _plus(z: ZSetEngine, old: Frame, delta: Frame | None) -> Frame:
    return old if delta is None else z.add([old, delta])


def _delta_sum(z: ZSetEngine, orders: Sequence[Sequence[int]], delta: Callable[[int], Frame | None],
               old: Callable[[int, Frame], Frame]) -> Frame | None:
    """Σ_i ΔRi joined with the other relations in ``orders[i]`` (which starts with i): the state
    after the batch for j < i, before it for j > i. None when no relation changed. ``old(j, frame)``
    is Rj before the batch, or as much of it as can join ``frame``."""
    terms = []
    for i, order in enumerate(orders):
        frame = delta(i)
        if frame is None:
            continue
        for j in order[1:]:
            frame = z.join(frame, _plus(z, old(j, frame), delta(j)) if j < i else old(j, frame))
        terms.append(frame)
    return z.add(terms) if terms else None


def component_delta(z: ZSetEngine, component: Component, delta: Callable[[str], Frame | None],
                    consolidated: bool = True) -> Frame | None:
    """ΔC for one component, or None when no pattern of it changed (views before the batch are
    ``z.read``): its rows summed on the component's variables, or, when not ``consolidated``, left
    for a caller that sums them on fewer columns anyway (a group-by of every row the terms made)."""
    refs = component.patterns

    def changed(i: int) -> Frame | None:
        frame = delta(refs[i].view)
        return None if frame is None else z.rename(frame, refs[i].bind)

    def before(j: int, frame: Frame) -> Frame:
        return z.rename(z.lookup(refs[j].view, frame, refs[j].bind), refs[j].bind)

    rows = _delta_sum(z, component.delta_orders, changed, before)
    if rows is None:
        return None
    rows = z.where(rows, component.filter)
    return z.consolidate(rows, component.variables) if consolidated else rows


def component_full(z: ZSetEngine, component: Component) -> Frame:
    """All embeddings of a component from the views ``z.read`` gives (backfill), joined in the
    order estimated to build the fewest rows (two patterns join once, in either order)."""
    frames = [z.rename(z.read(p.view), p.bind) for p in component.patterns]
    order = component.delta_orders[0]
    if len(frames) > 2:
        sizes = [z.size(frame) for frame in frames]
        if None not in sizes:
            order = cheapest_order(component.delta_orders, sizes)
    frame = frames[order[0]]
    for j in order[1:]:
        frame = z.join(frame, frames[j])
    return z.consolidate(z.where(frame, component.filter), component.variables)


def product_delta(z: ZSetEngine, deltas: Sequence[Frame | None], old: Sequence[Frame]) -> Frame | None:
    """Δ(C1 × ... × Ck) from each component's change and state before the batch."""
    orders = [(i, *(j for j in range(len(deltas)) if j != i)) for i in range(len(deltas))]
    return _delta_sum(z, orders, deltas.__getitem__, lambda j, _: old[j])


def sums_again(plan: QueryPlan, consolidated: Sequence[str]) -> bool:
    """Whether :func:`project` sums rows already consolidated on ``consolidated`` again: unless
    they are consolidated on its very columns, with no global FILTER to apply first."""
    return bool(plan.filter_sql) or sorted(consolidated) != sorted(plan.bag_columns)


def project(z: ZSetEngine, plan: QueryPlan, rows: Frame, consolidated: Sequence[str] = ()) -> Frame:
    """Global FILTERs, then projection onto the output variables, or an aggregation's inputs
    (multiplicities summed). Rows ``consolidated`` on those very columns already (a single
    component's change, with no global FILTER) are only put in their order: summing them again
    was a group-by of every answer change (250,000 a batch for eleven path queries at 1M edges)."""
    if not sums_again(plan, consolidated):
        return z.rename(rows, [(c, c) for c in plan.bag_columns])
    return z.consolidate(z.where(rows, plan.filter), plan.bag_columns)


@dataclass
class QueryDelta:
    """What one batch changes for one query, as Arrow tables ready to commit."""

    state: dict[str, pa.Table]   # changes of the partial-embedding and bag tables the query owns
    gold: pa.Table               # answer change


GOLD = "gold"   # the key of a query's answer change among its outputs


class QueryMaintainer:
    """Turns view changes into a query's partial-embedding, bag and gold changes, on engine ``z``
    (whose ``read`` gives state tables at the version the batch started from, so a re-run after a
    crash computes the very same deltas)."""

    def __init__(self, plan: QueryPlan, z: ZSetEngine) -> None:
        self.plan = plan
        self.z = z
        self.aggregate = AggregateOperator(plan, z) if plan.aggregation else None

    def tables(self) -> dict[str, pa.Schema]:
        """The state tables this query owns, with their schemas (gold and changes excluded)."""
        return state_tables(self.plan)

    def schemas(self) -> dict[str, pa.Schema]:
        """The schema of every output of :meth:`outputs`: owned tables and the gold change (an
        aggregate query: what its operator needs to compute it)."""
        if self.aggregate is not None:
            return {**self.tables(), **self.aggregate.schemas()}
        return {**self.tables(), GOLD: binding_schema(self.plan.projection)}

    def outputs(self, delta_frames: dict[str, Frame]) -> dict[str, Frame]:
        """The batch's changes, keyed by owned table name or :data:`GOLD` (lazy on Spark, so the
        caller collects every query's outputs at once). A query no changed view touches has no
        outputs."""
        plan, z = self.plan, self.z
        out: dict[str, Frame] = {}
        # a query of one component sums its change on the projection's columns (project): summing
        # it on the component's variables first, as a kept component's state needs, is a second
        # group-by of the same rows (in eight of the eleven path queries at 1M edges, 5% of a batch)
        summed_later = not keeps_components(plan) and sums_again(plan, plan.components[0].variables)
        comp_deltas = [component_delta(z, c, delta_frames.get, not summed_later) for c in plan.components]
        if keeps_components(plan):
            for i, d in enumerate(comp_deltas):
                if d is not None:
                    out[pe_table(plan.name, i)] = d
            old = [z.read(pe_table(plan.name, i)) for i in range(len(plan.components))]
            rows = product_delta(z, comp_deltas, old)
        else:
            rows = comp_deltas[0]
        consolidated_on = () if keeps_components(plan) else plan.components[0].variables
        projected = None if rows is None else project(z, plan, rows, consolidated_on)
        if self.aggregate is not None:
            return {**out, **self.aggregate.outputs(projected)}
        if projected is None:
            return out
        if not is_distinct(plan):
            out[GOLD] = projected
            return out
        out[bag_table(plan.name)] = projected
        before = z.lookup(bag_table(plan.name), projected, [(c, c) for c in plan.projection])
        out[GOLD] = z.support_delta(projected, before, plan.projection)
        return out

    def delta(self, results: Mapping[str, pa.Table]) -> QueryDelta:
        """The batch's state and answer changes from this query's collected outputs (keyed as
        :meth:`schemas`); an aggregate operator adds the state it computes from them."""
        state = {t: results[t] for t in self.tables()}
        if self.aggregate is None:
            return QueryDelta(state, results[GOLD])
        gold, computed = self.aggregate.answer_change(results)
        return QueryDelta({**state, **computed}, gold)

    def full(self) -> QueryDelta:
        """The query's whole state and answers from the views (a delta from empty): the backfill
        at registration."""
        plan, z = self.plan, self.z
        state: dict[str, pa.Table] = {}
        components = [component_full(z, c) for c in plan.components]
        if keeps_components(plan):
            names = [pe_table(plan.name, i) for i in range(len(components))]
            state = z.collect(dict(zip(names, components)), {n: self.tables()[n] for n in names})
            components = [z.from_arrow(state[n]) for n in names]
        rows = components[0]
        for other in components[1:]:
            rows = z.join(rows, other)
        schema = binding_schema(plan.bag_columns)
        bag = z.collect({GOLD: project(z, plan, rows)}, {GOLD: schema})[GOLD]
        if self.aggregate is not None:
            gold, computed = self.aggregate.answers(bag)
            return QueryDelta({**state, bag_table(plan.name): bag, **computed}, gold)
        if not is_distinct(plan):
            return QueryDelta(state, bag)
        state[bag_table(plan.name)] = bag
        ones = pa.array([1] * bag.num_rows, pa.int64())
        return QueryDelta(state, bag.set_column(bag.schema.get_field_index(MULT), MULT, ones))
