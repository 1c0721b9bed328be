"""SPARQL text to the query model: what is accepted, how it is modelled, and what is refused (pure)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from views.errors import QuerySyntaxError, UnsupportedQuery
from views.filters import filter_sql
from views.model import And, Call, Compare, Const, Not, Or, TriplePattern, Unbound, Var
from views.sparql import parse_query

X = "http://www.w3.org/2001/XMLSchema#"
EX = "PREFIX ex: <http://x/>\n"


def _int(lexical: str) -> str:
    return f'"{lexical}"^^<{X}integer>'


def test_views_is_pure() -> None:
    """The core must not pull in Spark or Delta (checked in a fresh interpreter: conftest imports Spark)."""
    code = ("import sys, views, views.sparql, views.plan, views.decompose, views.filters; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'deltalake', 'py4j')); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- accepted queries ------------------------------------------------------------------------------
def test_select_projection_distinct_and_patterns() -> None:
    q = parse_query(EX + "SELECT DISTINCT ?y ?x WHERE { ?x ex:knows ?y . ?y ex:name \"Bob\"@EN }")
    assert q.form == "select" and q.distinct and q.projection == ("y", "x")
    assert q.variables == ("x", "y")
    assert q.patterns == (TriplePattern(Var("x"), "<http://x/knows>", Var("y")),
                          TriplePattern(Var("y"), "<http://x/name>", '"Bob"@en'))
    assert q.filters == ()


def test_select_star_reduced_ask_and_base() -> None:
    star = parse_query("BASE <http://b/>\nSELECT REDUCED * { ?s <p> ?o . ?o <#q> [] }")
    assert star.projection == ("s", "o") and not star.distinct            # blank nodes are not projected
    assert star.patterns[1] == TriplePattern(Var("o"), "<http://b/#q>", Var("_b0"))
    ask = parse_query(EX + "ASK { ?s ex:p ex:o }")
    assert ask.form == "ask" and ask.projection == () and ask.variables == ("s",)


def test_source_order_several_groups_and_duplicates() -> None:
    """rdflib's algebra sorts triples; the model keeps them as written, once each."""
    q = parse_query(EX + "SELECT * { ?c ex:p ?d . { ?a ex:q ?b } ?a ex:r ?c . ?c ex:p ?d . FILTER(?a) }")
    assert [t.text() for t in q.patterns] == [
        "?c <http://x/p> ?d", "?a <http://x/q> ?b", "?a <http://x/r> ?c"]
    assert q.projection == ("c", "d", "a", "b")
    # rdflib would put the pattern with the most constants first
    q = parse_query(EX + "SELECT * { ?a ?b ?c . ?x ex:p ex:o . [] ex:q ?a }")
    assert [t.text() for t in q.patterns] == ["?a ?b ?c", "?x <http://x/p> <http://x/o>", "?_b0 <http://x/q> ?a"]


def test_variables_anywhere_and_blank_nodes() -> None:
    q = parse_query(EX + "SELECT ?_b0 ?p { ?_b0 ?p _:x . _:x ex:q [ ex:r ?p ] }")
    # _b0 is taken by the query, so blank nodes become _b1, _b2 in order of appearance
    assert q.patterns == (TriplePattern(Var("_b0"), Var("p"), Var("_b1")),
                          TriplePattern(Var("_b1"), "<http://x/q>", Var("_b2")),
                          TriplePattern(Var("_b2"), "<http://x/r>", Var("p")))
    assert q.projection == ("_b0", "p")
    # names used only in a FILTER or the SELECT clause are taken too
    q = parse_query("SELECT ?x { ?x <p:p> [] FILTER(!bound(?_b0)) }")
    assert q.patterns[0].o == Var("_b1") and q.filters == (Not(Call("BOUND", (Unbound("_b0"),))),)
    with pytest.raises(UnsupportedQuery, match=r"projecting \?_b0"):
        parse_query("SELECT ?_b0 { ?x <p:p> [] }")


def test_literals_are_canonical_and_keep_their_lexical_form() -> None:
    q = parse_query(EX + 'SELECT * { ?s ex:p 01, +02, -1.50, 1e0, true, "a"^^<' + X + 'string>, '
                    '"x\\"y\\n\\u0001\\u00e9", \'z\'@EN-gb, "5"^^ex:t }')
    assert [t.o for t in q.patterns] == [
        _int("01"), _int("+02"), f'"-1.50"^^<{X}decimal>', f'"1e0"^^<{X}double>',
        f'"true"^^<{X}boolean>', '"a"', '"x\\"y\\n\\u0001é"', '"z"@en-gb', '"5"^^<http://x/t>']


