"""Aggregate queries against pyoxigraph, on both Z-set engines: after EVERY batch of a stream of
inserts, deletes, re-inserts and no-ops, each query's answers equal pyoxigraph's on that snapshot
(as bags); time travel and the sum of answer changes agree with them.

Numbers are compared as values of their type (lakegraph spells doubles canonically, ``1.5E0``,
where Oxigraph writes ``1.5``): integers and decimals exactly, floats and doubles to 9 significant
digits. Where SPARQL leaves the answer open the comparison says so: GROUP_CONCAT's order (compared
as the bag of its parts) and SAMPLE (any value of the group: checked against the group's values).

The stream adds to the usual vocabulary ``ex:score`` values of every numeric type (no two of one
subject equal in value, so MIN and MAX are the same term for both systems), booleans and strings
(SUM and AVG unbound there; no derived integer type: Oxigraph reads ``"7"^^xsd:long`` back as
``"7"^^xsd:integer``, so MIN would differ by spelling), and scripted moments: the current minimum of a group deleted, a group
emptied and refilled, and ``ex:rare`` triples that make an ungrouped aggregate go from no solution
to some and back.
"""
from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Callable

import pytest

from pipelines import answers as A
from pipelines.engine import held_bags
from pipelines.storage import delta_rs, open_store
from views.numbers import number
from views.plan import compile_query
from views.sparql import parse_query
from views.terms import split_literal

from .oracle import SPARK_PLAN, changes_bag, check_every_batch, on_spark, replay_stream, table_bag, term_value
from .streams import ENTITIES, PREFIXES, XSD, Stream, candidate_triples, iri

QUERIES = {
    "scores": "SELECT ?x (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) (COUNT(*) AS ?n) "
              "WHERE { ?x ex:score ?v } GROUP BY ?x",
    "distinct": "SELECT ?x (COUNT(DISTINCT ?t) AS ?types) (COUNT(?y) AS ?n) (SUM(DISTINCT ?a) AS ?ages) "
                "WHERE { ?x ex:knows ?y . ?y ex:type ?t . ?y ex:age ?a } GROUP BY ?x",
    "having": "SELECT ?y (COUNT(?x) AS ?n) WHERE { ?x ex:knows ?y } GROUP BY ?y "
              "HAVING (COUNT(?x) >= 2 && MAX(?x) != ex:f)",
    "counts_only": "SELECT (COUNT(?y) AS ?n) WHERE { ?x ex:likes ?y } GROUP BY ?x",
    "two_keys": "SELECT ?x ?t (MIN(?a) AS ?youngest) (AVG(?a) AS ?mean) WHERE { ?x ex:type ?t . ?x ex:knows ?y . "
                "?y ex:age ?a FILTER(?a > 20) } GROUP BY ?x ?t",
    "labels": "SELECT ?x (MIN(?l) AS ?first) (COUNT(DISTINCT ?l) AS ?d) WHERE { ?x ex:label ?l "
              "FILTER(datatype(?l) != ex:code) } GROUP BY ?x",
    "names": 'SELECT ?x (GROUP_CONCAT(?n; SEPARATOR=", ") AS ?all) (SAMPLE(?n) AS ?one) '
             "WHERE { ?x ex:name ?n } GROUP BY ?x",
    "rare": 'SELECT (COUNT(*) AS ?n) (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) '
            '(SAMPLE(?v) AS ?one) (GROUP_CONCAT(?v; SEPARATOR="/") AS ?all) WHERE { ?x ex:rare ?v }',
    "whole": "SELECT (COUNT(?x) AS ?n) (SUM(?a) AS ?sum) (AVG(?a) AS ?avg) (MAX(?a) AS ?hi) "
             "WHERE { ?x ex:age ?a . ?x ex:type ex:Person }",
    # expressions: on aggregate results, as GROUP BY keys (an error makes a key unbound), in HAVING
    "ratio": "SELECT ?x (SUM(?v) / COUNT(?v) AS ?r) (MAX(?v) - MIN(?v) AS ?range) (COUNT(?v) * 2 AS ?d) "
             "(-SUM(?v) AS ?neg) WHERE { ?x ex:score ?v } GROUP BY ?x",
    "doubled": "SELECT ?k (COUNT(*) AS ?n) (MIN(?x) AS ?first) WHERE { ?x ex:score ?v } GROUP BY ((?v * 2) AS ?k)",
    "renamed": "SELECT ?who (COUNT(?y) + 0.5 AS ?n) WHERE { ?x ex:likes ?y } GROUP BY (?x AS ?who)",
    "by_string": "SELECT ?k (COUNT(?y) AS ?n) (STR(MAX(?y)) AS ?last) WHERE { ?x ex:knows ?y } "
                 "GROUP BY (STR(?x) AS ?k) (?x)",
    "by_lang": "SELECT (COUNT(*) AS ?n) (SAMPLE(?l) AS ?one) WHERE { ?x ex:name ?l } GROUP BY (LANG(?l))",
    "mean_over": "SELECT ?x (AVG(?a) AS ?m) WHERE { ?x ex:knows ?y . ?y ex:age ?a } GROUP BY ?x "
                 "HAVING (SUM(?a) / COUNT(?a) > 24 && MAX(?a) - MIN(?a) >= 0)",
    "distinct_counts": "SELECT DISTINCT (COUNT(?y) AS ?n) WHERE { ?x ex:knows ?y } GROUP BY ?x",
    "rare_sums": "SELECT (COUNT(*) * 10 AS ?c) (SUM(?v) + 1 AS ?s) (COUNT(?v) / COUNT(*) AS ?q) "
                 "WHERE { ?x ex:rare ?v }",
    # linear without GROUP BY (so is rare_sums): kept as running sums, never re-reading the bag
    "linear": "SELECT (COUNT(*) AS ?n) (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (COUNT(?v) AS ?c) "
              "WHERE { ?x ex:score ?v . ?x ex:type ?t }",
}
#: What pyoxigraph is asked instead, where its parser refuses valid SPARQL: it does not bind the
#: variable of ``GROUP BY (?x AS ?who)`` (a key renaming a variable: semi-joined on ``?x``).
ORACLE_TEXT = {"renamed": "SELECT (?x AS ?who) (COUNT(?y) + 0.5 AS ?n) WHERE { ?x ex:likes ?y } GROUP BY ?x"}
LATE = {"distinct", "counts_only", "doubled"}         # registered after data exists: backfill
# the Spark engine runs a representative few
SPARK_QUERIES = ("scores", "having", "rare", "distinct", "ratio", "distinct_counts", "linear")


