"""One application of update messages to a set of queries: view changes and delta rules.

A micro-batch is one such step for the queries over the whole graph; a windowed query on the Spark
engine or with aggregates takes one per window it emits, fed by the window operator's messages
(:mod:`pipelines.engine.windows`; the others run the same delta rules over all of a batch's windows
at once, :mod:`pipelines.engine.intervals`). Both
compute everything from the state tables as the engine ``z`` reads them; what they change is
committed by the caller, each commit carrying the batch's app transaction so a re-run skips what
already happened (a windowed query writes each table its windows changed once per batch).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.plan import QueryPlan, ViewDef

from .. import catalog
from ..lake import gold_table
from .bgp import QueryMaintainer
from .lookup import Find
from .path_edges import CodedViews
from .paths import path_changes
from .threads import each
from .views import compute_view_changes, probe_arrow, probe_spark
from .zsets import ZSetEngine, binding_schema

def gold_schema(plan: QueryPlan) -> pa.Schema:
    """Schema of a query's answer table: a projected ``timestamp()`` may be unbound (a triple in
    a background graph and in no window has none), and so may an aggregate (SUM of a string, MIN
    of no values) or an expression's value (an error)."""
    aggregates = plan.aggregation.nullable if plan.aggregation else ()
    return binding_schema(plan.projection, nullable=plan.stamps + aggregates)


def unbind_stamps(plan: QueryPlan, gold: pa.Table) -> pa.Table:
    """An answer change with the engine's '' (no time) in projected timestamps made unbound: inside
    the engine '' keeps join and grouping keys null-free; answers say unbound as SPARQL does."""
    for name in set(plan.stamps) & set(plan.projection):
        i = gold.schema.get_field_index(name)
        column = gold[name]
        gold = gold.set_column(i, name, pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column))
    return gold.cast(gold_schema(plan))


@dataclass
class Step:
    """What a step changes, as Arrow tables ready to commit."""

    views: list[ViewDef]
    view_deltas: dict[str, pa.Table]
    path_deltas: dict[str, pa.Table]            # path views' and reach tables' changes (non-empty)
    noop_seqs: set[int]                         # the messages that changed no view they matched
    state: dict[str, dict[str, pa.Table]]       # per query: its partial-embedding and bag changes
    gold: dict[str, pa.Table]                   # per query: its answer change

    @property
    def noops(self) -> int:
        return len(self.noop_seqs)

    def answer_changes(self) -> int:
        return sum(int(pc.sum(pc.abs(g[MULT])).as_py() or 0) for g in self.gold.values())

    def changed(self) -> dict[str, tuple[pa.Table, list[str]]]:
        """Every non-empty table change with its key columns (views, owned state, gold)."""
        out = {v.id: (self.view_deltas[v.id], list(v.columns)) for v in self.views
               if self.view_deltas[v.id].num_rows}
        out.update({t: (rows, [c for c in rows.column_names if c != MULT]) for t, rows in self.path_deltas.items()})
        for name, tables in self.state.items():
            out.update({t: (rows, [c for c in rows.column_names if c != MULT])
                        for t, rows in tables.items() if rows.num_rows})
        for name, rows in self.gold.items():
            if rows.num_rows:
                out[gold_table(name)] = (rows, [c for c in rows.column_names if c != MULT])
        return out


def compute(z: ZSetEngine, messages: pa.Table, plans: list[QueryPlan], find: Find | None = None,
            coded: CodedViews | None = None) -> Step:
    """Apply ``messages`` (``seq``, ``op``, ``s``, ``p``, ``o``) to the views of ``plans`` and run
    their delta rules on engine ``z``; nothing is written. ``find`` looks up the path views' and
    reach tables' rows for the path operator (by default from the tables ``z`` reads whole), and
    ``coded`` gives the edge views a run keeps coded for its walks (:mod:`.path_graph`). On
    Arrow the queries' delta rules run on threads (:func:`.threads.each`, the most patterns
    first): they only read what they share, and their joins release the GIL. Spark's are lazy
    plans, collected together below."""
    if not plans:
        return Step([], {}, {}, set(), {}, {})
    views = catalog.distinct_views(plans)
    if z.name == "arrow":
        probed = probe_arrow(messages, views, lambda v, keys: z.lookup(v.id, keys, [(c, c) for c in v.columns]),
                             z.where)
    else:
        probed = probe_spark(z, messages, views)
    changes = compute_view_changes(probed, views)
    path_views = catalog.distinct_paths(plans)
    paths = path_changes(path_views, cache(z.arrow), changes.deltas, find, coded)
    joined = {**changes.deltas, **{p.id: paths[p.id] for p in path_views if p.id in paths}}
    delta_frames = {v: z.from_arrow(t) for v, t in joined.items() if t.num_rows}
    maintainers = [QueryMaintainer(plan, z) for plan in plans]
    outputs, schemas = {}, {}
    if z.name == "arrow":
        produced = each(lambda m: m.outputs(delta_frames), maintainers, weight=lambda m: len(m.plan.views))
    else:
        produced = [m.outputs(delta_frames) for m in maintainers]
    for m, out in zip(maintainers, produced):
        outputs.update({(m.plan.name, key): frame for key, frame in out.items()})
        schemas.update({(m.plan.name, key): schema for key, schema in m.schemas().items()})
    results = z.collect(outputs, schemas)
    deltas = {m.plan.name: m.delta({k: results[(m.plan.name, k)] for k in m.schemas()}) for m in maintainers}
    state = {m.plan.name: deltas[m.plan.name].state for m in maintainers}
    gold = {m.plan.name: unbind_stamps(m.plan, deltas[m.plan.name].gold) for m in maintainers}
    return Step(views, changes.deltas, paths, changes.noop_seqs, state, gold)
