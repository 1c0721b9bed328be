"""Compiled FILTER SQL, run on Spark, against pyoxigraph's verdict on the same terms; and the
in-process operators (views.operators, through views.expressions.holds) against the SQL.

Every expression is evaluated on every pair (?a, ?b) of a list of canonical terms, plus an unbound
?z. pyoxigraph gives the three-valued result through ``BIND((expr) AS ?v)`` (unbound = error); the
Spark side selects the compiled SQL (NULL = error). The few places where we follow SPARQL 1.1 /
the brief and pyoxigraph does not are excluded from the comparison and pinned in
``test_known_divergences``.
"""
from __future__ import annotations

import itertools
from typing import Callable

import pyoxigraph as ox
import pytest

from views.conditions import compile_filter
from views.expressions import Undecided, holds
from views.filters import const_kind, filter_sql
from views.sparql import parse_query

X = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = f"PREFIX xsd: <{X}> PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"

TERMS = [
    "<http://x/a>", "<http://x/b>", "_:b1",
    '"a"', '"b"', '""', '"A\\"b\\n\\u0001é"', '"a"@en', '"b"@en', '"a"@en-us', '"a"@fr',
    '"x\u2028y"@en',          # a raw line separator: regexes must not stop at it
    f'"1"^^<{X}integer>', f'"01"^^<{X}integer>', f'"-5"^^<{X}int>', f'"0"^^<{X}integer>',
    f'"1.0"^^<{X}decimal>', f'"1.5"^^<{X}decimal>', f'"0.1"^^<{X}decimal>', f'"1e0"^^<{X}double>',
    f'"0.1"^^<{X}float>', f'"0.1"^^<{X}double>', f'"NaN"^^<{X}double>', f'"INF"^^<{X}double>',
    f'"-INF"^^<{X}float>',
    f'"true"^^<{X}boolean>', f'"0"^^<{X}boolean>',
    f'"2020-01-01T00:00:00Z"^^<{X}dateTime>', f'"2020-01-01T01:00:00+01:00"^^<{X}dateTime>',
    f'"2020-01-01T00:00:00"^^<{X}dateTime>', f'"2020-01-01T20:00:00"^^<{X}dateTime>',
    f'"2021-06-01T12:30:00.5"^^<{X}dateTime>',
    '"x"^^<http://u/dt>', '"y"^^<http://u/dt>', f'"abc"^^<{X}integer>',
]
PAIRS = list(itertools.product(TERMS, TERMS))
# Terms where Spark's or Java's reading of a value is easy to get wrong in Python: signs and
# missing digits, DECIMAL(38,18)'s limits, a float that rounding through a double gets wrong, the
# float range's ends, dateTimes beyond microseconds, at the offsets' ends or not in the calendar,
# text with a carriage return or not in ASCII. Compared with the SQL only (pyoxigraph reads some
# of them differently, which test_filter_matches_pyoxigraph's skips would have to list).
EDGE_TERMS = [
    f'"+5"^^<{X}integer>', f'"-0"^^<{X}integer>', f'".5"^^<{X}decimal>', f'"5."^^<{X}decimal>',
    f'"123456789012345678901"^^<{X}integer>', f'"99999999999999999999"^^<{X}integer>',
    f'"0.0000000000000000001"^^<{X}decimal>', f'"1.00000017881393432617187499"^^<{X}float>', f'"1.00000012"^^<{X}float>',
    f'"16777217"^^<{X}integer>', f'"3.4028235677973366e38"^^<{X}float>', f'"1e-46"^^<{X}float>',
    f'"+INF"^^<{X}double>', f'"0.1"^^<{X}decimal>',
    f'"2020-01-01T00:00:00.1234567Z"^^<{X}dateTime>', f'"2020-01-01T14:00:00+14:00"^^<{X}dateTime>',
    f'"2019-12-31T10:00:00-14:00"^^<{X}dateTime>', f'"2020-01-01T00:00:00+15:00"^^<{X}dateTime>',
    f'"2020-02-30T00:00:00Z"^^<{X}dateTime>', f'"2020-01-01T10:00:00.5"^^<{X}dateTime>',
    '"a\\r\\nb"', '"a\\rb"', '"a\\nb"', '"ÀB"@en', '"é"', '"aB c_1"', '"a1"', '"A"', '"a\u00a0b"', '"\u0663"',
]
IN_PROCESS_PAIRS = PAIRS + [(a, b) for a in EDGE_TERMS for b in EDGE_TERMS + TERMS[:12]]
ORDERED_KINDS = {"num", "str", "dt"}