def cases(wanted: Callable[[str], bool] = lambda name: True) -> list:
    """(replay, query) parameter sets: every query on Arrow, plain and with its tables MERGEd by
    deletion vectors, and the representative few on Spark, in executor tasks and on the SQL plan."""
    return [("arrow", name) for name in sorted(QUERIES) if wanted(name)] \
        + [on_spark(spark, name) for spark in ("spark", "spark_plan") for name in SPARK_QUERIES if wanted(name)] \
        + [("arrow_vectors", name) for name in sorted(QUERIES) if wanted(name)]


CASES = cases()
CONCATENATED = {"names": ("all", ", "), "rare": ("all", "/")}
SAMPLED = {"names": ("one", "n", "name"), "rare": ("one", "v", "rare"), "by_lang": ("one", "l", "name")}

SCORES = [f'"{v}"^^<{XSD}{t}>' for v, t in [("3", "integer"), ("-2", "integer"), ("2.5", "decimal"), ("0.25", "decimal"),
                                           ("1.5", "float"), ("4.0E0", "double"), ("7", "integer")]]
SCORES += [f'"true"^^<{XSD}boolean>', '"x"', '"zeta"']
RARE = [(iri("a"), iri("rare"), '"ab"'), (iri("b"), iri("rare"), '"cd"'), (iri("c"), iri("rare"), '"zz"@en')]


def _pool() -> list[tuple[str, str, str]]:
    return candidate_triples() + [(s, iri("score"), v) for s in ENTITIES for v in SCORES]


def _script(stream: Stream, batch: int) -> list[tuple[str, tuple]]:
    """The scripted messages of a batch, read off the graph as it stands before them."""
    graph = stream.graph
    scores = lambda s: sorted((t for t in graph if t[0] == s and t[1] == iri("score")), key=lambda t: t[2])  # noqa: E731
    if batch == 1:
        return [("+", t) for t in RARE]
    if batch == 2:      # delete the current minimum (by value) of the numeric scores of b
        numeric = [t for t in scores(iri("b")) if number(t[2]) is not None]
        return [("-", min(numeric, key=lambda t: number(t[2]).value))] if numeric else []
    if batch == 3:      # empty a's group, and the rare pattern
        return [("-", t) for t in scores(iri("a"))] + [("-", t) for t in RARE]
    if batch == 4:      # a's group comes back
        return [("+", (iri("a"), iri("score"), SCORES[0])), ("+", (iri("a"), iri("score"), SCORES[4]))]
    return []


def plan_of(name: str):
    return compile_query(parse_query(PREFIXES + QUERIES[name], name), name)


def _replay(engine: str, names: tuple[str, ...], root, spark):
    """Six batches on one engine, each query's answers recorded after each."""
    store = open_store(str(root / "lake"), spark, backend="delta-rs")
    stream = Stream(seed=5, batch_size=40)
    stream.pool = _pool()
    plans = {name: plan_of(name) for name in names}
    return store, plans, replay_stream(store, spark, engine, plans, LATE, stream, 6, _script, root / "landing")


@pytest.fixture(scope="module")
def arrow_replay(tmp_path_factory, no_spark):
    return _replay("arrow", tuple(QUERIES), tmp_path_factory.mktemp("aggregates"), no_spark)


@pytest.fixture(scope="module")
def spark_replay(tmp_path_factory, spark):
    return _replay("spark", SPARK_QUERIES, tmp_path_factory.mktemp("aggregates"), spark)


