"""The Spark engine's small batches in executor tasks (pipelines/engine/tasks.py): a task per query,
one Spark job, and a query whose FILTER leaves a value to Spark SQL handed back to the SQL plan,
the answers pyoxigraph's after every batch either way; a worker's tasks follow the views by what
each batch appended."""
from __future__ import annotations

from bench.measure import spark_jobs
from pipelines import answers as A
from pipelines.engine import tasks
from pipelines.catalog import graph_views
from pipelines.engine.arrow import ArrowZSets
from pipelines.engine.held import HeldTables, batch_reads, held_tables
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.engine.step import compute
from pipelines.ingest import ingest_paths
from pipelines.lake import BRONZE, VIEWS, BatchLog
from pipelines.storage import open_store
from views.plan import compile_query
from views.sparql import parse_query

from .oracle import oracle_bag, table_bag
from .streams import PREFIXES, Stream, iri

QUERIES = {
    "knows": "SELECT ?x ?y WHERE { ?x ex:knows ?y . ?y ex:type ex:Person }",
    # "i" over non-ASCII text: Java and Python may read it differently, so Spark SQL decides
    "labels": 'SELECT ?x ?l WHERE { ?x ex:label ?l FILTER(regex(?l, "^AB", "i")) }',
}
LABELS = ['"abé"', '"xyé"', '"ab"']


def test_queries_step_in_tasks_and_an_undecided_filter_on_the_plan(store, spark, tmp_path):
    stream = Stream(seed=3)
    plans = {name: compile_query(parse_query(PREFIXES + text, name), name) for name, text in QUERIES.items()}
    for plan in plans.values():
        register(store, spark, plan, engine="spark")
    runner = Runner(store, spark, engine="spark")
    for i in range(3):
        messages = stream.next_batch()
        messages += [stream.message("+" if i < 2 else "-", (iri("a"), iri("label"), LABELS[i % 2]))]
        messages += [stream.message("+", (iri("b"), iri("label"), LABELS[2]))] if i == 1 else []
        ingest_paths(store, [str(Stream.write(tmp_path / f"b{i}.jsonl", messages))])
        with spark_jobs(spark) as jobs:
            batch, = runner.run().batches
        # the labels query is handed back when a batch's rows hold non-ASCII labels (every
        # batch here), the other stays in its task
        assert (batch["engine"], batch["tasks"]) == ("spark", 1)
        assert jobs.count >= 2      # the tasks' job, then the plan's
        for name, plan in plans.items():
            expected = oracle_bag(PREFIXES + QUERIES[name], stream.graph, plan.projection)
            assert table_bag(A.answers(store, name), plan.projection) == expected, f"{name} after batch {i}"
    assert table_bag(A.answers(store, "labels"), plans["labels"].projection)   # the FILTER kept some


def test_a_worker_follows_the_views_by_the_rows_each_batch_appended(store, spark, tmp_path):
    """An executor's worker holds the views from one task to the next (``tasks._HELD``): the task
    of the batch after reads only what the batch before appended, and steps as the driver does."""
    stream = Stream(seed=5)
    plan = compile_query(parse_query(PREFIXES + QUERIES["knows"], "knows"), "knows")
    register(store, spark, plan, engine="arrow")
    runner = Runner(store, spark, engine="arrow")
    reads, versions = [], []
    for i in range(3):
        ingest_paths(store, [str(Stream.write(tmp_path / f"b{i}.jsonl", stream.next_batch()))])
        runner.run()
        versions.append(BatchLog(store).last_done().versions)
        messages = store.read_arrow(BRONZE).sort_by("seq").select(["seq", "op", "s", "p", "o"]).slice(0, 50)
        task = tasks._Task(tasks.lake_of(store), plan, versions[-1], tuple(graph_views([plan])))
        step, read = tasks._run(task, messages)
        fresh = HeldTables(open_store(store.root, None, backend="delta-rs"))    # as a worker's first task
        fresh.track(graph_views([plan]))
        read_fresh, find = batch_reads(fresh.store, fresh, versions[-1], held_tables([plan]))
        expected = compute(ArrowZSets(read_fresh, None, find), messages, [plan], find)
        assert table_bag(step.gold["knows"], plan.projection) == table_bag(expected.gold["knows"], plan.projection)
        reads.append(read.file_rows)
    whole = store.read_arrow(VIEWS, versions[0][VIEWS]).num_rows
    assert reads[0] >= whole > 0, "the worker's first task reads the views table"
    for before, after, read in zip(versions, versions[1:], reads[1:]):
        appended = store.appended(VIEWS, before[VIEWS], after[VIEWS])
        assert appended is not None and read == appended.num_rows < whole
