"""C-SPARQL registrations into the query model: header, stream windows, background graphs,
timestamp(), and the one-line refusals (pure: parsing only, no engine)."""
from __future__ import annotations

import re

import json
from dataclasses import replace

import pytest

from views.errors import QuerySyntaxError, UnsupportedQuery
from views.model import Compare, Const, Query, TriplePattern, Var
from views.plan import QueryPlan, compile_query, explain
from views.sparql import parse_query
from views.streams import StreamWindow

EX = "http://example.org/"
PREFIX = f"PREFIX ex: <{EX}>\n"
WHERE = "WHERE { ?s ex:p ?o }"
BADGES = f"<{EX}badges>"
XSD = "http://www.w3.org/2001/XMLSchema#"
STAMP = "PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>\n"


def _query(clauses: str, head: str = "") -> Query:
    """A SELECT over ``WHERE`` with ``clauses`` between projection and WHERE (on line 3 onwards)."""
    return parse_query(f"{head}{PREFIX}SELECT ?s\n{clauses}\n{WHERE}", "q.rq")


def _window(window: str) -> StreamWindow:
    (stream,) = _query(f"FROM STREAM ex:badges {window}").streams
    return stream


def _time(range_ms: int, step_ms: int) -> StreamWindow:
    return StreamWindow(BADGES, "time", range_ms=range_ms, step_ms=step_ms)


def _count(range_count: int, step_count: int) -> StreamWindow:
    return StreamWindow(BADGES, "count", range_count=range_count, step_count=step_count)


# -- accepted ---------------------------------------------------------------------------------------
def test_the_issue_example() -> None:
    q = parse_query(
        "REGISTER QUERY roomsTogether AS\n"
        "PREFIX ex: <http://example.org/>\n"
        "SELECT ?room\n"
        "FROM STREAM <http://example.org/badges> [RANGE 10s STEP 5s]\n"
        "FROM <http://example.org/building>\n"
        "WHERE { ex:a ex:isIn ?room . ex:b ex:isIn ?room . ?room ex:floor ?f }", "q.rq")
    assert q.register_name == "roomsTogether" and q.register_kind == "query"
    assert q.streams == (_time(10_000, 5_000),)
    assert q.graphs == (f"<{EX}building>",)
    assert q.form == "select" and q.projection == ("room",)
    assert q.patterns[0] == TriplePattern(f"<{EX}a>", f"<{EX}isIn>", Var("room"))


def test_header_keywords_are_case_insensitive_and_may_follow_a_comment() -> None:
    q = parse_query(f"# rooms\nregister Query rooms_2 as\n{PREFIX}ASK {WHERE}")
    assert (q.register_name, q.register_kind, q.form) == ("rooms_2", "query", "ask")
    assert (q.streams, q.graphs) == ((), ())


@pytest.mark.parametrize("window,expected", [
    ("[RANGE 10s STEP 5s]", _time(10_000, 5_000)),
    ("[RANGE 10 s STEP 5 s]", _time(10_000, 5_000)),
    ("[range 10S step\n 5s]", _time(10_000, 5_000)),
    ("[RANGE 7ms STEP 3 ms]", _time(7, 3)),
    ("[RANGE 2m STEP 1m]", _time(120_000, 60_000)),
    ("[RANGE 2 h STEP 1h]", _time(7_200_000, 3_600_000)),
    ("[RANGE 1d STEP 12h]", _time(86_400_000, 43_200_000)),
    ("[RANGE 1.5s STEP 500ms]", _time(1_500, 500)),
    ("[RANGE 10s TUMBLING]", _time(10_000, 10_000)),
    ("[RANGE PT10S STEP PT0.5S]", _time(10_000, 500)),
    ("[RANGE PT1M30S STEP PT1M]", _time(90_000, 60_000)),
    ("[RANGE P1D TUMBLING]", _time(86_400_000, 86_400_000)),
    ("[RANGE P1DT1H STEP pt1h]", _time(90_000_000, 3_600_000)),
    ("[RANGE P1W STEP P1D]", _time(604_800_000, 86_400_000)),
    ("[RANGE TRIPLES 10]", _count(10, 10)),      # tumbling
    ("[RANGE TRIPLES 10 STEP 5]", _count(10, 5)),
    ("[TRIPLES 10]", _count(10, 10)),
    ("[triples 10 step 10]", _count(10, 10)),
    ("[NOW]", StreamWindow(BADGES, "now", range_ms=1, step_ms=1)),
])
def test_windows(window: str, expected: StreamWindow) -> None:
    assert _window(window) == expected


