"""A registration fills its new views from the messages their patterns can match
(:func:`pipelines.engine.views.for_views_arrow`, :func:`~pipelines.engine.views.for_views` on
Spark), not from all of bronze: the rows must be those the whole graph gives, whatever the history
of a triple (inserted, deleted, inserted again)."""
from __future__ import annotations

import random

import pyarrow as pa

from pipelines.engine.views import (for_views, for_views_arrow, triples_in_graph, triples_in_graph_arrow,
                                    view_rows, view_rows_arrow)
from views.plan import compile_query
from views.sparql import parse_query

TERMS = ["<a>", "<b>", "<c>", '"x"']
PREDICATES = ["<p>", "<q>", "<r>"]
#: patterns with constants in each position, repeated variables, and one that matches every triple
QUERIES = [
    "SELECT * WHERE { ?x <p> ?y }",
    "SELECT * WHERE { <a> ?p ?y . ?y <q> <b> }",
    "SELECT * WHERE { ?x ?p ?x }",
    "SELECT * WHERE { ?x <r> ?x }",
    "SELECT * WHERE { ?s ?p ?o }",
]


def _messages(rng: random.Random, n: int) -> pa.Table:
    """Inserts and deletes of triples over a small vocabulary: a triple's messages interleave with
    others', and a triple often comes back after a delete."""
    rows = [(seq, rng.choice(["insert", "insert", "delete"]), rng.choice(TERMS[:3]), rng.choice(PREDICATES),
             rng.choice(TERMS)) for seq in range(n)]
    return pa.table([pa.array(column) for column in zip(*rows)], names=["seq", "op", "s", "p", "o"])


def test_views_filled_from_the_messages_they_match_equal_those_from_the_whole_graph():
    """Random histories; each query's views together and each view alone: the view rows from the
    kept messages equal those from all of them, and a view with a constant keeps only its own."""
    rng = random.Random(7)
    plans = [compile_query(parse_query(text, f"q{i}"), f"q{i}") for i, text in enumerate(QUERIES)]
    for _ in range(30):
        messages = _messages(rng, rng.randrange(1, 80))
        whole = triples_in_graph_arrow(messages)
        for plan in plans:
            for views in [plan.views, *([v] for v in plan.views)]:
                graph = triples_in_graph_arrow(for_views_arrow(messages, views))
                for view in views:
                    order = [(c, "ascending") for c in view.columns]
                    expected = view_rows_arrow(whole, view, None).sort_by(order)
                    assert view_rows_arrow(graph, view, None).sort_by(order).equals(expected), (plan.name, view.id)
        kept = for_views_arrow(messages, plans[0].views)
        assert kept["p"].to_pylist() == [p for p in messages["p"].to_pylist() if p == "<p>"]


def test_on_spark_too(spark):
    """The Spark backfill's filter (its conditions as Spark SQL) keeps the same rows: each query
    with a constant or a repeated variable, on one history (a Spark job per view)."""
    messages = _messages(random.Random(11), 80)
    frame = spark.createDataFrame(messages.to_pandas())
    whole = triples_in_graph_arrow(messages)
    for i, text in enumerate(QUERIES[:-1]):
        plan = compile_query(parse_query(text, f"q{i}"), f"q{i}")
        graph = triples_in_graph(for_views(frame, list(plan.views)))
        for view in plan.views:
            expected = {tuple(r.values()) for r in view_rows_arrow(whole, view, None).to_pylist()}
            assert {tuple(r) for r in view_rows(graph, view).collect()} == expected, (plan.name, view.id)