def _lang(t: str) -> bool:
    return const_kind(t) == "lang"


def _nan(t: str) -> bool:
    return t.startswith('"NaN"')


def _order_diverges(a: str, b: str) -> bool:
    """pyoxigraph orders same-language strings, errs on NaN and booleans, and calls identical
    terms of any kind equal; SPARQL 1.1 does none of these."""
    return (_nan(a) or _nan(b) or (_lang(a) and _lang(b))
            or const_kind(a) == const_kind(b) == "bool"
            or (a == b and const_kind(a) not in ORDERED_KINDS))


def _equal_diverges(a: str, b: str) -> bool:
    """pyoxigraph: a language-tagged literal is unequal to a literal of an unknown datatype; SPARQL
    1.1 (and the brief): an error."""
    return {const_kind(a), const_kind(b)} == {"lang", "other"}


def _ox_term(term: str) -> ox.Literal | ox.NamedNode | ox.BlankNode:
    return next(ox.parse(f"<urn:s> <urn:p> {term} .", format=ox.RdfFormat.N_TRIPLES)).object


# pyoxigraph stores typed literals by value: "01"^^xsd:integer comes back as "1", "-5"^^xsd:int as
# "-5"^^xsd:integer, "0"^^xsd:boolean as "false". RDF term identity (sameTerm, STR, DATATYPE) keeps
# what was written, as the lake does, so rows holding such terms are not comparable there.
def _stored(term: str) -> str:
    """How pyoxigraph gives ``term`` back once stored."""
    store = ox.Store()
    store.add(ox.Quad(ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), _ox_term(term)))
    return str(next(iter(store.quads_for_pattern(None, None, None))).object)


REWRITTEN = {t for t in TERMS if _stored(t) != t}


def _rewritten(a: str, b: str) -> bool:
    return a in REWRITTEN or b in REWRITTEN


def _ebv_diverges(a: str, b: str) -> bool:
    """An invalid number's effective boolean value: false in SPARQL 1.1, an error in pyoxigraph."""
    return a.startswith('"abc"')


Skip = Callable[[str, str], bool] | None


def against(term: str, diverges: Callable[[str, str], bool]) -> Callable[[str, str], bool]:
    """A divergence test for ``?a`` compared with the constant ``term``."""
    return lambda a, _: diverges(a, term)


EXPRESSIONS: list[tuple[str, Skip]] = [
    ("?a = ?b", _equal_diverges),
    ("?a != ?b", _equal_diverges),
    ("?a < ?b", _order_diverges),
    ("?a <= ?b", _order_diverges),
    ("?a > ?b", _order_diverges),
    ("?a >= ?b", _order_diverges),
    ("sameTerm(?a, ?b)", _rewritten),
    ("?a = 1", None),
    ("?a > 0.5", against(f'"0.5"^^<{X}decimal>', _order_diverges)),
    ("?a <= 1e0", against(f'"1e0"^^<{X}double>', _order_diverges)),
    ('?a < "b"', None),
    ('?a = "a"@EN', against('"a"@en', _equal_diverges)),
    ("?a = <http://x/a>", None),
    (f'?a >= "2020-01-01T05:00:00Z"^^<{X}dateTime>', None),
    ('?a IN (1, "a", <http://x/a>)', None),
    ('?a NOT IN (1, "a")', None),
    ("isIRI(?a)", None),
    ("isURI(?a) || isBlank(?a)", None),
    ("isLiteral(?a)", None),
    ("isNumeric(?a)", None),
    ("bound(?a) && !bound(?z)", None),
    ('lang(?a) = "en"', None),
    ('lang(?a) = ""', None),
    ("lang(?a) = lang(?b)", None),
    ('langMatches(lang(?a), "en")', None),
    ('langMatches(lang(?a), "*")', None),
    ("datatype(?a) = xsd:integer", _rewritten),
    ("datatype(?a) = xsd:string || datatype(?a) = rdf:langString", None),
    ("datatype(?a) = datatype(?b)", _rewritten),
    ('str(?a) = "a"', _rewritten),
    ('str(?a) = "http://x/a"', None),
    ("str(?a) < str(?b)", _rewritten),
    ('regex(?a, "^a")', None),
    ('regex(?a, "^A", "i")', None),
    ('regex(str(?a), "x/a$")', None),
    ('regex(?a, "b.n", "s")', None),
    ('regex(?a, ".", "q")', None),
    ("?a", _ebv_diverges),
    ("!?a", _ebv_diverges),
    ("?a || ?b", lambda a, b: _ebv_diverges(a, b) or _ebv_diverges(b, a)),
    ("?a && !?b", lambda a, b: _ebv_diverges(a, b) or _ebv_diverges(b, a)),
    ("?a = ?z", None),
    ("?z || isIRI(?a)", None),
    ("?z && isIRI(?a)", None),
    ("!(?a = ?z) || ?a = 1", None),
    ("(?a > 1) = (?b > 1)", lambda a, b: _nan(a) or _nan(b)),
]