def test_describe_is_canonical_and_parses_back() -> None:
    for window in ("[RANGE PT1M STEP 30 s]", "[TRIPLES 10]", "[NOW]"):
        stream = _window(window)
        (again,) = _query(stream.describe()).streams
        assert again == stream
    assert _window("[RANGE PT1M STEP 30 s]").describe() == f"FROM STREAM {BADGES} [RANGE 60000ms STEP 30000ms]"
    assert _window("[TRIPLES 10]").describe() == f"FROM STREAM {BADGES} [RANGE TRIPLES 10 STEP 10]"
    assert _window("[NOW]").describe() == f"FROM STREAM {BADGES} [NOW]"


def test_several_streams_share_one_step_with_different_ranges() -> None:
    q = _query("FROM STREAM ex:a [RANGE 10s STEP 5s]\nFROM <http://g/1>\n"
               "FROM STREAM <http://example.org/b> [RANGE PT1M STEP 5000ms] FROM STREAM ex:c [RANGE 5s TUMBLING]"
               "\nFROM ex:g FROM <http://g/1>")
    assert [(w.stream, w.range_ms, w.step_ms) for w in q.streams] == [
        (f"<{EX}a>", 10_000, 5_000), (f"<{EX}b>", 60_000, 5_000), (f"<{EX}c>", 5_000, 5_000)]
    assert q.graphs == ("<http://g/1>", f"<{EX}g>")          # distinct, in source order


def test_several_count_and_now_windows() -> None:
    counts = _query("FROM STREAM ex:a [TRIPLES 10]\nFROM STREAM ex:b [RANGE TRIPLES 3 STEP 2]").streams
    assert [(w.range_count, w.step_count) for w in counts] == [(10, 10), (3, 2)]
    assert [w.kind for w in _query("FROM STREAM ex:a [NOW] FROM STREAM ex:b [NOW]").streams] == ["now", "now"]


def test_iris_resolve_against_prefixes_and_base() -> None:
    q = parse_query(f"BASE <http://b/>\n{PREFIX}SELECT ?s FROM STREAM <in> [NOW] FROM <g> FROM STREAM ex:x [NOW] "
                    f"FROM STREAM :y [NOW] {WHERE}".replace("PREFIX ex:", "PREFIX : <http://e/>\nPREFIX ex:"))
    assert [w.stream for w in q.streams] == ["<http://b/in>", f"<{EX}x>", "<http://e/y>"]
    assert q.graphs == ("<http://b/g>",)


def test_glued_iri_and_window_and_spaced_keywords() -> None:
    q = _query("FROM\n  STREAM\tex:badges[NOW]")
    assert q.streams == (StreamWindow(BADGES, "now", range_ms=1, step_ms=1),)


def test_a_from_stream_in_a_comment_or_a_string_is_left_alone() -> None:
    q = parse_query(f'{PREFIX}SELECT ?s # FROM STREAM ex:a [RANGE 1s STEP 2s]\n'
                    f'FROM STREAM ex:b [NOW]\n'
                    f'WHERE {{ ?s ex:p "FROM STREAM ex:c [NOW]" . ?s ex:q \'\'\'FROM NAMED <x>\'\'\' }}')
    assert [w.stream for w in q.streams] == [f"<{EX}b>"]
    assert q.patterns == (TriplePattern(Var("s"), f"<{EX}p>", '"FROM STREAM ex:c [NOW]"'),
                          TriplePattern(Var("s"), f"<{EX}q>", '"FROM NAMED <x>"'))
    assert parse_query(f"{PREFIX}# REGISTER STREAM s AS\nSELECT ?s {WHERE}").register_name is None
    dotted = parse_query(f"{PREFIX}SELECT ?s WHERE {{ ?s ex:p ex:a.FROM }}")       # a name, not a clause
    assert dotted.patterns == (TriplePattern(Var("s"), f"<{EX}p>", f"<{EX}a.FROM>"),) and dotted.graphs == ()


