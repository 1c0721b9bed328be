"""The paper's decompositions and the compiled plan (pure: no Spark)."""
from __future__ import annotations

import pytest

from views.decompose import (cheapest_order, connected_variable_partition, decompose, delta_orders,
                             overlap_edges, query_class, star_decomposition)
from views.model import TriplePattern
from views.plan import QueryPlan, compile_query, explain, validate_name
from views.sparql import parse_query

EX = "PREFIX ex: <http://x/>\n"


def _patterns(body: str) -> tuple[TriplePattern, ...]:
    return parse_query(f"{EX}SELECT * {{ {body} }}").patterns


def _plan(body: str, name: str = "q", head: str = "SELECT *") -> QueryPlan:
    return compile_query(parse_query(f"{EX}{head} {{ {body} }}"), name)


def _prefix_connected(patterns: tuple[TriplePattern, ...], order: tuple[int, ...]) -> bool:
    """Proposition 5: every pattern after the first shares a variable with those before it."""
    bound: set[str] = set()
    for k, i in enumerate(order):
        names = set(patterns[i].variables())
        if k and names and not names & bound:
            return False
        bound |= names
    return True


# The paper's query classes, each with the parts (kind, variables) its decomposition must give.
CLASSES = {
    "ground": ("ex:a ex:p ex:b . ex:b ex:q 'x'", "ground", [("ground", ())]),
    "star": ("?x a ex:Person . ?x ex:name 'Bob' . ex:alice ex:knows ?x", "simple var-centric star",
             [("simple var-centric star", ("x",))]),
    "loosely": ("?x ex:p ex:a . ex:a ex:q ?y . ?y ex:r 1 . ex:b ex:s ex:c . ?z ex:t ex:a . ?x ex:u 'v'",
                "loosely-connected",
                [("ground", ()), ("simple var-centric star", ("x",)), ("simple var-centric star", ("y",)),
                 ("simple var-centric star", ("z",))]),
    "chain": ("?a ex:p ?b . ?b ex:p ?c . ?c ex:p ?d", "var-connected", [("var-connected", ("a", "b", "c", "d"))]),
    "triangle": ("?x ex:knows ?y . ?y ex:knows ?z . ?z ex:knows ?x", "var-connected",
                 [("var-connected", ("x", "y", "z"))]),
    "4-cycle": ("?a ex:p ?b . ?b ex:p ?c . ?c ex:p ?d . ?d ex:p ?a", "var-connected",
                [("var-connected", ("a", "b", "c", "d"))]),
    "snowflake": ("?c ex:p ?a1 . ?c ex:p ?a2 . ?c ex:p ?a3 . ?a1 ex:q ?b1 . ?a1 ex:q ?b2 . ?a2 ex:q ?b3 . "
                  "?a3 ex:r 'leaf' . ?c a ex:Hub", "var-connected",
                  [("var-connected", ("c", "a1", "a2", "a3", "b1", "b2", "b3"))]),
    "non-simple star": ("?x ex:p ?y . ?x ex:q ?z", "var-connected", [("var-connected", ("x", "y", "z"))]),
    "two chains": ("?a ex:p ?b . ?b ex:p ?c . ?x ex:q ?y . ?y ex:q ?z", "general",
                   [("var-connected", ("a", "b", "c")), ("var-connected", ("x", "y", "z"))]),
    "var-connected + ground": ("?a ex:p ?b . ex:s ex:p ex:o", "general",
                               [("ground", ()), ("var-connected", ("a", "b"))]),
    "star + var-connected": ("?a ex:p ?b . ?s a ex:T", "general",
                             [("var-connected", ("a", "b")), ("simple var-centric star", ("s",))]),
    "predicate variable": ("?s ?p ex:o . ?s ex:q 'x'", "var-connected", [("var-connected", ("s", "p"))]),
    "lone predicate variable": ("ex:a ?p ex:b", "var-connected", [("var-connected", ("p",))]),
    "self loop": ("?x ex:p ?x", "var-connected", [("var-connected", ("x",))]),
    "all variables": ("?s ?p ?o . ?o ex:q ?z", "var-connected", [("var-connected", ("s", "p", "o", "z"))]),
}


@pytest.mark.parametrize("name", CLASSES)
def test_decomposition_and_class(name: str) -> None:
    body, klass, parts = CLASSES[name]
    patterns = _patterns(body)
    decomposition = decompose(patterns)
    assert [(p.kind, p.variables) for p in decomposition] == parts
    assert query_class(decomposition) == klass
    # a non-redundant decomposition: every pattern in exactly one part; parts share no variable
    assert sorted(i for p in decomposition for i in p.patterns) == list(range(len(patterns)))
    seen: set[str] = set()
    for part in decomposition:
        assert not seen & set(part.variables)
        seen |= set(part.variables)
        assert set(part.variables) == {v for i in part.patterns for v in patterns[i].variables()}


