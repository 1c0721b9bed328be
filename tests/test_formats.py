"""Format parsers: each format parsed into the expected messages, bad lines with their reasons,
and every line of every example file accounted for."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyoxigraph
import pytest

from schemas.formats import RAW_LIMIT, BadLine, Message, parse
from schemas.formats.jsonl import parse_jsonl_lines
from schemas.formats.ntriples import parse_lines
from schemas.terms import XSD

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EX = "http://ex.org/"
INT = f"<{XSD}integer>"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(timezone.utc)


def iri(local: str) -> str:
    return f"<{EX}{local}>"


def reasons(result) -> dict[int, str]:
    return {b.line: b.reason for b in result.bad}


# -- RDF Patch ----------------------------------------------------------------------------------
PATCH = f"""# a comment
PA ex: <{EX}> .
PA xsd: <{XSD}> .
H id <urn:event:1> .
H timestamp "2025-01-01T10:00:00+01:00"^^xsd:dateTime .
TX .
A ex:alice ex:knows ex:bob .
A ex:alice ex:age "01"^^xsd:integer ex:people .
TC .

D ex:alice ex:knows ex:bob .
TX .
H timestamp "2025-01-02T00:00:00Z"^^xsd:dateTime .
A _:x ex:label "caf\\u00E9"@FR .
TC .
PD xsd: .
""".encode()


def test_patch_round_trip():
    result = parse("changes.rdfp", PATCH)
    t1, t2 = utc("2025-01-01T09:00:00+00:00"), utc("2025-01-02T00:00:00+00:00")
    assert result.messages == [
        Message(1, 7, "line:6", t1, "insert", iri("alice"), iri("knows"), iri("bob"), None, "urn:event:1"),
        Message(2, 8, "line:6", t1, "insert", iri("alice"), iri("age"), f'"01"^^{INT}', f"{EX}people",
                "urn:event:1"),
        Message(3, 11, "line:11", None, "delete", iri("alice"), iri("knows"), iri("bob")),
        Message(4, 14, "line:12", t2, "insert", "_:x", iri("label"), '"café"@fr'),
    ]
    assert result.bad == []
    assert (result.lines, result.skipped) == (16, 12) and result.balanced


def test_patch_transactions_are_all_or_nothing():
    text = f"""PA ex: <{EX}> .
TX .
A ex:a ex:b ex:c .
TA .
TX .
A ex:a ex:b ex:d .
A ex:a ex:b "bad\\q" .
TC .
TC .
H id <urn:x> .
TX .
A ex:a ex:b ex:e .
H timestamp "2025-01-01T00:00:00Z" .
TC .
TX .
TX .
A ex:a ex:b ex:f .
""".encode()
    result = parse("t.patch", text)
    assert result.messages == []
    assert reasons(result) == {
        3: "transaction aborted",
        6: "transaction rejected: bad row at line 7",
        7: "bad escape \\q",
        9: "TC without TX",
        12: "transaction rejected: bad row at line 13",
        13: "header after rows in a transaction",
        16: "TX inside the transaction opened at line 15",
        17: "transaction not committed (no TC before end of file)",
    }
    assert result.balanced


def test_patch_row_errors():
    text = f"""PA ex: <{EX}> .