def test_a_numeric_literal_after_a_window_keeps_its_lexical_form() -> None:
    """Windows are blanked before numbers are rewritten for rdflib: later numbers are untouched."""
    q = parse_query(f"{PREFIX}SELECT ?s FROM STREAM ex:a [TRIPLES 10]\nWHERE {{ ?s ex:p 010 }}")
    assert q.patterns == (TriplePattern(Var("s"), f"<{EX}p>", f'"010"^^<{XSD}integer>'),)


def test_plain_sparql_is_modelled_as_before() -> None:
    plain = parse_query(f"{PREFIX}SELECT ?s {WHERE}")
    assert plain == Query(text=f"{PREFIX}SELECT ?s {WHERE}", form="select",
                          patterns=(TriplePattern(Var("s"), f"<{EX}p>", Var("o")),), filters=(),
                          projection=("s",), distinct=False, variables=("s", "o"))
    assert (plain.streams, plain.graphs, plain.register_name, plain.register_kind) == ((), (), None, None)
    text = f"REGISTER QUERY q AS {PREFIX}SELECT ?s FROM STREAM ex:a [NOW] FROM ex:g {WHERE}"
    streamed = parse_query(text)
    assert streamed == replace(plain, text=text, streams=(StreamWindow(f"<{EX}a>", "now", 1, 1),),
                               graphs=(f"<{EX}g>",), register_name="q", register_kind="query")


# -- timestamp() ------------------------------------------------------------------------------------
def test_timestamp_is_the_time_variable_of_its_pattern_through_a_prefix_or_its_iri() -> None:
    by_prefix = parse_query(f"{STAMP}{PREFIX}SELECT ?s "
                            "FROM STREAM ex:a [NOW] WHERE { ?s ex:p ?o FILTER(f:timestamp(?s, ex:p, ?o) > 3) }")
    by_iri = parse_query(f"{PREFIX}SELECT ?s WHERE {{ ?s ex:p ?o\n"
                         "FILTER(<http://larkc.eu/csparql/sparql/jena/ext#timestamp>(?s, ex:p, ?o) > 3) }")
    for q in (by_prefix, by_iri):
        assert q.patterns == (TriplePattern(Var("s"), f"<{EX}p>", Var("o"), Var("_t0")),)
        assert q.filters == (Compare(">", Var("_t0"), Const(f'"3"^^<{XSD}integer>')),)
        assert q.projection == ("s",)


def test_timestamp_named_by_select_or_bind_and_shared_with_filters() -> None:
    q = parse_query(f"{STAMP}{PREFIX}SELECT * FROM STREAM ex:a [NOW] WHERE {{ ?s ex:p ?o . ?o ex:q ?z "
                    "BIND(f:timestamp(?s, ex:p, ?o) AS ?t) FILTER(f:timestamp(?s, ex:p, ?o) > 3 "
                    "&& f:timestamp(?o, ex:q, ?z) < 9) }")
    assert q.patterns == (TriplePattern(Var("s"), f"<{EX}p>", Var("o"), Var("t")),
                          TriplePattern(Var("o"), f"<{EX}q>", Var("z"), Var("_t0")))
    assert q.projection == ("s", "o", "t", "z")      # SELECT *: the BIND's ?t, not the unnamed _t0
    selected = parse_query(f"{STAMP}{PREFIX}SELECT ?s (f:timestamp(?s, ex:p, ?o) AS ?when) FROM STREAM ex:a [NOW] "
                           "WHERE { ?s ex:p ?o }")
    assert selected.patterns == (TriplePattern(Var("s"), f"<{EX}p>", Var("o"), Var("when")),)
    assert selected.projection == ("s", "when")
    scoped = parse_query(f"{STAMP}{PREFIX}SELECT ?s FROM STREAM ex:a [NOW] WHERE {{ ?s ex:p ?o "
                         "BIND(f:timestamp(?s, ex:p, ?o) AS ?t) FILTER(?t > 3) }")
    assert scoped.filters == (Compare(">", Var("t"), Const(f'"3"^^<{XSD}integer>')),)   # a BIND is in scope


