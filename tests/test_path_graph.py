"""The edge views a run keeps coded for the path walks (pipelines/engine/path_graph.py): a coded
view finds the same edges as its rows do through every batch's change, and a step's loads from it
give the same moves as the loads through the string indexes. In process, no Spark."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipelines.engine.lookup import finder
from pipelines.engine.path_edges import EdgeIndexes, Edges, Terms, coded_members, members, triples
from pipelines.engine.path_graph import CodedGraph, CodedView
from schemas.tables import MULT
from views.automata import BACKWARD, FORWARD
from views.path_views import ALL

PREDICATES = ["<p>", "<q>", "<r>"]


def _view(edges: set[tuple], every: bool, sign: int = 1) -> pa.Table:
    """A predicate's view (v0, v1) or the view of every triple (v0, v1, v2) of ``edges``, each row
    of multiplicity ``sign``."""
    rows = sorted(edges)
    ends = {"v0": [e[0] for e in rows], "v1": [e[1] for e in rows], "v2": [e[2] for e in rows]} if every else \
        {"v0": [e[0] for e in rows], "v1": [e[2] for e in rows]}
    columns = {c: pa.array(values, pa.string()) for c, values in ends.items()}
    return pa.table({**columns, MULT: pa.array([sign] * len(rows), pa.int64())})


def _change(added: set[tuple], removed: set[tuple], every: bool) -> pa.Table:
    return pa.concat_tables([_view(added, every), _view(removed, every, -1)])


def _random_edge(rng: random.Random, every: bool) -> tuple:
    return (f"<v{rng.randrange(30)}>", rng.choice(PREDICATES) if every else "<p>", f"<v{rng.randrange(30)}>")


@pytest.mark.parametrize("every", [False, True])
def test_a_coded_view_finds_what_its_rows_hold_through_every_change(every):
    """Inserts, deletes and re-inserts over 40 batches, so that the view is indexed afresh and its
    dead edges dropped along the way: after each, the edges found by subject and by object of
    random vertices are exactly those of the view's rows."""
    rng = random.Random(7)
    terms = Terms()
    edges = {_random_edge(rng, every) for _ in range(60)}
    coded = CodedView(terms, ALL if every else "<p>", _view(edges, every), 0)
    for version in range(1, 41):
        removed = set(rng.sample(sorted(edges), min(len(edges), rng.randrange(8))))
        added = {_random_edge(rng, every) for _ in range(rng.randrange(10))} - (edges - removed)
        added -= removed            # a change is consolidated: an edge both ways is no change
        coded = coded.advanced(_change(added, removed, every), version)
        edges = (edges - removed) | added
        wanted = sorted({f"<v{rng.randrange(32)}>" for _ in range(6)})
        codes = terms.encode(wanted)
        for by_subject, end in ((True, 0), (False, 2)):
            which, found = coded.around(codes, by_subject)
            names = terms.decode(np.concatenate([coded.s[found], coded.o[found]])).to_pylist()
            got = sorted(zip(names[:len(found)],
                             terms.decode(coded.p[found]).to_pylist() if every else ["<p>"] * len(found),
                             names[len(found):]))
            assert got == sorted(e for e in edges if e[end] in wanted), (version, by_subject)
            assert [wanted[i] for i in which] == [(s if by_subject else o) for s, _, o in
                                                  zip(names[:len(found)], found, names[len(found):])]


def test_a_step_numbers_the_runs_numbers_it_adopts_as_their_strings():
    """A step's numbering beside the run's: strings it encodes keep the run's number of theirs,
    the run's numbers it adopts are numbered in the order first met and decode to their strings,
    and a string encoded after its number was adopted (or before) gets the same number."""
    run = Terms()
    run.encode([f"<v{i}>" for i in range(20)])
    run.settle()
    step = Terms(run)
    first = step.encode(["<v5>", "<w>", "<v3>"])
    assert step.graph_codes(first).tolist() == [5, -1, 3]
    adopted = step.adopt(np.array([7, 5, 7, 9, 3], np.int64))
    assert adopted.tolist() == [3, 0, 3, 4, 2]
    assert step.decode(adopted).to_pylist() == ["<v7>", "<v5>", "<v7>", "<v9>", "<v3>"]
    assert step.encode(["<v9>", "<v7>", "<v11>"]).tolist() == [4, 3, 5]
    assert step.graph_codes(np.arange(len(step))).tolist() == [5, -1, 3, 7, 9, 11]