A ex:a ex:b .
A ex:a ex:b ex:c
A ex:a ex:b ex:c . extra
A ex:a ex:b ex:c _:g .
R ex:a ex:b ex:c .
PD ex: .
A ex:a ex:b ex:c .
PD ex: .
A <{EX}a> <{EX}b> <{EX}c> .
""".encode()
    result = parse("t.rdfp", text)
    assert reasons(result) == {
        2: "a statement needs 3 terms, found 2",
        3: "missing ' .' at end of statement",
        4: "unexpected text after '.': 'extra'",
        5: "graph name must be an IRI",
        6: "unknown row code 'R'",
        8: "undeclared prefix 'ex:'",
        9: "PD of undeclared prefix 'ex:'",
    }
    assert [m.line for m in result.messages] == [10]
    assert result.balanced


# -- JSON Lines ---------------------------------------------------------------------------------
def jline(**fields) -> str:
    return json.dumps(fields)


def test_jsonl_round_trip():
    lines = [
        jline(time="2025-03-01T12:00:00Z", op="+", s=iri("a"), p=iri("b"), o='"x"'),
        jline(time="2025-03-01T13:00:00-02:00", op="-", s=iri("a"), p=iri("b"), o=f'"2"^^{INT}',
              stream=f"{EX}g", event="e1"),
        "",
        jline(time="2025-03-01T15:00:00+00:00", op="+", s="_:n", p=iri("b"), o='"y"@EN',
              stream=f"<{EX}g2>", event="e1", extra={"ignored": True}),
    ]
    result = parse("f.jsonl", "\n".join(lines).encode())
    assert result.messages == [
        Message(1, 1, "line:1", utc("2025-03-01T12:00:00+00:00"), "insert", iri("a"), iri("b"), '"x"'),
        Message(2, 2, "event:e1", utc("2025-03-01T15:00:00+00:00"), "delete", iri("a"), iri("b"),
                f'"2"^^{INT}', f"{EX}g"),
        Message(3, 4, "event:e1", utc("2025-03-01T15:00:00+00:00"), "insert", "_:n", iri("b"), '"y"@en',
                f"{EX}g2"),
    ]
    assert (result.lines, result.skipped, result.bad) == (4, 1, [])


def test_jsonl_bad_lines_name_their_problem():
    good = dict(time="2025-03-01T12:00:00Z", op="+", s=iri("a"), p=iri("b"), o='"x"')
    lines = [
        jline(**{**good, "op": "add"}),
        jline(**{k: v for k, v in good.items() if k != "p"}),
        jline(**{**good, "time": "2025-03-01T12:00:00"}),
        jline(**{**good, "time": "March 1st"}),
        jline(**{**good, "o": '"x'}),
        jline(**{**good, "s": 42}),
        jline(**{**good, "stream": "relative/graph"}),
        jline(**{**good, "event": 7}),
        '{"time": ',
        "[1, 2]",
    ]
    result = parse("f.ndjson", "\n".join(lines).encode())
    assert result.messages == []
    assert reasons(result) == {
        1: "unknown op 'add' (expected '+' or '-')",
        2: "missing field 'p'",
        3: "time '2025-03-01T12:00:00' has no UTC offset",
        4: "bad time 'March 1st': not ISO-8601",
        5: "bad term in 'o': unterminated literal",
        6: "field 's' is not a string",
        7: "bad stream: relative IRI",
        8: "field 'event' is not a string",
        9: "invalid JSON: Expecting value (column 10)",
        10: "line is not a JSON object",
    }


# -- N-Triples / N-Quads ------------------------------------------------------------------------
def test_ntriples_round_trip_matches_oxigraph():
    data = (EXAMPLES / "landing" / "01_initial.nt").read_bytes()
    result = parse("01_initial.nt", data)
    oracle = {(str(q.subject), str(q.predicate), str(q.object))
              for q in pyoxigraph.parse(data, format=pyoxigraph.RdfFormat.N_TRIPLES)}
    assert {(m.s, m.p, m.o) for m in result.messages} == oracle
    assert len(result.messages) == len(oracle) == 26
    assert {m.event_key for m in result.messages} == {"file"}
    assert all(m.op == "insert" and m.event_time is None and m.stream is None for m in result.messages)


def test_ntriples_lines_crlf_bom_and_comments():
    data = (b"\xef\xbb\xbf<http://ex.org/a> <http://ex.org/b> <http://ex.org/c> . # trailing comment\r\n"
            b"   \r\n# comment\n<http://ex.org/a><http://ex.org/b>\"x\".")
    result = parse("x.nt", data)
    assert [(m.line, m.o) for m in result.messages] == [(1, iri("c")), (4, '"x"')]
    assert (result.lines, result.skipped) == (4, 2)


def test_nquads_graph_becomes_the_stream():
    data = (f"{iri('a')} {iri('b')} {iri('c')} {iri('g')} .\n"
            f"{iri('a')} {iri('b')} {iri('c')} .\n"
            f"{iri('a')} {iri('b')} {iri('c')} \"g\" .\n").encode()
    result = parse("x.nq", data)
    assert [(m.line, m.stream) for m in result.messages] == [(1, f"{EX}g"), (2, None)]
    assert reasons(result) == {3: "graph name must be an IRI"}
    nt = parse("x.nt", data)
    assert reasons(nt) == {1: "too many terms (at most 3)", 3: "too many terms (at most 3)"}


def test_positions_are_left_to_the_bronze_suite():
    """A literal subject parses: the bronze expectation suite rejects it at ingest."""
    result = parse("x.nt", f'"lit" {iri("p")} {iri("o")} .\n'.encode())
    assert [m.s for m in result.messages] == ['"lit"']


# -- Turtle -------------------------------------------------------------------------------------
TURTLE = f"""@prefix ex: <{EX}> .
@prefix xsd: <{XSD}> .
ex:alice ex:knows ex:bob , [ ex:name "Anon" ] ;
         ex:age "01"^^xsd:integer ;
         ex:label "A"@EN .