def test_compiling_timestamp_needs_a_stream_window() -> None:
    q = parse_query(f"{STAMP}{PREFIX}SELECT ?s\nFROM <http://example.org/g>\n"
                    "WHERE { ?s ex:p ?o\n FILTER(f:timestamp(?s, ex:p, ?o) > 3) }")
    with pytest.raises(UnsupportedQuery) as info:
        compile_query(q, "stamps")
    assert str(info.value) == ("query stamps: timestamp() needs a FROM STREAM window: the event time it gives "
                               "is that of the triple in the current window (line 6)")
    windowed = compile_query(parse_query(f"{STAMP}{PREFIX}SELECT ?s (f:timestamp(?s, ex:p, ?o) AS ?t)\n"
                                         "FROM STREAM ex:a [RANGE 10s STEP 5s] WHERE { ?s ex:p ?o }"), "stamps")
    assert windowed.stamps == ("t",)
    assert windowed.views[0].positions == (("s", "v0"), ("o", "v1"), ("t", "v2"))


@pytest.mark.parametrize("where,message", [
    ("?s ex:p ?o\n FILTER(f:timestamp(?s, ex:q, ?o) > 3)",
     "timestamp(?s <http://example.org/q> ?o) must name one of the query's triple patterns (line 5)"),
    ("?s ex:p ?o\n BIND(f:timestamp(?s, ex:p, ?o) AS ?o)",
     "?o is bound twice (AS may not name a variable of the pattern) (line 4)"),
    ("?s ex:p ?o\n BIND(f:timestamp(?s, ex:p, ?o) AS ?a)\n BIND(f:timestamp(?s, ex:p, ?o) AS ?b)",
     "timestamp() of one triple pattern is named ?a and ?b (line 5)"),
    ("?s ex:p ?o\n BIND(str(?s) AS ?a)", "BIND is not supported (line 5)"),
])
def test_timestamp_refusals(where: str, message: str) -> None:
    with pytest.raises(UnsupportedQuery) as info:
        parse_query(f"{STAMP}{PREFIX}SELECT *\nWHERE {{ {where} }}", "q.rq")
    assert str(info.value) == f"query q.rq: {message}"


@pytest.mark.parametrize("args", ["?s, ?o", "?s, ex:p, str(?o)", ""])
def test_timestamp_takes_a_triple(args: str) -> None:
    with pytest.raises(UnsupportedQuery) as info:
        parse_query(f"{STAMP}{PREFIX}SELECT ?s\n"
                    f"WHERE {{ ?s ex:p ?o\n FILTER(f:timestamp({args}) > 3) }}", "q.rq")
    assert str(info.value) == "query q.rq: timestamp() takes a triple: three variables or constants (line 5)"


