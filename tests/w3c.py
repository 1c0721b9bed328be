"""The W3C SPARQL tests (dawg-data-r2 `basic` and `triple-match`, SPARQL 1.1 `aggregates`), as
shipped inside rdflib's source distribution: fetched once into a cache directory, manifests read
with rdflib."""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pyoxigraph as ox
import rdflib
import rdflib.collection
from rdflib.namespace import RDF

RDFLIB_SDIST = "rdflib==7.6.0"
SUITES = ("basic", "triple-match")
#: The folder of the sdist's W3C tests each suite is in.
FOLDER = {"basic": "dawg-data-r2", "triple-match": "dawg-data-r2", "aggregates": "sparql11",
          "property-path": "sparql11"}
CACHE = Path(__file__).resolve().parent.parent / ".cache" / "w3c"

MF = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")
RS = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/result-set#")


@dataclass(frozen=True)
class EvaluationTest:
    suite: str
    name: str
    query: Path
    data: tuple[Path, ...]
    result: Path


def suite_dir(suites: tuple[str, ...] = SUITES) -> Path:
    """The folder (dawg-data-r2 or sparql11) of ``suites``, downloading rdflib's sdist (from the
    configured package index) once."""
    folder = FOLDER[suites[0]]
    target = CACHE / folder
    if all((target / s / "manifest.ttl").exists() for s in suites):
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    if not any(CACHE.glob("rdflib-*.tar.gz")):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        RDFLIB_SDIST, "-d", str(CACHE)], check=True, capture_output=True)
    archive = next(CACHE.glob("rdflib-*.tar.gz"))
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if folder in parts:
                rest = parts[parts.index(folder) + 1:]
                if rest and rest[0] in suites and member.isfile():
                    out = target.joinpath(*rest)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(tar.extractfile(member).read())
    return target


def evaluation_tests(suites: tuple[str, ...] = SUITES) -> list[EvaluationTest]:
    tests = []
    root = suite_dir(suites)
    for suite in suites:
        graph, local = _manifest(root, suite)
        for test in graph.subjects(RDF.type, MF.QueryEvaluationTest):
            action = graph.value(test, MF.action)
            tests.append(EvaluationTest(
                suite=suite, name=str(graph.value(test, MF.name)),
                query=local(graph.value(action, QT.query)),
                data=tuple(sorted(local(d) for d in graph.objects(action, QT.data))),
                result=local(graph.value(test, MF.result))))
    return sorted(tests, key=lambda t: (t.suite, t.name))


def active(tests: list[EvaluationTest]) -> list[EvaluationTest]:
    """The tests a suite's manifest lists in ``mf:entries`` (the others are withdrawn, e.g. the
    property-path tests of the ``{n,m}`` syntax SPARQL 1.1 dropped)."""
    listed = set()
    for suite in {t.suite for t in tests}:
        graph, _ = _manifest(suite_dir((suite,)), suite)
        entries = rdflib.collection.Collection(graph, next(graph.objects(None, MF.entries)))
        listed |= {(suite, str(graph.value(e, MF.name))) for e in entries}
    return [t for t in tests if (t.suite, t.name) in listed]


def without_order_by(text: str) -> str:
    """A query text without its ORDER BY clause (lakegraph keeps answers as a bag, with no order)."""
    return re.sub(r"\bORDER\s+BY\b.*", "", text, flags=re.S | re.I)


def random_batches(triples: list, rng: random.Random) -> list[list]:
    """``triples`` shuffled and cut into one to three batches."""
    shuffled = rng.sample(triples, len(triples))
    cuts = sorted(rng.sample(range(1, len(shuffled)), min(2, len(shuffled) - 1))) if len(shuffled) > 1 else []
    return [shuffled[a:b] for a, b in zip([0, *cuts], [*cuts, len(shuffled)])]


def negative_syntax_tests(suite: str) -> dict[str, Path]:
    """The SPARQL 1.1 negative syntax tests of a suite: name to query file."""
    graph, local = _manifest(suite_dir((suite,)), suite)
    return {str(graph.value(test, MF.name)): local(graph.value(test, MF.action))
            for test in graph.subjects(RDF.type, MF.NegativeSyntaxTest11)}


def _manifest(root: Path, suite: str) -> tuple[rdflib.Graph, Callable[[Any], Path]]:
    """A suite's manifest, and how to find a file it names."""
    manifest = root / suite / "manifest.ttl"
    graph = rdflib.Graph().parse(manifest, format="turtle", publicID=manifest.as_uri())
    return graph, lambda uri: root / suite / Path(str(uri)).name


def _blank_free(term: str | None) -> str | None:
    """Blank nodes compare by position only (labels differ between systems)."""
    return "_:b" if term is not None and term.startswith("_:") else term


def expected_bag(test: EvaluationTest, variables: tuple[str, ...]) -> Counter:
    """The expected solutions from a .srx file or an RDF result set (.ttl)."""
    bag: Counter = Counter()
    if test.result.suffix == ".srx":
        with open(test.result, "rb") as handle:
            results = ox.parse_query_results(handle, format=ox.QueryResultsFormat.XML)
            if isinstance(results, ox.QueryBoolean):        # an ASK: one empty row when true
                return Counter({(): 1}) if bool(results) else bag
            for solution in results:
                bag[tuple(_blank_free(str(solution[v]) if solution[v] is not None else None)
                          for v in variables)] += 1
        return bag
    graph = rdflib.Graph().parse(test.result, format="turtle")
    for solution in graph.objects(None, RS.solution):
        values = {str(graph.value(b, RS.variable)): graph.value(b, RS.value)
                  for b in graph.objects(solution, RS.binding)}
        bag[tuple(_blank_free(values[v].n3()) if v in values else None for v in variables)] += 1
    return bag


