"""Property paths in the query model: the spec's translation, the automata, and the path views' plan."""
from __future__ import annotations

from dataclasses import asdict

import pytest

from views.automata import BACKWARD, FORWARD, OTHER, compile_path
from views.model import Compare, Const, TriplePattern, Var
from views.path_views import PathDef
from views.paths import Alt, Link, Negated, PathPattern, Repeat, Seq, inverse, path_text
from views.plan import QueryPlan, compile_query, explain
from views.sparql import parse_query

A, B, C = "<p:a>", "<p:b>", "<p:c>"


def patterns(where: str):
    query = parse_query(f"SELECT * {{ {where} }}")
    return query.patterns, query.filters, query.projection


def test_sequence_is_a_join_through_fresh_variables_that_select_star_hides() -> None:
    found, filters, projection = patterns("?x <p:a>/^<p:b>/<p:c> ?y")
    assert found == (TriplePattern(Var("x"), A, Var("_p0")), TriplePattern(Var("_p1"), B, Var("_p0")),
                     TriplePattern(Var("_p1"), C, Var("y")))
    assert filters == () and projection == ("x", "y")


def test_inverse_is_pushed_down_to_the_links() -> None:
    found, _, _ = patterns("?x ^(<p:a>/<p:b>) ?y")
    assert found == (TriplePattern(Var("_p0"), B, Var("x")), TriplePattern(Var("y"), A, Var("_p0")))
    assert inverse(Repeat(Alt((Link(A), Seq((Link(B), Link(C))))), 0, None)) == \
        Repeat(Alt((Link(A, True), Seq((Link(C, True), Link(B, True))))), 0, None)


def test_negated_set_of_one_direction_is_a_triple_pattern_with_a_filter() -> None:
    found, filters, _ = patterns("?x !(<p:a>|<p:b>) ?y . ?y !^<p:c> ?z")
    assert found == (TriplePattern(Var("x"), Var("_p0"), Var("y")), TriplePattern(Var("z"), Var("_p1"), Var("y")))
    assert filters == (Compare("!=", Var("_p0"), Const(A)), Compare("!=", Var("_p0"), Const(B)),
                       Compare("!=", Var("_p1"), Const(C)))


def test_recursive_alternative_and_mixed_negated_forms_are_path_patterns() -> None:
    found, _, _ = patterns("?x <p:a>* ?y . ?y <p:a>|<p:b> ?z . ?z !(<p:a>|^<p:b>) ?w . ?w (<p:a>/<p:b>)? ?v")
    assert [type(p) for p in found] == [PathPattern] * 4
    assert [path_text(p.path) for p in found] == [
        "(<p:a>)*", "(<p:a>|<p:b>)", "!(<p:a>|^<p:b>)", "((<p:a>/<p:b>))?"]
    assert found[2].path == Negated((A,), (B,))      # rdflib drops ^b here; the parser keeps it


@pytest.mark.parametrize("path,states,finals,moves", [
    (Repeat(Link(A), 0, None), 1, (0,), {(0, (A, FORWARD), 0)}),
    (Seq((Link(A), Repeat(Link(B), 0, None), Link(C))), 3, (2,),
     {(0, (A, FORWARD), 1), (1, (B, FORWARD), 1), (1, (C, FORWARD), 2)}),
    (Repeat(Repeat(Link(A), 0, None), 0, None), 1, (0,), {(0, (A, FORWARD), 0)}),      # ((a)*)* is a*
    (Repeat(Alt((Link(A), Link(B, True))), 1, None), 2, (1,),
     {(0, (A, FORWARD), 1), (0, (B, BACKWARD), 1), (1, (A, FORWARD), 1), (1, (B, BACKWARD), 1)}),
    (Seq((Repeat(Link(A), 0, 1), Repeat(Link(B), 0, None))), 2, (0, 1),
     {(0, (A, FORWARD), 1), (0, (B, FORWARD), 1), (1, (B, FORWARD), 1)}),
    (Negated((A,), (B,)), 2, (1,),
     {(0, (OTHER, FORWARD), 1), (0, (OTHER, BACKWARD), 1), (0, (B, FORWARD), 1), (0, (A, BACKWARD), 1)}),
])
def test_minimal_automata(path, states, finals, moves) -> None:
    automaton = compile_path(path)
    assert (automaton.states, automaton.finals, set(automaton.moves)) == (states, finals, moves)