# -- refused, one line each with its line -----------------------------------------------------------
S = "FROM STREAM ex:"
REFUSED = [
    # (clauses from line 3, error type, message)
    (f"{S}a [RANGE 10s STEP 5s]\n{S}b [TRIPLES 5]", UnsupportedQuery,
     "window [TRIPLES 5] is a count window but [RANGE 10s STEP 5s] is a time window: the windows of a query "
     "must be of one kind (line 4)"),
    (f"{S}a [NOW]\n\n{S}b [RANGE 1s TUMBLING]", UnsupportedQuery,
     "window [RANGE 1s TUMBLING] is a time window but [NOW] is a NOW window: the windows of a query must be of "
     "one kind (line 5)"),
    (f"{S}a [RANGE 10s STEP 5s]\n{S}b [RANGE 20s STEP 2s]", UnsupportedQuery,
     "window [RANGE 20s STEP 2s] steps by 2000ms but [RANGE 10s STEP 5s] by 5000ms: the time windows of a query "
     "must share one STEP (line 4)"),
    (f"{S}a [RANGE 10s TUMBLING]\n{S}b [RANGE 20s TUMBLING]", UnsupportedQuery,
     "window [RANGE 20s TUMBLING] steps by 20000ms but [RANGE 10s TUMBLING] by 10000ms: the time windows of a "
     "query must share one STEP (line 4)"),
    (f"{S}a [RANGE 10s\n STEP 20s]", UnsupportedQuery,
     "STEP 20s is longer than RANGE 10s, which would leave gaps between windows (line 4)"),
    (f"{S}a [RANGE 0s STEP 1s]", QuerySyntaxError, "RANGE 0s is not a positive duration (line 3)"),
    (f"{S}a [RANGE PT0S TUMBLING]", QuerySyntaxError, "RANGE PT0S is not a positive duration (line 3)"),
    (f"{S}a [RANGE -5 s STEP 1s]", QuerySyntaxError, "RANGE -5 s is not a positive duration (line 3)"),
    (f"{S}a [RANGE 5s STEP 0ms]", QuerySyntaxError, "STEP 0ms is not a positive duration (line 3)"),
    (f"{S}a [RANGE 10w STEP 5s]", QuerySyntaxError,
     "unknown time unit 'w' in RANGE 10w (use ms, s, m, h, d or an ISO 8601 duration such as PT10S) (line 3)"),
    (f"{S}a [RANGE 10 min STEP 5s]", QuerySyntaxError,
     "unknown time unit 'min' in RANGE 10 min (use ms, s, m, h, d or an ISO 8601 duration such as PT10S) "
     "(line 3)"),
    (f"{S}a [RANGE 10 STEP 5s]", QuerySyntaxError,
     "RANGE 10 has no time unit (use ms, s, m, h, d or an ISO 8601 duration such as PT10S) (line 3)"),
    (f"{S}a [RANGE 0.5ms TUMBLING]", UnsupportedQuery,
     "RANGE 0.5ms is not a whole number of milliseconds (line 3)"),
    (f"{S}a [RANGE 1s STEP PT0.0005S]", UnsupportedQuery,
     "STEP PT0.0005S is not a whole number of milliseconds (line 3)"),
    (f"{S}a [RANGE P1M STEP 1d]", UnsupportedQuery,
     "RANGE P1M counts months or years, which have no fixed length (line 3)"),
    (f"{S}a [RANGE P1Y TUMBLING]", UnsupportedQuery,
     "RANGE P1Y counts months or years, which have no fixed length (line 3)"),
    (f"{S}a [RANGE PT STEP 1s]", QuerySyntaxError,
     "RANGE PT is not a duration (use ms, s, m, h, d or an ISO 8601 duration such as PT10S) (line 3)"),
    (f"{S}a [RANGE P1H STEP 1s]", QuerySyntaxError,
     "RANGE P1H is not a duration (use ms, s, m, h, d or an ISO 8601 duration such as PT10S) (line 3)"),
    (f"{S}a [TRIPLES 0]", QuerySyntaxError, "TRIPLES 0 is not a positive whole number (line 3)"),
    (f"{S}a [RANGE TRIPLES 2.5]", QuerySyntaxError, "TRIPLES 2.5 is not a positive whole number (line 3)"),
    (f"{S}a [TRIPLES 10 STEP -1]", QuerySyntaxError, "STEP -1 is not a positive whole number (line 3)"),
    (f"{S}a\n [RANGE 10s]", QuerySyntaxError,
     "[RANGE 10s] is not a window: use [RANGE 10s STEP 5s], [RANGE 10s TUMBLING], [RANGE TRIPLES 10 STEP 5], "
     "[TRIPLES 10] or [NOW] (line 4)"),
    (f"{S}a [NOW 5s]", QuerySyntaxError,
     "[NOW 5s] is not a window: use [RANGE 10s STEP 5s], [RANGE 10s TUMBLING], [RANGE TRIPLES 10 STEP 5], "
     "[TRIPLES 10] or [NOW] (line 3)"),
    (f"{S}a", QuerySyntaxError, "FROM STREAM ex:a needs a window such as [RANGE 10s STEP 5s] (line 3)"),
    ("FROM STREAM [NOW]", QuerySyntaxError, "FROM STREAM needs a stream IRI (line 3)"),
    (f"{S}a [NOW]\nFROM NAMED <http://g>", UnsupportedQuery,
     "FROM NAMED is not supported: streams and graphs are merged into one graph (line 4)"),
    ("FROM NAMED STREAM ex:a [NOW]", UnsupportedQuery,
     "FROM NAMED STREAM is not supported: streams and graphs are merged into one graph (line 3)"),
    (f"{S}badges [RANGE 10s STEP 5s]\nFROM STREAM <{EX}badges> [RANGE 20s STEP 5s]", UnsupportedQuery,
     f"FROM STREAM {BADGES} appears twice: a stream can have only one window (line 4)"),
    ("FROM STREAM foo:a [NOW]", QuerySyntaxError, "undeclared prefix 'foo:' (line 3)"),
]


