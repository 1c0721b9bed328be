"""Simple-path semantics (``lakegraph register --paths simple``) against brute force: after every
batch of a random stream of inserts and deletes over a small graph with cycles, each query's answers
equal the pairs joined by a path with no repeated node (the start included) whose labels a regular
expression, written by hand for each query and independent of lakegraph's automata, matches;
networkx enumerates the simple paths."""
from __future__ import annotations

import random
import re
from collections import Counter

import networkx as nx
import pytest

from pipelines import answers as A
from pipelines import cli
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.ingest import ingest_paths
from pipelines.storage import open_store
from views.errors import UnsupportedQuery
from views.plan import compile_query
from views.sparql import parse_query

from .oracle import table_bag
from .streams import PREFIXES, Stream, iri

NODES = [iri(f"n{i}") for i in range(6)]
#: query -> (text, regex over the labels of a path: a/b forwards, A/B backwards, nullable or not)
QUERIES = {
    "plus": ("SELECT * WHERE { ?x ex:a+ ?y }", r"a+"),
    "star": ("SELECT * WHERE { ?x (ex:a|ex:b)* ?y }", r"[ab]*"),
    "pairs": ("SELECT * WHERE { ex:n0 (ex:a/ex:b)+ ?y }", r"(ab)+"),
    "two_way": ("SELECT * WHERE { ?x (ex:a|^ex:b)+ ?y }", r"[aB]+"),
    "loops": ("SELECT * WHERE { ?x ex:a* ?x }", r"a*"),
}


def _brute_force(graph: set, pattern: str, text: str) -> Counter:
    """The answers as a bag, by enumerating simple paths."""
    g = nx.MultiDiGraph()
    nodes = {t for s, _, o in graph for t in (s, o)}
    g.add_nodes_from(nodes)
    for s, p, o in graph:
        label = p[len(iri("")) - 1:-1]
        g.add_edge(s, o, key=label)
        g.add_edge(o, s, key=label.upper())
    regex = re.compile(pattern)
    pairs = set()
    for x in g.nodes:
        for y in g.nodes:
            if x == y:
                if regex.fullmatch(""):
                    pairs.add((x, x))
                continue
            if any(regex.fullmatch("".join(k for _, _, k in path)) for path in nx.all_simple_edge_paths(g, x, y)):
                pairs.add((x, y))
    if "ex:n0" in text:
        return Counter((y,) for x, y in pairs if x == NODES[0])
    if "?x ex:a* ?x" in text:
        return Counter((x,) for x, y in pairs if x == y)
    return Counter(pairs)


def test_simple_paths_equal_brute_force_after_every_batch(spark, tmp_path):
    store = open_store(str(tmp_path / "lake"), spark, backend="delta-rs")
    plans = {name: compile_query(parse_query(PREFIXES + text, name), name, paths="simple")
             for name, (text, _) in QUERIES.items()}
    for plan in plans.values():
        register(store, spark, plan)
    stream = Stream(seed=3, batch_size=12)
    stream.pool = [(s, iri(p), o) for s in NODES for o in NODES for p in "ab"]
    stream.rng = random.Random(3)
    differs = 0
    for i in range(6):
        ingest_paths(store, [str(Stream.write(tmp_path / f"b{i}.jsonl", stream.next_batch()))])
        Runner(store, spark).run()
        for name, (text, pattern) in QUERIES.items():
            got = table_bag(A.answers(store, name), plans[name].projection)
            assert got == _brute_force(stream.graph, pattern, text), f"{name} after batch {i}"
        walks = Counter(tuple(str(r[v]) for v in ("x", "y")) for r in _walk_answers(stream.graph))
        differs += walks != table_bag(A.answers(store, "plus"), ("x", "y"))
    assert differs, "simple paths never differed from walks: the stream does not test them"


def _walk_answers(graph: set):
    """``?x ex:a+ ?y`` with SPARQL's walks, by pyoxigraph."""
    from .oracle import oxigraph_store
    return oxigraph_store(graph).query(PREFIXES + "SELECT * WHERE { ?x ex:a+ ?y }")


def test_simple_paths_need_a_path_view(tmp_path):
    with pytest.raises(UnsupportedQuery, match="simple paths apply to property paths"):
        compile_query(parse_query("SELECT * { ?x <p:a>/<p:b> ?y }"), "q", paths="simple")


def test_register_paths_simple_through_the_cli(tmp_path, spark, capsys):  # noqa: ARG001 - shared session
    lake = str(tmp_path / "lake")
    query = tmp_path / "q.rq"
    query.write_text("SELECT * WHERE { ?x <http://e/a>+ ?y }", encoding="utf-8")
    assert cli.main(["--lake", lake, "init"]) == 0
    assert cli.main(["--lake", lake, "register", str(query), "--paths", "simple"]) == 0
    assert cli.main(["--lake", lake, "explain", "q"]) == 0
    assert "simple paths: a pair needs a path with no repeated node" in capsys.readouterr().out