def oxigraph_bag(test: EvaluationTest, variables: tuple[str, ...]) -> Counter:
    """pyoxigraph's own answers to the test (a SPARQL 1.1 reading of the query) on its data."""
    store = ox.Store()
    for path in test.data:
        store.load(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=path.as_uri())
    bag: Counter = Counter()
    for solution in store.query(test.query.read_text(), base_iri=test.query.as_uri()):
        bag[tuple(_blank_free(str(solution[v]) if solution[v] is not None else None)
                  for v in variables)] += 1
    return bag


def blank_free_bag(bag: Counter) -> Counter:
    out: Counter = Counter()
    for key, n in bag.items():
        out[tuple(_blank_free(t) for t in key)] += n
    return out


def data_triples(data_files: Iterable[Path]) -> list[tuple[str, str, str]]:
    """A test's data as N-Triples terms. Blank-node labels are renamed by order of appearance, so
    that a delete stream names the same blank nodes as the insert stream (pyoxigraph labels them at
    random on each parse; lakegraph, like RDF Patch, treats a message's label as a stable name)."""
    labels: dict[str, str] = {}

    def term(node: Any) -> str:
        if isinstance(node, ox.BlankNode):
            return "_:" + labels.setdefault(node.value, f"b{len(labels)}")
        return str(node)

    return [(term(q.subject), term(q.predicate), term(q.object)) for path in data_files
            for q in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=path.as_uri())]


def messages(triples: Iterable[tuple[str, str, str]], op: str) -> str:
    """Triples as JSON Lines messages inserting (``+``) or deleting (``-``) them."""
    return "".join(json.dumps({"time": "2026-11-23T09:00:00Z", "op": op, "s": s, "p": p, "o": o}) + "\n"
                   for s, p, o in triples)


#: The subject and predicate of the triple that puts a constant in pyoxigraph's graph (see below).
ANCHOR = ("<urn:lakegraph:test:anchor>", "<urn:lakegraph:test:anchor>")


def replay_inserts_then_deletes(tests: list[EvaluationTest], texts: dict[str, str], spark, tmp_path: Path,
                                comparable: Callable[[Counter], Counter],
                                on_all_data: Callable[[Any, EvaluationTest, Any], None],
                                anchors: dict[str, tuple[str, ...]] | None = None) -> None:
    """Register ``tests`` (sharing one data set; ``texts`` by query stem) in a fresh lake, insert
    their data in random batches, then delete it in random batches: after every batch each query's
    answers equal pyoxigraph's on the graph so far (both made ``comparable``). With all the data
    in (or none, for empty data), ``on_all_data(store, test, plan)`` checks a test's W3C result.

    ``anchors`` (by query stem) lists constant ends of zero-length paths: the spec pairs such a
    constant with itself even when the graph lacks it, pyoxigraph 0.5.13 only when the graph has
    it, so pyoxigraph is asked on the graph plus an ``ANCHOR`` triple whose object is the constant."""
    from pipelines import answers as A
    from pipelines.engine.register import register
    from pipelines.engine.runner import Runner
    from pipelines.ingest import ingest_paths
    from pipelines.storage import open_store
    from views.plan import compile_query
    from views.sparql import parse_query

    from .oracle import oracle_bag, table_bag

    store = open_store(str(tmp_path / "lake"), spark, backend="delta-rs")
    plans = {}
    for i, test in enumerate(tests):
        plans[test.query.stem] = compile_query(parse_query(texts[test.query.stem], test.query.name), f"t{i}")
        register(store, spark, plans[test.query.stem])
    triples = data_triples(tests[0].data)
    rng = random.Random(len(triples))
    graph: set = set()

    def check(after: str) -> None:
        for test in tests:
            plan = plans[test.query.stem]
            got = comparable(table_bag(A.answers(store, plan.name), plan.projection))
            extra = {(*ANCHOR, c) for c in (anchors or {}).get(test.query.stem, ())}
            want = comparable(oracle_bag(texts[test.query.stem], graph | extra, plan.projection))
            assert got == want, f"{test.query.stem} differs from pyoxigraph {after}"

    steps = [("+", b) for b in random_batches(triples, rng)] + [("-", b) for b in random_batches(triples, rng)]
    for i, (op, batch) in enumerate(steps):
        landing = tmp_path / f"b{i}.jsonl"
        landing.write_text(messages(batch, op), encoding="utf-8")
        ingest_paths(store, [str(landing)])
        Runner(store, spark).run()
        graph = graph | set(batch) if op == "+" else graph - set(batch)
        check(f"after batch {i} ({op})")
        if op == "+" and graph == set(triples):
            for test in tests:
                on_all_data(store, test, plans[test.query.stem])
    if not triples:
        check("over no data")
        for test in tests:
            on_all_data(store, test, plans[test.query.stem])