@pytest.mark.parametrize("clauses,error,message", REFUSED, ids=[m[:40] for _, _, m in REFUSED])
def test_refused_clauses(clauses: str, error: type[ValueError], message: str) -> None:
    with pytest.raises(error) as info:
        _query(clauses)
    assert str(info.value) == f"query q.rq: {message}"


@pytest.mark.parametrize("text,error,message", [
    ("REGISTER STREAM out AS\n" + PREFIX + "SELECT ?s " + WHERE, QuerySyntaxError,
     "REGISTER STREAM needs a CONSTRUCT query, found SELECT (line 1)"),
    ("REGISTER STREAM out AS\n" + PREFIX + "ASK " + WHERE, QuerySyntaxError,
     "REGISTER STREAM needs a CONSTRUCT query, found ASK (line 1)"),
    ("REGISTER STREAM out AS\n" + PREFIX + "CONSTRUCT { [] ex:q ?o }\nFROM STREAM ex:a [NOW]\n" + WHERE,
     UnsupportedQuery, "blank nodes in a CONSTRUCT template are not supported (line 3)"),
    ("REGISTER QUERY 1rooms AS\n" + PREFIX + "SELECT ?s " + WHERE, QuerySyntaxError,
     "invalid query name '1rooms': use a letter, then up to 63 letters, digits or _ (line 1)"),
    ("\nREGISTER QUERY rooms-2 AS\n" + PREFIX + "SELECT ?s " + WHERE, QuerySyntaxError,
     "invalid query name 'rooms-2': use a letter, then up to 63 letters, digits or _ (line 2)"),
    ("REGISTER QUERY AS\n" + PREFIX + "SELECT ?s " + WHERE, QuerySyntaxError,
     "the header must read REGISTER QUERY name AS or REGISTER STREAM name AS (line 1)"),
    ("REGISTER rooms AS\n" + PREFIX + "SELECT ?s " + WHERE, QuerySyntaxError,
     "the header must read REGISTER QUERY name AS or REGISTER STREAM name AS (line 1)"),
])
def test_refused_headers(text: str, error: type[ValueError], message: str) -> None:
    with pytest.raises(error) as info:
        parse_query(text, "q.rq")
    assert str(info.value) == f"query q.rq: {message}"


