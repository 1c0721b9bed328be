"""The registered queries: their compiled plans as stored in the ``queries`` table."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, TypeVar

import pyarrow as pa

from schemas import tables as S
from views.path_views import PathDef
from views.model import validate_name
from views.plan import QueryPlan, ViewDef

from .lake import (QUERIES, VIEWS, background_table, bag_table, buffer_table, gold_table,
                   legacy_changes_table, legacy_state_table, now, pe_table, sums_table)
from .storage import TableStore

Shared = TypeVar("Shared", ViewDef, PathDef)


class CatalogError(ValueError):
    """A query name that is unknown or already taken."""


@dataclass(frozen=True)
class Registered:
    plan: QueryPlan
    registered_batch: int


def registered(store: TableStore) -> list[Registered]:
    """Active queries, by name."""
    if not store.exists(QUERIES):
        return []
    # The whole table, which the store then keeps at its version (a process reads the catalog at
    # every answer read; reading its files each time cost a third of an oracle test's replay), but
    # only the columns used go to Python: converting registered_at would make pyarrow import pandas.
    rows = store.read_arrow(QUERIES).select(["plan", "registered_batch"]).to_pylist()
    return sorted((Registered(_plan(r["plan"]), r["registered_batch"]) for r in rows), key=lambda q: q.plan.name)


@functools.lru_cache(maxsize=1024)
def _plan(text: str) -> QueryPlan:
    """A stored plan, parsed once per process: plans are immutable values, and parsing a lake's
    every plan at each catalog read cost more than the read."""
    return QueryPlan.from_json(text)


def lookup(store: TableStore, name: str) -> Registered:
    for query in registered(store):
        if query.plan.name == name:
            return query
    raise CatalogError(f"no registered query named {name!r} (see: lakegraph queries)")


def distinct_views(plans: list[QueryPlan]) -> list[ViewDef]:
    """The views the given queries use, each once (shared views are maintained once)."""
    return _by_id(view for plan in plans for view in plan.views)


def distinct_paths(plans: list[QueryPlan]) -> list[PathDef]:
    """The path views the given queries use, each once (shared like views)."""
    return _by_id(path for plan in plans for path in plan.paths)


def kept_paths(store: TableStore) -> frozenset[str]:
    """The ids of the path views the registered queries keep: a new query shares those it can."""
    return frozenset(path.id for query in registered(store) for path in query.plan.paths)


def _by_id(items: Iterable[Shared]) -> list[Shared]:
    """``items`` with one of each id, sorted by id (the order state tables are read and written in)."""
    seen: dict[str, Shared] = {}
    for item in items:
        seen.setdefault(item.id, item)
    return [seen[k] for k in sorted(seen)]


def graph_views(plans: list[QueryPlan]) -> list[ViewDef]:
    """The views of the queries over the whole graph, each once: the parts of the views table
    (:mod:`pipelines.engine.views_table`). A windowed query's views are its own, parts of its state
    in the window state table."""
    return distinct_views([p for p in plans if not p.windowed])


def _path_tables(plans: list[QueryPlan]) -> list[str]:
    """Each path view's table and its reach table, each once (a star shares its plus's)."""
    return list(dict.fromkeys(t for p in distinct_paths(plans) for t in (p.id, p.reach)))


def shared_tables(plans: list[QueryPlan]) -> list[str]:
    """What queries share by canonical form, by name: views (:func:`graph_views`, parts of the
    views table), and path views with their reach state."""
    return [v.id for v in graph_views(plans)] + _path_tables(plans)


def shared_storage(plans: list[QueryPlan]) -> list[str]:
    """The tables that hold what queries share: the views table when the queries over the whole
    graph have views, and each path view's tables."""
    return ([VIEWS] if graph_views(plans) else []) + _path_tables(plans)


def owned_tables(plan: QueryPlan) -> list[str]:
    """Every table named after the query (the ones unregistering removes)."""
    names = [gold_table(plan.name), bag_table(plan.name), sums_table(plan.name)]
    names += [pe_table(plan.name, i) for i in range(len(plan.components))]
    names += [buffer_table(plan.name), background_table(plan.name), legacy_state_table(plan.name),
              legacy_changes_table(plan.name)]
    return names


def refuse_legacy_state(store: TableStore, plans: list[QueryPlan]) -> None:
    """Refuse to run windowed queries whose state is in a table of their own
    (:func:`~pipelines.lake.legacy_state_table`), from before the lake's one window state table:
    run, they would start their windows from nothing, without a word."""
    old = [p.name for p in plans if p.windowed and store.exists(legacy_state_table(p.name))]
    if old:
        raise CatalogError(f"windowed query {old[0]!r} keeps its state in {legacy_state_table(old[0])}, the layout "
                           f"of an earlier lakegraph: register it again (lakegraph unregister {old[0]}, then "
                           f"lakegraph register FILE --name {old[0]}) to replay its windows from bronze")


def add(store: TableStore, plan: QueryPlan, registered_batch: int) -> None:
    row = {"name": plan.name, "text": plan.text, "plan": plan.to_json(),
           "registered_batch": registered_batch, "registered_at": now()}
    store.append(QUERIES, pa.Table.from_pylist([row], schema=S.QUERIES))


def remove(store: TableStore, name: str) -> None:
    # the name goes into a predicate: only a name a query could have (no quote) gets there
    store.delete(QUERIES, f"name = '{validate_name(name)}'")