# More for the in-process operators against the SQL: regular expressions Python must read as Java
# does (or leave to the SQL), and comparisons over the edge terms.
IN_PROCESS_EXPRESSIONS = [
    r'regex(?a, "\\d")', r'regex(?a, "^[a-c]+\\s?", "i")', r'regex(?a, "^.$", "s")', r'regex(?a, "a.b")',
    r'regex(?a, "a$|^b", "m")', r'regex(?a, "\\w+ \\W")', r'regex(?a, "(?:a|x)b*?$")', r'regex(?a, "\\bx")',
    r'regex(?a, "[^\\s]{2,}")', r'regex(?a, "\\x41|b", "i")', r'regex(?a, "A", "iq")',
    r'regex(?a, "\\p{L}")', r'regex(?a, "(?<n>a)")', r'regex(?a, "[a-z&&[^b]]")',
    r'regex(?a, "^\\w$|\\d|a\\sb")', r'regex(?a, "x.y|a.b")',
    '?a = ?b && ?a < ?b || ?a > 1', '?a != 0.1e0', 'isNumeric(?a) && ?a >= 99999999999999999999',
]
COMPARED = [e for e, _ in EXPRESSIONS] + IN_PROCESS_EXPRESSIONS


def _parsed(expr: str):
    return parse_query(f"{PREFIXES}SELECT * {{ ?r <urn:a> ?a . ?r <urn:b> ?b FILTER({expr}) }}").filters[0]


def _filter(expr: str) -> str:
    return filter_sql(_parsed(expr), {"a", "b", "r"})


@pytest.fixture(scope="module")
def oracle() -> ox.Store:
    store = ox.Store()
    for i, (a, b) in enumerate(PAIRS):
        row = ox.NamedNode(f"urn:row:{i}")
        store.add(ox.Quad(row, ox.NamedNode("urn:a"), _ox_term(a)))
        store.add(ox.Quad(row, ox.NamedNode("urn:b"), _ox_term(b)))
    return store


def _oracle_values(store: ox.Store, expr: str) -> dict[int, bool | None]:
    values: dict[int, bool | None] = {}
    query = f"{PREFIXES}SELECT ?r ?v {{ ?r <urn:a> ?a . ?r <urn:b> ?b BIND((({expr}) && true) AS ?v) }}"
    for solution in store.query(query):
        value = solution["v"]
        values[int(solution["r"].value.rsplit(":", 1)[1])] = None if value is None else value.value == "true"
    return values


@pytest.fixture(scope="module")
def spark_values(spark) -> dict[str, dict[int, bool | None]]:
    """Every expression on every pair. Spark's cost here is compiling the generated code, once
    per job: a few jobs of several expressions each are much cheaper than one job per expression
    (and than one huge job)."""
    frame = spark.createDataFrame([(i, a, b) for i, (a, b) in enumerate(IN_PROCESS_PAIRS)],
                                  "r int, a string, b string")
    frame = frame.cache()
    values: dict[str, dict[int, bool | None]] = {}
    for start in range(0, len(COMPARED), 8):
        chunk = COMPARED[start:start + 8]
        rows = frame.selectExpr("r", *[f"{_filter(e)} AS e{k}" for k, e in enumerate(chunk)]).collect()
        values.update({e: {row["r"]: row[f"e{k}"] for row in rows} for k, e in enumerate(chunk)})
    frame.unpersist()
    return values


@pytest.mark.parametrize("expr,skip", EXPRESSIONS, ids=[e for e, _ in EXPRESSIONS])
def test_filter_matches_pyoxigraph(expr: str, skip: Skip, oracle, spark_values) -> None:
    want = _oracle_values(oracle, expr)
    got = spark_values[expr]
    wrong = [(a, b, got[i], want[i]) for i, (a, b) in enumerate(PAIRS)
             if not (skip and skip(a, b)) and got[i] != want[i]]
    assert not wrong, f"{len(wrong)} rows differ (a, b, spark, pyoxigraph), e.g. {wrong[:5]}"