@pytest.mark.parametrize("text,message", [
    # the clauses are blanked, not removed: lines and columns after them stay right
    (f"REGISTER QUERY q AS\n{PREFIX}SELECT ?s\nFROM STREAM ex:a\n  [RANGE 10s\n   STEP 5s]\nFROM ex:g\n"
     "WHERE { ?s ex:p ?o .\n  ?s ex:q }",
     "syntax error at line 9, column 3: Expected SelectQuery, found '?s'"),
    (f"{PREFIX}SELECT ?s FROM STREAM ex:a [TRIPLES 3] WHERE {{ ?s ex:p ?o }} LIMIT",
     "syntax error at line 2, column 61: Expected end of text, found 'LIMIT'"),
    # a header after the prologue, or a window after the WHERE group, is not where C-SPARQL puts them
    (f"{PREFIX}REGISTER QUERY q AS SELECT ?s {WHERE}", "syntax error at line 2, column 1"),
    (f"{PREFIX}SELECT ?s {WHERE}\nFROM STREAM ex:a [NOW]", "syntax error at line 3, column 1"),
    (f"{PREFIX}SELECT ?s WHERE {{ ?s ex:p ?o\n FROM STREAM ex:a [NOW] }}", "syntax error at line 3, column 2"),
])
def test_syntax_errors_after_blanked_clauses_point_at_the_text(text: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_query(text, "q.rq")
    assert str(info.value).startswith(f"query q.rq: {message}") and "\n" not in str(info.value)


# -- the plan ---------------------------------------------------------------------------------------
def test_plan_json_round_trips_windows_and_graphs_and_explain_lists_them() -> None:
    q = _query("FROM STREAM ex:a [RANGE 10s STEP 5s]\nFROM STREAM ex:b [RANGE 1m STEP 5s]\nFROM ex:g")
    plan = compile_query(q, "rooms")
    assert plan.streams == q.streams and plan.graphs == (f"<{EX}g>",)
    assert QueryPlan.from_json(plan.to_json()) == plan
    counted = compile_query(_query("FROM STREAM ex:a [TRIPLES 4]"), "counted")
    assert QueryPlan.from_json(counted.to_json()) == counted
    lines = explain(plan).splitlines()
    at = lines.index("windows:")
    assert lines[at + 1:at + 4] == [f"  FROM STREAM <{EX}a> [RANGE 10000ms STEP 5000ms]",
                                    f"  FROM STREAM <{EX}b> [RANGE 60000ms STEP 5000ms]",
                                    f"  FROM <{EX}g>"]


def test_plans_stored_before_windows_still_load() -> None:
    plan = compile_query(parse_query(f"{PREFIX}SELECT ?s {WHERE}"), "old")
    data = json.loads(plan.to_json())
    del data["streams"], data["graphs"]
    assert QueryPlan.from_json(json.dumps(data)) == plan
    assert "windows:" not in explain(plan)


@pytest.mark.parametrize("clauses,message", [
    ("FROM <http://example.org/g>", "REGISTER STREAM needs FROM STREAM windows: its output is the triples "
     "each window constructs"),
    ("FROM STREAM <urn:lakegraph:stream:out> [NOW]", "it reads its own output stream <urn:lakegraph:stream:out>"),
])
def test_a_register_stream_needs_windows_and_may_not_read_itself(clauses: str, message: str) -> None:
    from views.plan import compile_query

    query = parse_query("REGISTER STREAM out AS\n" + PREFIX + "CONSTRUCT { ?s ex:q ?o }\n" + clauses + "\n" + WHERE)
    with pytest.raises(UnsupportedQuery, match="^query out: " + re.escape(message)):
        compile_query(query, "out")


def test_a_register_stream_plan_keeps_its_template_and_output_stream() -> None:
    from views.plan import QueryPlan, compile_query

    query = parse_query("REGISTER STREAM out AS\n" + PREFIX + "CONSTRUCT { ?s ex:q ?o . ?o ex:r ex:c }\n"
                        "FROM STREAM ex:a [RANGE 4s TUMBLING]\n" + WHERE)
    plan = compile_query(query, "out", output_stream="http://example.org/derived")
    assert plan.form == "construct" and plan.distinct and plan.output_stream == "http://example.org/derived"
    assert set(plan.template) == {("?s", "<http://example.org/q>", "?o"),
                                  ("?o", "<http://example.org/r>", "<http://example.org/c>")}
    assert QueryPlan.from_json(plan.to_json()) == plan