ex:alice ex:knows ex:bob .
""".encode()


def test_turtle_round_trip_is_deterministic():
    first, second = parse("g.ttl", TURTLE), parse("g.ttl", TURTLE)
    assert first.messages == second.messages
    triples = [(m.s, m.p, m.o) for m in first.messages]
    anon = next(m.s for m in first.messages if m.p == iri("name"))
    assert anon.startswith("_:t") and anon.endswith("b1")
    assert sorted(triples) == sorted([
        (iri("alice"), iri("knows"), iri("bob")),
        (iri("alice"), iri("knows"), anon),
        (anon, iri("name"), '"Anon"'),
        (iri("alice"), iri("age"), f'"01"^^{INT}'),
        (iri("alice"), iri("label"), '"A"@en'),
    ])
    assert {m.line for m in first.messages} == {0} and {m.event_key for m in first.messages} == {"file"}
    assert (first.lines, first.line_based) == (6, False)


def test_turtle_syntax_error_quarantines_the_file():
    data = b"@prefix ex: <http://ex.org/> .\nex:a ex:b ex:c\nex:d ex:e ex:f .\n" + b"# pad\n" * 1000
    result = parse("bad.ttl", data)
    assert result.messages == []
    [bad] = result.bad
    assert bad.line == 3 and bad.reason.startswith("Turtle syntax error: expected '.'")
    assert len(bad.raw) == 4096 and data.decode().startswith(bad.raw)


def test_turtle_ill_typed_literal_is_one_bad_triple():
    result = parse("x.ttl", f'<{EX}a> <{EX}b> "z"^^{INT}, "3"^^{INT} .'.encode())
    assert [m.o for m in result.messages] == [f'"3"^^{INT}']
    assert result.bad == [BadLine(0, f'<{EX}a> <{EX}b> "z"^^{INT} .',
                                  "invalid lexical form 'z' for xsd:integer")]


# -- bytes, sizes, extensions -------------------------------------------------------------------
def test_invalid_utf8_is_one_bad_line():
    data = f"{iri('a')} {iri('b')} \"ok\" .\n".encode() + b"<http://ex.org/\xff> <http://ex.org/b> \"x\" .\n"
    result = parse("x.nt", data)
    assert len(result.messages) == 1
    assert result.bad == [BadLine(2, '<http://ex.org/\\xff> <http://ex.org/b> "x" .', "invalid UTF-8 at byte 15")]
    jsonl = parse("x.jsonl", b'{"time": "\xc3"}')
    assert jsonl.bad[0].reason == "invalid UTF-8 at byte 10"


def test_long_raw_text_is_truncated():
    line = '{"time": "2025-01-01T00:00:00Z", "op": "+", "s": "<http://a/b>", "p": "<http://a/c>", "o": "\\"' \
           + "x" * 1_000_000 + '"}'
    [bad] = parse("big.jsonl", line.encode()).bad
    assert len(bad.raw) == RAW_LIMIT and bad.reason == "bad term in 'o': unterminated literal (truncated)"


@pytest.mark.parametrize("name", ["empty.nt", "empty.nq", "empty.rdfp", "empty.jsonl", "empty.ttl"])
def test_empty_file_yields_nothing(name):
    result = parse(name, b"")
    assert (result.lines, result.messages, result.bad, result.skipped) == (0, [], [], 0)


def test_unsupported_extension():
    result = parse("notes.CSV", b"a,b\n")
    assert result.format == "unsupported"
    assert result.bad == [BadLine(0, "", "unsupported file type .csv")]
    assert parse("README", b"x").bad[0].reason == "unsupported file type (no extension)"


# -- every example line accounted -----------------------------------------------------------------
#: file -> (lines, messages, bad lines, skipped lines)
EXPECTED_COUNTS = {
    "landing/01_initial.nt": (28, 26, 0, 2),
    "landing/02_enrolments.rdfp": (23, 6, 0, 17),
    "landing/03_updates.jsonl": (6, 6, 0, 0),
    "landing/04_semester2.rdfp": (17, 4, 0, 13),
    "bad_input/mixed.rdfp": (36, 5, 17, 14),
    "bad_input/mixed.jsonl": (12, 3, 8, 1),
    "bad_input/huge_line.jsonl": (2, 1, 1, 0),
    "bad_input/latin1_and_more.nt": (7, 2, 5, 0),
    "bad_input/graphs.nq": (4, 2, 2, 0),
    "bad_input/empty.nq": (0, 0, 0, 0),
    "bad_input/broken.ttl": (4, 0, 1, 0),
    "bad_input/roster.csv": (0, 0, 1, 0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_example_files_are_fully_accounted(name):
    result = parse(name, (EXAMPLES / name).read_bytes())
    assert (result.lines, len(result.messages), len(result.bad), result.skipped) == EXPECTED_COUNTS[name]
    assert result.balanced


def test_example_corpus_is_complete():
    on_disk = {str(p.relative_to(EXAMPLES)) for folder in ("landing", "bad_input")
               for p in (EXAMPLES / folder).iterdir()}
    assert on_disk == set(EXPECTED_COUNTS)


def test_jsonl_native_reader_gives_what_the_line_reader_gives():
    """A file of good lines is read by pyarrow's JSON reader: its messages (terms canonical,
    times in UTC, events, streams) are exactly those the line-by-line reader makes."""
    lines = [
        jline(time="2025-03-01T12:00:00Z", op="+", s=iri("a"), p=iri("b"), o='"x"'),
        jline(time="2025-03-01T13:00:00.5-02:00", op="-", s=iri("a"), p=iri("b"), o=f'"2"^^{INT}',
              stream=f"{EX}g", event="e1"),
        jline(time="2025-03-01T15:00:00.123456+01:00", op="+", s="_:n", p=iri("b"), o='"y"@EN',
              stream=f"<{EX}g2>", event="e1", extra={"ignored": True}),
        jline(time="2025-03-01T15:00:00+00:00", op="+", s="<http://example.org/\\u00e9>", p=iri("b"),
              o='"tab\\there"', stream=None),
    ]
    data = ("\r\n".join(lines) + "\n").encode()
    native, by_line = parse("f.jsonl", data), parse_jsonl_lines(data)
    assert native.columns is not None and by_line.columns is None
    assert native.messages == by_line.messages and len(native.messages) == 4
    assert (native.lines, native.bad, native.skipped) == (by_line.lines, by_line.bad, by_line.skipped) == (4, [], 0)


@pytest.mark.parametrize("line", [
    '{"time": "2025-03-01T12:00:00", "op": "+", "s": "<a:s>", "p": "<a:p>", "o": "<a:o>"}',       # no offset
    '{"time": "2025-03-01 12:00:00Z", "op": "+", "s": "<a:s>", "p": "<a:p>", "o": "<a:o>"}',      # not the common form
    '{"time": "2025-03-01T12:00:00Z", "op": "+", "s": "<a:s>", "p": "<a:p>", "o": "<a:o>", "event": null}',
    '{"time": "2025-03-01T12:00:00Z", "op": "+", "s": "<a:s>", "p": "<a:p>", "o": 3}',
    '{"time": "2025-03-01T12:00:00Z", "op": "+", "s": "<a:s>", "p": "<a:p>"}',
    '{"time": "2025-03-01T12:00:00Z", "op": "+", "s": "<a:s>", "p": "<a:p>", "o": "\\"open"}',
    '{"time": "2025-03-01T12:00:00Z", "op": "+", "s": "<a:s>", "p": "<a:p>", "o": "<a:o>"} {"op": "+"}',
])
def test_jsonl_a_file_the_native_reader_cannot_vouch_for_is_read_line_by_line(line):
    good = '{"time": "2025-03-01T12:00:00Z", "op": "+", "s": "<a:s>", "p": "<a:p>", "o": "<a:o>"}'
    data = f"{good}\n{line}\n".encode()
    result = parse("f.jsonl", data)
    assert result.columns is None
    assert result.messages == parse_jsonl_lines(data).messages and result.balanced


#: Terms whose spelling differs between writers: escapes, language tag case, xsd:string, Unicode.
TRICKY_OBJECTS = ['"x"', f'"x"^^<{XSD}string>', '"x"@EN-us', '"tab\\there"', '"a\\u00e9b"', '"é"', '"q\\"uote"',
                  '"back\\\\slash"', '"nl\\nx"', '"\\U0001F600"', '"\\b\\f"', f'"01"^^<{XSD}integer>',
                  '<http://ex.org/\\u00e9>', '_:b1', '"\\u0007"', '"\x7f"', '"\u2028"']


@pytest.mark.parametrize("name", ["f.nt", "f.nq"])
def test_ntriples_native_reader_gives_what_the_line_reader_gives(name):
    """A file pyoxigraph parses whole is read natively: the same messages, line numbers and skipped
    lines as the line-by-line reader, on terms whose spellings differ between writers."""
    graph = f" <{EX}g>" if name.endswith(".nq") else ""
    lines = ["# a comment", ""] + [f"<{EX}s{k}> <{EX}p> {o}{graph if k % 2 else ''} ." for k, o in enumerate(TRICKY_OBJECTS)]
    data = ("\r\n".join(lines) + "\n").encode()
    fmt, terms = ("n-quads", 4) if name.endswith(".nq") else ("n-triples", 3)
    native, by_line = parse(name, data), parse_lines(data, fmt, terms)
    assert native.columns is not None and by_line.columns is None
    assert native.messages == by_line.messages and len(native.messages) == len(TRICKY_OBJECTS)
    assert (native.lines, native.skipped, native.bad) == (by_line.lines, by_line.skipped, by_line.bad) == (len(lines), 2, [])


@pytest.mark.parametrize("line", ['"lit" <http://ex.org/p> <http://ex.org/o> .', "<relative> <http://ex.org/p> <http://ex.org/o> .",
                                  '<http://ex.org/s> <http://ex.org/p> "x"^^<http://www.w3.org/2001/XMLSchema#integer> .',
                                  "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o>"])
def test_ntriples_a_file_pyoxigraph_or_lakegraph_refuses_is_read_line_by_line(line):
    data = f"<{EX}s> <{EX}p> <{EX}o> .\n{line}\n".encode()
    result = parse("f.nt", data)
    assert result.columns is None
    assert result.messages == parse_lines(data, "n-triples", 3).messages and result.balanced