@pytest.fixture(scope="module")
def spark_plan_replay(tmp_path_factory, spark):
    return _replay(SPARK_PLAN, SPARK_QUERIES, tmp_path_factory.mktemp("aggregates"), spark)


@pytest.fixture(scope="module")
def arrow_vectors_replay(tmp_path_factory, no_spark):
    """The Arrow engine with every bag and gold table MERGEd by deletion vectors, as a table past
    ``REWRITE_MAX_ROWS`` is: a batch reads its touched groups' rows by key from what the store
    holds of each bag, not from the bag's files."""
    root = tmp_path_factory.mktemp("aggregates")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(held_bags, "REWRITE_MAX_ROWS", -1)
        patch.setattr(delta_rs, "VECTOR_MERGE_ROWS", 0)
        replayed = _replay("arrow", tuple(QUERIES), root, no_spark)
    assert list(root.glob("lake/pe_*_bag/deletion_vector_*.bin"))      # the path was taken
    return replayed


def _comparable(name: str, bag: Counter, projection: tuple[str, ...]) -> Counter:
    """Answers with numbers as values, GROUP_CONCAT as the bag of its parts and SAMPLE as whether
    it is bound (its value is checked on its own)."""
    out: Counter = Counter()
    for row, mult in bag.items():
        values = dict(zip(projection, row))
        if name in CONCATENATED:
            column, sep = CONCATENATED[name]
            term = values[column]
            if term is not None:
                lexical, lang, _ = split_literal(term)
                values[column] = (tuple(sorted(lexical.split(sep))) if lexical else (), lang)
        if name in SAMPLED:
            values[SAMPLED[name][0]] = values[SAMPLED[name][0]] is not None
        out[tuple(term_value(v) if not isinstance(v, (tuple, bool)) else v for v in values.values())] += mult
    return out


@pytest.mark.parametrize("replay,name", CASES, indirect=["replay"])
def test_answers_equal_oracle_after_every_batch(replay, name):
    _, plans, history = replay
    projection = plans[name].projection
    check_every_batch(history, name, PREFIXES + ORACLE_TEXT.get(name, QUERIES[name]), projection,
                      lambda bag: _comparable(name, bag, projection))
    assert any(gold.get(name) for _, _, gold in history), f"{name}: the stream never produced an answer"


@pytest.mark.parametrize("replay,name", cases(lambda name: name in SAMPLED), indirect=["replay"])
def test_sample_is_a_value_of_its_group(replay, name):
    _, plans, history = replay
    column, arg, predicate = SAMPLED[name]
    for batch, graph, gold in history:
        for row in gold.get(name, ()):
            values = dict(zip(plans[name].projection, row))
            group = {o for s, p, o in graph if p == iri(predicate) and (s == values.get("x") or "x" not in values)}
            assert (values[column] in group) if group else values[column] is None, f"{name} after batch {batch}"


@pytest.mark.parametrize("replay,name", CASES, indirect=["replay"])
def test_time_travel_and_changes_sum(replay, name):
    store, plans, history = replay
    plan = plans[name]
    changes = A.changes(store, name)
    registered = A.catalog.lookup(store, name).registered_batch
    for batch, _, gold in history:
        if batch < registered or name not in gold:
            continue
        assert table_bag(A.answers(store, name, batch=batch), plan.projection) == gold[name], \
            f"{name}: time travel to batch {batch}"
        assert changes_bag(changes, plan.projection, batch) == gold[name], f"{name}: changes up to {batch}"


@pytest.mark.parametrize("replay", ["arrow"], indirect=True)
def test_the_stream_exercised_what_it_should(replay):
    """The scripted moments happened: the ungrouped query answered over no solution and over some,
    a's scores emptied and came back, and some group's SUM was unbound (a non-numeric value); the
    expressions met errors (an unbound key, an unbound difference) and divisions giving decimals."""
    _, plans, history = replay
    rare = [next(iter(gold["rare"])) for _, _, gold in history]
    zero = f'"0"^^<{XSD}integer>'
    assert (zero, zero, zero, None, None, None, '""') in rare
    assert any(row[0] != zero for row in rare)
    scored = [{row[0] for row in gold["scores"]} for _, _, gold in history]
    assert iri("a") not in scored[3] and iri("a") in scored[4]
    assert any(row[1] is None for _, _, gold in history for row in gold["scores"])
    assert any(Decimal(split_literal(row[2])[0]) != int(Decimal(split_literal(row[2])[0]))
               for _, _, gold in history for row in gold["scores"] if row[2] and row[2].endswith("decimal>"))
    assert any(row[0] is None for _, _, gold in history for row in gold.get("doubled", ()))
    ratios = [row for _, _, gold in history for row in gold["ratio"]]
    assert any(row[2] is None for row in ratios) and any(row[2] is not None for row in ratios)
    assert any(row[1] and row[1].endswith("decimal>") for row in ratios)
    sums = {row[1] for _, _, gold in history for row in gold["linear"]}
    assert None in sums and len(sums) > 2          # the running SUM went through errors and values
    assert all(plans[name].aggregation.running for name in ("linear", "rare_sums"))
