"""Registering and unregistering queries: backfill from the current snapshot, and clean-up.

A query registered on a lake that already holds data starts from the snapshot of the last completed
batch (the checkpoint every other query is at), so its first batch is already right: its new views
are filled from bronze up to that point, its partial embeddings and gold from the views. The backfill
is recorded as the query's answer changes at that batch. The catalog row is written last: a crash
before it leaves only tables no registered query uses, and they are rebuilt on the next attempt.
"""
from __future__ import annotations

import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from views.plan import QueryPlan

from . import catalog
from .lake import BRONZE, BatchLog, BatchRecord, changes_table, gold_table, init_lake
from .query_maintenance import QueryMaintainer
from .run import change_rows, changes_schema
from .storage import TableStore
from .view_maintenance import triples_in_graph, view_rows, view_schema
from .zsets import binding_schema
from .zsets_spark import SparkZSets


class RegistrationError(ValueError):
    """The query cannot be registered now (name taken, a batch half done)."""


def checkpoint(store: TableStore) -> BatchRecord:
    """The last completed batch; on a lake that never ran one, batch 0 at the current bronze head."""
    log = BatchLog(store)
    pending = log.pending()
    if pending is not None:
        raise RegistrationError(f"batch {pending.batch} was interrupted; finish it with 'lakegraph run' first")
    last = log.last_done()
    if last is not None:
        return last
    head = store.version(BRONZE)
    seqs = store.read_arrow(BRONZE, columns=["seq"])["seq"]
    record = BatchRecord(batch=0, status="done", bronze_from=0, bronze_to=head, seq_from=0,
                         seq_to=pc.max(seqs).as_py() if len(seqs) else 0,
                         stats={"batch": 0, "messages": len(seqs)})
    log.write(record)
    return record


def register(store: TableStore, spark: SparkSession, plan: QueryPlan) -> dict:
    """Register ``plan``; returns counts of what the backfill wrote."""
    init_lake(store)
    active = catalog.registered(store)
    if any(q.plan.name == plan.name for q in active):
        raise RegistrationError(f"a query named {plan.name!r} is already registered; unregister it first")
    at = checkpoint(store)
    in_use = {v.id for q in active for v in q.plan.views}
    # leftovers of an interrupted registration of this name, and views nobody uses
    for name in catalog.owned_tables(plan) + [v.id for v in plan.views if v.id not in in_use]:
        store.drop(name)
    new_views = [v for v in plan.views if v.id not in in_use]
    if new_views:
        bronze = store.read(BRONZE, at.bronze_to).where(F.col("seq") <= at.seq_to)
        graph = triples_in_graph(bronze).cache()
        for view in new_views:
            store.create(view.id, view_schema(view))
            store.append(view.id, view_rows(graph, view).toArrow())
        graph.unpersist()
    maintainer = QueryMaintainer(plan, SparkZSets(spark, store.read))
    result = maintainer.full()
    for name, schema in maintainer.tables().items():
        store.create(name, schema)
        store.append(name, result.state[name])
    store.create(gold_table(plan.name), binding_schema(plan.projection))
    store.append(gold_table(plan.name), result.gold)
    store.create(changes_table(plan.name), changes_schema(plan.projection))
    store.append(changes_table(plan.name), change_rows(plan.name, at, result.gold, plan.projection))
    catalog.add(store, plan, at.batch)
    return {"batch": at.batch, "views": len(plan.views), "new_views": len(new_views),
            "answers": int(pc.sum(result.gold["_mult"]).as_py() or 0)}


def unregister(store: TableStore, name: str) -> list[str]:
    """Remove query ``name`` and the tables only it uses; returns the tables dropped."""
    query = catalog.lookup(store, name)
    others = {v.id for q in catalog.registered(store) if q.plan.name != name for v in q.plan.views}
    catalog.remove(store, name)
    dropped = [t for t in catalog.owned_tables(query.plan) if store.exists(t)]
    dropped += [v.id for v in query.plan.views if v.id not in others]
    for table in dropped:
        store.drop(table)
    return dropped