def test_filters_model() -> None:
    q = parse_query(EX + "SELECT * { ?s ex:p ?o FILTER(?o > -2 && (lang(?o) = 'en' || !isURI(?s))) "
                    "FILTER regex(?o, '^a', 'i') }")
    assert q.filters == (And((
        And((Compare(">", Var("o"), Const(_int("-2"))),
             Or((Compare("=", Call("LANG", (Var("o"),)), Const('"en"')),
                 Not(Call("ISIRI", (Var("s"),))))))),
        Call("REGEX", (Var("o"), Const('"^a"'), Const('"i"'))))),)


def test_in_and_not_in_are_desugared() -> None:
    q = parse_query("SELECT * { ?s <p:p> ?o FILTER(?o IN (1, <p:a>) && ?o NOT IN (2) && ?o NOT IN ()) }")
    assert q.filters[0] == And((
        Or((Compare("=", Var("o"), Const(_int("1"))), Compare("=", Var("o"), Const("<p:a>")))),
        And((Compare("!=", Var("o"), Const(_int("2"))),)),
        Const(f'"true"^^<{X}boolean>')))


def test_filter_in_a_nested_group_cannot_see_outer_variables() -> None:
    """SPARQL scoping: the inner FILTER is evaluated on the inner group alone, so ?x is unbound there."""
    q = parse_query("SELECT * { ?x <p:p> ?y { ?y <p:q> ?z FILTER(bound(?x) || ?z = ?x) } }")
    (inner,) = q.filters
    assert inner == Or((Call("BOUND", (Unbound("x"),)), Compare("=", Var("z"), Unbound("x"))))
    assert filter_sql(inner, {"x", "y", "z"}) == "CAST(NULL AS BOOLEAN)"   # false || error


def test_filter_on_variable_bound_nowhere() -> None:
    q = parse_query("SELECT ?x { ?x <p:p> ?y FILTER(!bound(?w)) }")
    assert q.filters == (Not(Call("BOUND", (Unbound("w"),))),) and q.variables == ("x", "y")


# -- refused constructs --------------------------------------------------------------------------
REFUSED = [
    ("SELECT * {\n ?s <p:p> ?o\n OPTIONAL { ?o <p:q> ?z } }", "OPTIONAL is not supported (line 3)"),
    ("SELECT * {\n { ?s <p:p> ?o }\n UNION { ?o <p:q> ?z } }", "UNION is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n MINUS { ?o <p:q> ?z } }", "MINUS is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o .\n { SELECT ?o { ?o <p:q> ?z } } }", "subqueries are not supported (line 3)"),
    ("ASK {\n ?s <p:p> ?o .\n { SELECT ?o { ?o <p:q> ?z } LIMIT 1 } }", "subqueries are not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n GRAPH ?g { ?o <p:q> ?z } }", "GRAPH is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n SERVICE <http://s> { ?o <p:q> ?z } }", "SERVICE is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n VALUES ?o { 1 2 } }", "VALUES is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o }\nVALUES ?o { 1 }", "VALUES is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n BIND(1 AS ?z) }", "BIND is not supported (line 3)"),
    ("SELECT ?s\n (COUNT(?o) > 1 AS ?n) { ?s <p:p> ?o } GROUP BY ?s",
     "the comparison > is not supported in GROUP BY and SELECT expressions of an aggregate query (variables, constants, + - * /, STR, LANG and DATATYPE are) (line 2)"),
    ("SELECT (COUNT(?o) AS ?n) { ?s <p:p> ?o }\nGROUP BY (isIRI(?s) AS ?k)",
     "ISIRI() is not supported in GROUP BY and SELECT expressions of an aggregate query (variables, constants, + - * /, STR, LANG and DATATYPE are) (line 2)"),
    ("SELECT\n (SUM(?o * 2) AS ?n) { ?s <p:p> ?o }", "SUM of an expression is not supported (aggregate a variable) (line 2)"),
    ("SELECT\n (COUNT(DISTINCT *) AS ?n) { ?s <p:p> ?o }", "COUNT(DISTINCT *) is not supported (line 2)"),
    ("SELECT (COUNT(?z) AS ?n) {\n ?s <p:p> ?o }", "?z is grouped or aggregated but no triple pattern binds it (line 1)"),
    ("ASK { ?s <p:p> ?o }\nGROUP BY ?s", "aggregates and GROUP BY are supported in SELECT queries only (line 2)"),
    ("SELECT * {\n ?s <p:p> ?o FILTER(COUNT(?o) > 1) }", "aggregates are allowed only in SELECT and HAVING"),
    ("SELECT * { ?s <p:p> ?o }\nORDER BY ?o", "ORDER BY is not supported (line 2)"),
    ("SELECT * { ?s <p:p> ?o }\nLIMIT 10", "LIMIT is not supported (line 2)"),
    ("SELECT * { ?s <p:p> ?o }\nOFFSET 5", "OFFSET is not supported (line 2)"),
    ("CONSTRUCT { ?s <p:p> ?z }\nWHERE { ?s <p:p> ?o }",
     "the CONSTRUCT template uses ?z, which no triple pattern binds (line 1)"),
    ("PREFIX ex: <http://x/>\nDESCRIBE ?s { ?s ex:p ?o }", "DESCRIBE is not supported (line 2)"),
    ("SELECT *\nFROM NAMED <http://g> { ?s <p:p> ?o }", "FROM NAMED is not supported: streams and graphs are "
     "merged into one graph (line 2)"),
    ("PREFIX ex: <http://x/>\nINSERT DATA { ex:a ex:b ex:c }", "SPARQL Update is not supported (line 2)"),
    ("DELETE WHERE { ?s <p:p> ?o }", "SPARQL Update is not supported (line 1)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER EXISTS { ?o <p:q> ?s } }", "FILTER EXISTS is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER NOT EXISTS { ?o <p:q> ?s } }", "FILTER NOT EXISTS is not supported (line 3)"),
    ("SELECT ?s\n (?o AS ?t) { ?s <p:p> ?o }", "SELECT expressions (... AS ?t) are not supported (line 2)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER(strlen(?o) > 2) }", "function STRLEN is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER(contains(?o, 'a')) }", "function CONTAINS is not supported (line 3)"),
    ("PREFIX xsd: <" + X + ">\nSELECT * {\n ?s <p:p> ?o\n FILTER(xsd:integer(?o) > 2) }",
     f"function <{X}integer> is not supported (line 4)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER(?o + 1 > 2) }", "arithmetic is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER(-?o < 2) }", "arithmetic is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER(regex(?o, ?s)) }", "REGEX with a non-constant pattern is not supported (line 3)"),
    ("SELECT * {\n ?s <p:p> ?o\n FILTER(regex(?o, 'a', 'k')) }", "REGEX flags 'k' are not supported"),
    ("SELECT ?_mult {\n ?_mult <p:p> ?o }", "variable ?_mult is not allowed"),
    ("SELECT ?s {\n ?s <p:p> ?o FILTER(?_BATCHno) }", "variable ?_BATCHno is not allowed"),
    ("SELECT * { FILTER(true) }", "a query without any triple pattern is not supported"),
    ("SELECT ?z {\n ?s <p:p> ?o }", "projecting ?z, which no triple pattern binds, is not supported (line 1)"),    ("SELECT ?s {\n ?s <p:p> ?x .\n ?x <p:q> ?X }",
     "variables ?X and ?x differ only in case, and Delta column names are case-insensitive: rename one (line 2)"),
]