@pytest.mark.parametrize("name", CLASSES)
def test_delta_orders_satisfy_proposition_5(name: str) -> None:
    patterns = _patterns(CLASSES[name][0])
    for part in decompose(patterns):
        mine = tuple(patterns[i] for i in part.patterns)
        orders = delta_orders(mine)
        assert len(orders) == len(mine)
        for i, order in enumerate(orders):
            assert order[0] == i and sorted(order) == list(range(len(mine)))
            assert _prefix_connected(mine, order)
        assert orders == delta_orders(mine)          # deterministic


def test_connected_variable_partition_of_the_loosely_connected_query() -> None:
    """Lemma 1: in a loosely-connected query every class of the partition is a singleton."""
    patterns = _patterns(CLASSES["loosely"][0])
    assert connected_variable_partition(patterns) == (("x",), ("y",), ("z",))


def test_star_decomposition_replicates_two_variable_triples() -> None:
    patterns = _patterns(CLASSES["chain"][0])
    stars = star_decomposition(patterns)
    assert stars == (("a", (0,)), ("b", (0, 1)), ("c", (1, 2)), ("d", (2,)))
    assert overlap_edges(stars) == ((0, 1), (1, 2), (2, 3))          # a--b, b--c, c--d: connected
    # from the last triple: stars of ?c and ?d first, then breadth-first to ?b
    assert delta_orders(patterns)[2] == (2, 1, 0)


def test_triangle_stars_and_overlap_graph() -> None:
    patterns = _patterns(CLASSES["triangle"][0])
    stars = star_decomposition(patterns)
    assert stars == (("x", (0, 2)), ("y", (0, 1)), ("z", (1, 2)))
    assert overlap_edges(stars) == ((0, 1), (0, 2), (1, 2))
    assert delta_orders(patterns) == ((0, 2, 1), (1, 0, 2), (2, 1, 0))



def test_a_backfill_joins_in_the_order_estimated_to_build_the_fewest_rows() -> None:
    """The bench's 4-cycle at 1M triples (memberOf(s, d), worksFor(p, d), teacherOf(p, c),
    takesCourse(s, c), with their rows and distinct values): its first delta order joins the
    students' courses with their department's professors (7.6M rows); the order taken does not
    join on a department alone. Equal estimates keep the first order."""
    patterns = _patterns("?s <memberOf> ?d . ?p <worksFor> ?d . ?p <teacherOf> ?c . ?s <takesCourse> ?c")
    orders = delta_orders(patterns)
    sizes = [(77298, {"s": 77298, "d": 150}), (5402, {"p": 5402, "d": 150}),
             (16290, {"p": 5402, "c": 16290}), (212815, {"s": 77298, "c": 16203})]
    chosen = cheapest_order(orders, sizes)
    assert chosen in orders and chosen != orders[0]
    joined = set(sizes[chosen[0]][1])
    for j in chosen[1:]:        # every join shares more than the department, or not it at all
        assert set(sizes[j][1]) & joined != {"d"}
        joined |= set(sizes[j][1])
    same = [(10, {"s": 10, "d": 10}), (10, {"p": 10, "d": 10}), (10, {"p": 10, "c": 10}), (10, {"s": 10, "c": 10})]
    assert cheapest_order(orders, same) == orders[0]


# -- the plan ----------------------------------------------------------------------------------------
def test_plan_components_views_and_bindings() -> None:
    plan = _plan("?x ex:knows ?y . ?y ex:knows ?z . ex:a ex:b ex:c . ?w a ex:T", "mixed",
                 "SELECT DISTINCT ?x ?w")
    assert plan.query_class == "general" and plan.distinct and plan.projection == ("x", "w")
    assert [c.kind for c in plan.components] == ["ground", "var-connected", "simple var-centric star"]
    ground, chain, star = plan.components
    assert ground.variables == () and ground.stars == () and ground.delta_orders == ((0,),)
    assert chain.patterns[0].view == chain.patterns[1].view                  # one view, used twice
    assert chain.patterns[0].bind == (("v0", "x"), ("v1", "y"))
    assert chain.patterns[1].bind == (("v0", "y"), ("v1", "z"))
    assert chain.stars == (("x", (0,)), ("y", (0, 1)), ("z", (1,)))
    assert star.stars == (("w", (0,)),)
    assert len(plan.views) == 3 and len({v.id for v in plan.views}) == 3
    knows = next(v for v in plan.views if "knows" in v.canonical)
    assert knows.canonical == "?v0 <http://x/knows> ?v1"
    assert (knows.s, knows.p, knows.o) == (None, "<http://x/knows>", None)
    assert knows.positions == (("s", "v0"), ("o", "v1")) and knows.filter_sql is None
    ground_view = next(v for v in plan.views if v.id == ground.patterns[0].view)
    assert ground_view.columns == () and ground_view.positions == ()


