"""The W3C SPARQL tests (dawg-data-r2 `basic` and `triple-match`, SPARQL 1.1 `aggregates`), as
shipped inside rdflib's source distribution: fetched once into a cache directory, manifests read
with rdflib."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pyoxigraph as ox
import rdflib
from rdflib.namespace import RDF

RDFLIB_SDIST = "rdflib==7.6.0"
SUITES = ("basic", "triple-match")
#: The folder of the sdist's W3C tests each suite is in.
FOLDER = {"basic": "dawg-data-r2", "triple-match": "dawg-data-r2", "aggregates": "sparql11"}
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
            for solution in ox.parse_query_results(handle, format=ox.QueryResultsFormat.XML):
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