DIVERGENCES = [
    ('?a < ?b', '"a"@en', '"b"@en', None),                           # language strings are not ordered
    ('?a < ?b', f'"0"^^<{X}boolean>', f'"true"^^<{X}boolean>', True),   # booleans are (false < true)
    ('?a < ?b', f'"1"^^<{X}integer>', f'"NaN"^^<{X}double>', False),     # NaN compares false
    ('?a >= ?b', f'"NaN"^^<{X}double>', f'"NaN"^^<{X}double>', False),
    ('?a <= ?b', "<http://x/a>", "<http://x/a>", None),               # IRIs are not ordered
    ('?a = ?b', '"a"@en', '"x"^^<http://u/dt>', None),                 # unknown datatype: error
    ('sameTerm(?a, ?b)', f'"1"^^<{X}integer>', f'"01"^^<{X}integer>', False),
    ('str(?a) = "01"', f'"01"^^<{X}integer>', '""', True),             # lexical forms are kept
    ('!?a', f'"abc"^^<{X}integer>', '""', True),                       # invalid number: EBV false
]


def test_known_divergences(spark) -> None:
    """Where SPARQL 1.1 (and the brief) and pyoxigraph part ways, we follow the former (one job:
    row k holds case k's terms, column k its expression)."""
    frame = spark.createDataFrame([(k, a, b) for k, (_, a, b, _) in enumerate(DIVERGENCES)],
                                  "k int, a string, b string")
    rows = frame.selectExpr("k", *[f"{_filter(e)} AS e{k}" for k, (e, *_) in enumerate(DIVERGENCES)]).collect()
    got = {row["k"]: row[f"e{row['k']}"] for row in rows}
    wrong = [(case, got[k]) for k, case in enumerate(DIVERGENCES) if got[k] is not case[3]]
    assert not wrong, wrong


def test_filter_rejects_error_rows(spark) -> None:
    """As a WHERE predicate, an error (NULL) drops the row, and || / && recover from it."""
    frame = spark.createDataFrame([("<http://x/a>",), ('"2"',), (f'"2"^^<{X}integer>',)], "a string")
    assert [r["a"] for r in frame.where(_filter("?a > 1")).collect()] == [f'"2"^^<{X}integer>']
    assert frame.where(_filter("?a > 1 || isIRI(?a)")).count() == 2
    assert frame.where(_filter("!(?a > 1)")).count() == 0     # IRI and string: error; 2 > 1: true


def test_conditions_decided_in_process_agree_with_the_sql(spark_values) -> None:
    """What the Arrow engine decides in process (views.expressions.holds over views.operators) is
    the SQL's value, on every pair of terms and edge terms, for every expression; the operators
    leave few rows undecided, and exactly the ones they should."""
    decided, undecided, plain = 0, set(), set(PAIRS)
    for expr in COMPARED:
        form = compile_filter(_parsed(expr), {"a", "b", "r"}).form
        assert form is not None, expr
        for i, (a, b) in enumerate(IN_PROCESS_PAIRS):
            try:
                value = holds(form, {"a": a, "b": b, "r": "<urn:r>"})
            except Undecided:
                undecided.add((expr, a, b))
                continue
            decided += 1
            assert value == spark_values[expr][i], (expr, a, b, value, spark_values[expr][i])
    # Over the ordinary terms, only the four patterns outside the shared syntax and text with a
    # U+2028 (or, under "i", non-ASCII text; under "m", a newline) are left undecided
    left_plain = [(expr, a) for expr, a, b in undecided if (a, b) in plain]
    assert len(left_plain) < 0.03 * len(COMPARED) * len(PAIRS) and decided > 130_000, (decided, len(left_plain))
    assert all(expr.startswith("regex") for expr, _ in left_plain)
    left = {expr for expr, *_ in undecided}
    for expr in (r'regex(?a, "\\bx")', r'regex(?a, "\\p{L}")', r'regex(?a, "(?<n>a)")'):
        assert sum(e == expr and const_kind(a) in ("str", "lang") for e, a, _ in undecided) > 0, expr
    assert 'isNumeric(?a) && ?a >= 99999999999999999999' in left          # beyond DECIMAL(38,18)
    assert ("?a < ?b", f'"2020-01-01T00:00:00.1234567Z"^^<{X}dateTime>', f'"2020-01-01T14:00:00+14:00"^^<{X}dateTime>') \
        in undecided                                                       # beyond microseconds
    # a plain pattern is left undecided only over text holding a terminator Java knows and Python not
    assert all("\\r" in a or "\u2028" in a for e, a, _ in undecided if e == r'regex(?a, "\\d")')