@pytest.mark.parametrize("text,message", REFUSED, ids=[m.split(" is")[0].split(" are")[0] for _, m in REFUSED])
def test_refused_constructs_are_named_on_one_line(text: str, message: str) -> None:
    with pytest.raises(UnsupportedQuery) as info:
        parse_query(text, "q1.rq")
    assert str(info.value).startswith("query q1.rq: ") and "\n" not in str(info.value)
    assert message in str(info.value)


def test_default_label() -> None:
    with pytest.raises(UnsupportedQuery, match=r"^query: LIMIT is not supported \(line 1\)$"):
        parse_query("SELECT * { ?s <p:p> ?o } LIMIT 1")


# -- syntax errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,message", [
    ("SELECT ?s WHERE {\n  ?s <p:p> }", "syntax error at line 2, column 3"),
    ("SELEC ?s { ?s <p:p> ?o }", "syntax error at line 1, column 1: Expected"),
    # positions survive the rewrite of numbers into typed literals
    ("SELECT * {\n ?s <p:p> 1, -2.5, 3e0 <p:q> }", "syntax error at line 2, column 24: Expected SelectQuery, found '<p:q>'"),
    ("SELECT * { ?s <p:p> ?o", "found end of text"),
    ("PREFIX ex: <http://x/>\nSELECT * {\n ?s foo:p ?o }", "undeclared prefix 'foo:' (line 3)"),
    ("SELECT * {\n { _:a <p:p> ?o }\n { _:a <p:q> ?z } }", "blank node _:a is used in two groups (line 3)"),
])
def test_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_query(text, "bad.rq")
    assert str(info.value).startswith("query bad.rq: ") and "\n" not in str(info.value)
    assert message in str(info.value)


def test_keywords_in_comments_strings_and_names_do_not_mislead() -> None:
    """Locating a construct ignores comments, strings, IRIs and prefixed names."""
    text = ('PREFIX ex: <http://x/OPTIONAL/>\nSELECT * { # OPTIONAL here\n ?s ex:optional "OPTIONAL" .\n'
            ' ?s ex:p ?o\n OPTIONAL { ?o ex:q ?z } }')
    with pytest.raises(UnsupportedQuery, match=r"OPTIONAL is not supported \(line 5\)"):
        parse_query(text)