def test_a_path_view_walks_from_its_constant_end_and_survives_json() -> None:
    plan = compile_query(parse_query("SELECT ?x { ?x (<p:a>/<p:b>*)+ <p:k> . ?x <p:c> ?y }"), "q")
    path = plan.paths[0]
    assert path.root == "<p:k>" and path.canonical.startswith("<p:k> ") and path.columns == ("v0",)
    assert {p for p, _ in path.edges} == {A, B}
    assert path.nodes is None           # a constant root is its own zero-length answer: no nodes(G)
    assert QueryPlan.from_json(plan.to_json()) == plan
    text = explain(plan)
    assert "roots: the constant <p:k>" in text and "s0 (start)" in text and f"{path.id}_reach" in text


def test_both_ends_variables_need_every_node_when_the_path_may_be_empty() -> None:
    plan = compile_query(parse_query("SELECT * { ?x <p:a>* ?y }"), "q")
    path = plan.paths[0]
    assert path.root is None and path.nodes is not None and path.nodes in {v.id for v in plan.views}
    assert "square of the graph's nodes" in explain(plan)
    same = compile_query(parse_query("SELECT * { ?x <p:a>+ ?x }"), "q").paths[0]
    assert same.same and same.columns == ("v0",) and same.nodes is None


def test_an_end_another_pattern_binds_seeds_the_roots() -> None:
    plan = compile_query(parse_query("SELECT * { ?x <p:a> ?m . ?y <p:b>* ?m }"), "q")
    path = plan.paths[0]
    view = next(v for v in plan.views if v.p == A)
    # ?m is the object of ?y b* ?m: the path is walked backwards from ?m, the object column of a's view
    assert path.seed == (view.id, "v1") and path.canonical.startswith("?v0 (^<p:b>)* ?v1 ROOTS")
    assert path.nodes is None                  # a seed is in the graph: no view of every triple
    assert "another pattern binds this end" in explain(plan)


@pytest.mark.parametrize("kept", ["SELECT * { ?u <p:b>* ?v }", "SELECT * { ?u ^<p:b>* ?v }"])
def test_a_bound_end_shares_the_path_the_lake_keeps_from_every_node(kept) -> None:
    """A path view the lake keeps from every node (for another query, in either direction) is
    shared rather than walked again from the seeds; one kept only from seeds, a simple-path one or
    a windowed query's own is not."""
    text = "SELECT * { ?x <p:a> ?m . ?m <p:b>* ?y }"
    other = compile_query(parse_query(kept), "other").paths[0]
    shared = compile_query(parse_query(text), "q", shared_paths={other.id})
    assert shared.paths == (other,) and other.seed is None
    assert "every node with a first move" in explain(shared)
    seeded = compile_query(parse_query(text), "q").paths[0]
    assert seeded.seed is not None
    assert compile_query(parse_query(text), "r", shared_paths={seeded.id}).paths == (seeded,)
    assert compile_query(parse_query(text), "q", paths="simple", shared_paths={other.id}).paths[0].seed is not None
    windowed = ("SELECT * FROM STREAM <s:x> [RANGE 10s STEP 5s] WHERE { ?x <p:a> ?m . ?m <p:b>* ?y }")
    assert compile_query(parse_query(windowed), "w", shared_paths={other.id}).paths[0].seed is not None


def test_a_star_walks_its_plus() -> None:
    """``p*`` walks the automaton of ``p+`` and adds the zero-length pairs, so a star and its plus
    from the same roots keep one reach table; a plan made before (no walk) keeps its own."""
    star = compile_query(parse_query("SELECT * { ?x (<p:a>|<p:b>)* ?y }"), "q").paths[0]
    plus = compile_query(parse_query("SELECT * { ?x (<p:a>|<p:b>)+ ?y }"), "q").paths[0]
    assert star.walk == plus.id and star.reach == plus.reach and star.id != plus.id
    assert star.automaton == plus.automaton and star.nullable and not plus.nullable and star.nodes
    assert "walk: that of the path's plus" in explain(compile_query(parse_query("SELECT * { ?x <p:a>* ?y }"), "q"))
    earlier = {k: v for k, v in asdict(star).items() if k != "walk"}     # a plan's JSON before stars walked
    earlier["automaton"] = asdict(compile_path(Repeat(Alt((Link(A), Link(B))), 0, None)))
    before = PathDef.from_dict(earlier)
    assert before.walk is None and before.reach == f"{before.id}_reach" and before.nullable
    simple = compile_query(parse_query("SELECT * { ?x <p:a>* ?y }"), "q", paths="simple").paths[0]
    assert simple.walk is None and simple.automaton.nullable