@pytest.mark.parametrize("every", [False, True])
def test_a_steps_loads_from_coded_views_give_the_moves_of_its_rows(every):
    """The same step (edges inserted and deleted, some of them at the vertices loaded) loads the
    same moves, out of and into the vertices, from the run's coded views as through the views'
    string indexes, both directions of the automaton's symbols."""
    rng = random.Random(11)
    for trial in range(30):
        edges = {_random_edge(rng, every) for _ in range(80)}
        view = _view(edges, every)
        predicate = ALL if every else "<p>"
        deleted = set(rng.sample(sorted(edges), 6))
        inserted = {_random_edge(rng, every) for _ in range(6)} - edges
        change = _change(inserted, deleted, every)
        read = lambda name: view      # noqa: E731
        graph = CodedGraph(lambda name, version: view)
        coded = graph.at(0, {"e"})
        symbols = [("<p>", FORWARD), ("<q>", BACKWARD)] if every else [("<p>", FORWARD), ("<p>", BACKWARD)]
        symbol = (lambda p: p if p in ("<p>", "<q>") else None)
        moves = {}
        for name, source in (("strings", None), ("coded", coded)):
            indexes = EdgeIndexes(read, finder(read), source)
            views = [indexes.get(predicate, "e", False)]
            terms = indexes.terms(views)
            plus, minus = (triples(predicate, rows, False) for rows in
                           (change.filter(pc.greater(change[MULT], 0)), change.filter(pc.less(change[MULT], 0))))
            step = Edges(views, plus, minus, symbol, symbols, terms)
            assert step.coded == (source is not None)
            pick = random.Random(trial)          # the same vertices for both
            vertices = terms.encode(sorted({f"<v{pick.randrange(30)}>" for _ in range(8)}))
            step.load(vertices)
            which, sym, dst, _ = step.out.gather(vertices)
            out = sorted(zip(terms.decode(vertices[which]).to_pylist(), sym.tolist(), terms.decode(dst).to_pylist()))
            entered, source_of = step.enter(vertices[:4])
            into = sorted(zip(terms.decode(entered).to_pylist(), terms.decode(source_of).to_pylist()))
            moves[name] = (out, into)
        assert moves["coded"] == moves["strings"], trial


def test_the_membership_of_nodes_from_the_coded_view_of_every_triple_is_the_rows_one():
    """Whether each node a change of the view of every triple touches was and is in the graph
    (a zero-length match pairs every node with itself): counted from the run's coded view, and
    from the view's rows through its string index, alike."""
    rng = random.Random(5)
    for trial in range(30):
        edges = {_random_edge(rng, True) for _ in range(rng.randrange(1, 40))}
        removed = set(rng.sample(sorted(edges), rng.randrange(min(len(edges), 8) + 1)))
        added = {_random_edge(rng, True) for _ in range(rng.randrange(6))} - edges
        view, change = _view(edges, True), _change(added, removed, True)
        if not change.num_rows:
            continue
        coded = CodedGraph(lambda name, version: view).at(0, {"all"})
        coded.number("all", ALL, change)
        got = coded_members(coded.view("all", ALL), change, coded.change("all"))
        want = members(finder(lambda name: view), "all", change, ("v0", "v2"), set())
        assert sorted(zip(got.touched.to_pylist(), got.was, got.now)) == \
            sorted(zip(want.touched.to_pylist(), want.was, want.now)), trial
