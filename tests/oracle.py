"""The independent oracle: pyoxigraph evaluating the same SPARQL on the same snapshot, as bags."""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from fractions import Fraction
from typing import Callable, Iterable, Iterator

import pyarrow as pa
import pyoxigraph as ox
import pytest

from views.numbers import number
from views.terms import split_literal

Triple = tuple[str, str, str]


def oxigraph_store(triples: Iterable[Triple], named: Iterable[tuple[str, Triple]] = ()) -> ox.Store:
    """A store with ``triples`` in its default graph and each ``(graph IRI, triple)`` of ``named``."""
    store = ox.Store()
    data = "".join(f"{s} {p} {o} .\n" for s, p, o in triples)
    data += "".join(f"{s} {p} {o} {g} .\n" for g, (s, p, o) in named)
    if data:
        store.load(data.encode(), format=ox.RdfFormat.N_QUADS)
    return store


def oracle_bag(query: str, triples: Iterable[Triple], variables: tuple[str, ...],
               named: Iterable[tuple[str, Triple]] = ()) -> Counter:
    """SELECT results as a bag of tuples of N-Triples terms; ASK as Counter({(): 1}) or empty."""
    result = oxigraph_store(triples, named).query(query)
    if isinstance(result, ox.QueryBoolean):
        return Counter({(): 1}) if bool(result) else Counter()
    bag: Counter = Counter()
    for solution in result:
        bag[tuple(str(solution[v]) if solution[v] is not None else None for v in variables)] += 1
    return bag


def check_every_batch(history: Iterable[tuple[int, Iterable[Triple], dict[str, Counter]]], name: str, query: str,
                      variables: tuple[str, ...], comparable: Callable[[Counter], object] = lambda bag: bag) -> None:
    """Query ``name``'s answers after every recorded batch (``(batch, graph, answers by query)``)
    equal pyoxigraph's on that batch's graph, both made ``comparable``; at least four batches."""
    checked = 0
    for batch, graph, gold in history:
        if name not in gold:
            continue
        checked += 1
        expected = oracle_bag(query, graph, variables)
        assert comparable(gold[name]) == comparable(expected), f"{name} differs from pyoxigraph after batch {batch}"
    assert checked >= 4


def table_bag(table: pa.Table, variables: tuple[str, ...]) -> Counter:
    """A gold table (binding columns + _mult) as a bag of tuples."""
    bag: Counter = Counter()
    for row in table.to_pylist():
        bag[tuple(row[v] for v in variables)] += row["_mult"]
    return bag


def changes_bag(table: pa.Table, variables: tuple[str, ...], upto_batch: int | None = None) -> Counter:
    """The sum of signed answer changes (up to a batch), as a bag."""
    bag: Counter = Counter()
    for row in table.to_pylist():
        if upto_batch is None or row["_batch"] <= upto_batch:
            bag[tuple(row[v] for v in variables)] += row["_count"] if row["_sign"] == "+" else -row["_count"]
    return +bag


def term_value(term: str | None) -> object:
    """A term as answers are compared: a number as (datatype, value), exact for integer and
    decimal, to 9 significant digits for float and double (systems spell them differently:
    ``1.5E0``, ``1.5``, and may sum them in another order); any other term as itself."""
    n = None if term is None else number(term)
    if n is None:
        return term
    datatype = split_literal(term)[2]
    if n.rank < 2:
        return datatype, Fraction(n.value)
    return datatype, float(f"{float(n.value):.9g}")


#: The Spark engine with every batch on its SQL plan. On ``spark`` a test's batches, all small,
#: run their queries' delta rules in executor tasks (:mod:`pipelines.engine.tasks`).
SPARK_PLAN = "spark-plan"


@contextmanager
def placed(variant: str) -> Iterator[str]:
    """The Z-set engine a replay ``variant`` (``arrow``, ``spark`` or :data:`SPARK_PLAN`) runs on,
    placed as it says for the block."""
    from pipelines.engine import tasks

    with pytest.MonkeyPatch.context() as patch:
        if variant == SPARK_PLAN:
            patch.setattr(tasks, "TASKS_MAX_MESSAGES", -1)
        yield variant.removesuffix("-plan")


def check_placed(batch: dict, variant: str) -> None:
    """A batch ran on the engine ``variant`` names, its queries in tasks exactly on ``spark``."""
    assert batch["engine"] == variant.removesuffix("-plan")
    assert (batch["tasks"] > 0) == (variant == "spark"), f"queries stepped in tasks on {variant}: {batch['tasks']}"


def replay_stream(store, spark, variant: str, plans: dict, late: set[str], stream, batches: int,
                  script: Callable[[object, int], list[tuple[str, Triple]]], landing) -> list[tuple[int, frozenset, dict]]:
    """Register ``plans`` (those named in ``late`` after the first batch: a backfill), then run
    ``batches`` batches on the engine ``variant`` names (:func:`placed`), each the ``stream``'s
    next random batch followed by the messages ``script(stream, i)`` gives (read off the graph as
    it stands), written under ``landing``. Returns, per batch, ``(batch, graph, answers by
    query)`` for :func:`check_every_batch`."""
    with placed(variant) as engine:
        return _replay_stream(store, spark, variant, engine, plans, late, stream, batches, script, landing)


def _replay_stream(store, spark, variant: str, engine: str, plans: dict, late: set[str], stream, batches: int,
                   script: Callable[[object, int], list[tuple[str, Triple]]], landing) -> list[tuple[int, frozenset, dict]]:
    from pipelines import answers as A
    from pipelines.engine.register import register
    from pipelines.engine.runner import Runner
    from pipelines.ingest import ingest_paths

    for name, plan in plans.items():
        if name not in late:
            register(store, spark, plan, engine=engine)
    history = []
    # one runner across batches, as a long-running job: what it holds between batches (the path
    # operator's indexed tables) is then checked too; a new one after a registration
    runner = Runner(store, spark, engine=engine)
    for i in range(batches):
        messages = stream.next_batch()
        messages += [stream.message(op, t) for op, t in script(stream, i)]
        ingest_paths(store, [str(stream.write(landing / f"b{i}.jsonl", messages))])
        if i == 1 and late & set(plans):
            for name in late & set(plans):
                register(store, spark, plans[name], engine=engine)
            runner = Runner(store, spark, engine=engine)
        report = runner.run()
        check_placed(report.batches[0], variant)
        active = {q.plan.name for q in A.catalog.registered(store)}
        gold = {name: table_bag(A.answers(store, name), plans[name].projection) for name in active}
        history.append((report.batches[0]["batch"], frozenset(stream.graph), gold))
    return history


def on_spark(*values: object) -> object:
    """A parameter set whose replay, picked by name as the test runs (``replay`` in conftest), is
    the Spark engine's: the mark ``spark`` puts the test in the session's group."""
    return pytest.param(*values, marks=pytest.mark.spark)