def test_repeated_variable_positions() -> None:
    (view,) = _plan("?x ex:p ?x").views
    assert view.canonical == "?v0 <http://x/p> ?v0"
    assert view.columns == ("v0",) and view.positions == (("s", "v0"), ("o", "v0"))
    (view,) = _plan("?x ?x ?y").views
    assert view.positions == (("s", "v0"), ("p", "v0"), ("o", "v1")) and view.p is None


def test_views_are_shared_up_to_renaming_and_filter() -> None:
    a = _plan("?person ex:age ?age FILTER(?age > 18)")
    b = _plan("?p ex:age ?n . ?p ex:name ?name FILTER(?n > 18)")
    c = _plan("?p ex:age ?n FILTER(?n > 21)")
    d = _plan("?p ex:age ?n")
    ids = lambda plan: {v.canonical: v.id for v in plan.views}      # noqa: E731
    pushed = '?v0 <http://x/age> ?v1 FILTER((?v1 > "18"^^<http://www.w3.org/2001/XMLSchema#integer>))'
    assert ids(a)[pushed] == ids(b)[pushed]
    assert ids(a)[pushed] not in ids(c).values() and ids(a)[pushed] not in ids(d).values()
    assert a.views[0].filter_sql is not None and "`v1`" in a.views[0].filter_sql
    # conjunct order does not matter; each conjunct is pushed on its own
    e = _plan("?p ex:age ?n FILTER(?n < 90 && ?n > 18)")
    f = _plan("?p ex:age ?n FILTER(?n > 18) FILTER(?n < 90)")
    assert e.views[0].id == f.views[0].id


def test_filter_placement() -> None:
    plan = _plan("?x ex:p ?y . ?y ex:q ?z . ?w a ex:T "
                 "FILTER(?y != ex:a && ?x != ?z && ?w != ?x && !bound(?nowhere) && (?x = ?y || ?z = 1))")
    chain, star = plan.components
    views = {v.id: v for v in plan.views}
    # ?y != ex:a needs only ?y: pushed into both patterns holding ?y
    assert all("FILTER(" in views[r.view].canonical for r in chain.patterns)
    assert "x" in (chain.filter_sql or "") and "`z`" in (chain.filter_sql or "")   # ?x != ?z spans two patterns
    assert star.filter_sql is None
    assert plan.filter_sql is not None and "`w`" in plan.filter_sql               # spans two components
    assert "nowhere" not in plan.filter_sql                                        # !bound(?nowhere) is TRUE


def test_filter_with_unbound_variable_in_a_view_renders_distinctly() -> None:
    """A pushed filter's other variables are unbound; the canonical form must not confuse them
    with the view's own columns."""
    a = _plan("?a ex:p ?b { ?b ex:q ?c FILTER(bound(?v0)) }")
    b = _plan("?a ex:p ?b { ?b ex:q ?c FILTER(bound(?b)) }")
    assert {v.canonical for v in a.views} != {v.canonical for v in b.views}


@pytest.mark.parametrize("name", CLASSES)
def test_plan_json_round_trip(name: str) -> None:
    plan = _plan(CLASSES[name][0] + " FILTER(isIRI(?x) || regex(str(?y), 'a', 'i'))", "rt")
    again = QueryPlan.from_json(plan.to_json())
    assert again == plan and again.to_json() == plan.to_json()


def test_ask_plan_and_explain() -> None:
    plan = compile_query(parse_query(EX + "ASK { ?x ex:knows ?y . ?y ex:knows ?x . ex:a ex:b ex:c }"), "friends")
    assert plan.form == "ask" and plan.projection == () and plan.query_class == "general"
    text = explain(plan)
    for needle in ["query friends: ASK", "class: general", "C0: ground", "C1: var-connected {?x ?y}",
                   "?x <http://x/knows> ?y", "star decomposition: ?x: t0, t1; ?y: t0, t1",
                   "overlapping-subqueries graph: ?x -- ?y", "pe_friends_0 (C0), pe_friends_1 (C1)",
                   "pe_friends_bag", "gold_friends", "gold_friends_changes", "in order t1, t0",
                   f"Δ({plan.components[1].patterns[0].view})"]:
        assert needle in text, needle
    single = explain(_plan("?x ex:p ?y", "one"))
    assert "partial embeddings: none" in single and "pe_one_bag" not in single


@pytest.mark.parametrize("name,ok", [("q1", True), ("Friends_of_friends", True), ("a" * 64, True),
                                     ("a" * 65, False), ("1q", False), ("_q", False), ("q-1", False),
                                     ("", False), ("q 1", False)])
def test_validate_name(name: str, ok: bool) -> None:
    if ok:
        assert validate_name(name) == name
    else:
        with pytest.raises(ValueError, match="^invalid query name"):
            validate_name(name)
