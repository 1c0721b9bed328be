"""N-Triples and N-Quads, parsed line by line so that one bad line quarantines only itself.

The statement reader is shared with RDF Patch rows (which add prefixed names). Term positions
(a literal subject, a blank node predicate) are not rejected here: the bronze expectation suite
checks them at ingest, so their quarantine reason names the expectation that caught them. Only
the graph name is checked, because it becomes the stream IRI.
"""
from __future__ import annotations

from typing import Mapping

import pyarrow as pa
import pyoxigraph as ox

from schemas.terms import CANONICAL_AS_IS, Term, TermError, canonical_nt, read_term

from .base import MESSAGE_COLUMNS, BadLine, Message, ParseResult, counted_lines, per_distinct, split_lines

_SPACE = " \t"


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _SPACE:
        pos += 1
    return pos


def parse_statement(text: str, pos: int = 0, prefixes: Mapping[str, str] | None = None,
                    max_terms: int = 4) -> list[Term]:
    """The terms of ``s p o [g] .`` starting at ``pos``; a ``#`` comment may follow the dot."""
    terms: list[Term] = []
    pos = _skip_space(text, pos)
    while pos < len(text) and text[pos] != ".":
        if len(terms) == max_terms:
            raise TermError(f"too many terms (at most {max_terms})")
        term, pos = read_term(text, pos, prefixes)
        terms.append(term)
        pos = _skip_space(text, pos)
    if pos >= len(text):
        raise TermError("missing ' .' at end of statement")
    rest = _skip_space(text, pos + 1)
    if rest < len(text) and text[rest] != "#":
        raise TermError(f"unexpected text after '.': {text[rest:rest + 20]!r}")
    if len(terms) < 3:
        raise TermError(f"a statement needs 3 terms, found {len(terms)}")
    return terms


def stream_of(graph: Term | None) -> str | None:
    """The stream IRI named by a graph term; a graph must be an IRI."""
    if graph is None:
        return None
    if graph.kind != "iri":
        raise TermError("graph name must be an IRI")
    return graph.value


def _statement_lines(data: bytes, first_line: int) -> tuple[int, list[int]] | None:
    """The line count of ``data`` and the numbers of its statement lines (neither blank nor a
    comment), counted from ``first_line``; None when it is not UTF-8 or starts with a byte order
    mark (the line reader reports those)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = split_lines(data)
    return len(lines), [k for k, line in enumerate(lines, start=first_line)
                        if (text := line.strip()) and not text.startswith(b"#")]


def _read_natively(data: bytes, fmt: str, first_line: int) -> ParseResult | None:
    """The file parsed by pyoxigraph's N-Triples/N-Quads parser, when it takes every statement line
    (one statement per line) and every term is one lakegraph takes too: then its terms, written as
    N-Triples and canonicalised once per distinct term, are exactly what the line reader gives
    (tested on the escapes, language tags and datatypes where spellings differ). None otherwise:
    the line reader then names each bad line."""
    counted = _statement_lines(data, first_line)
    if counted is None:
        return None
    count, numbers = counted
    try:
        quads = list(ox.parse(data, format=ox.RdfFormat.N_QUADS if fmt == "n-quads" else ox.RdfFormat.N_TRIPLES))
    except SyntaxError:
        return None
    if len(quads) != len(numbers):
        return None
    graphs = [q.graph_name for q in quads] if fmt == "n-quads" else []
    if any(isinstance(g, ox.BlankNode) for g in graphs):
        return None
    spelled = ([str(q.subject) for q in quads], [str(q.predicate) for q in quads], [str(q.object) for q in quads])
    try:
        terms = [per_distinct(pa.array(column, pa.string()), canonical_nt, CANONICAL_AS_IS) for column in spelled]
    except TermError:
        return None
    n = len(quads)
    streams = pa.array([g.value if isinstance(g, ox.NamedNode) else None for g in graphs] or [None] * n, pa.string())
    columns = pa.table([pa.array(numbers, pa.int64()), pa.repeat(pa.scalar("file"), n),
                        pa.nulls(n, MESSAGE_COLUMNS.field("event_time").type), pa.repeat(pa.scalar("insert"), n),
                        *terms, streams, pa.nulls(n, pa.string())], schema=MESSAGE_COLUMNS)
    return ParseResult(fmt, lines=count, skipped=count - n, columns=columns)


def _parse(data: bytes, fmt: str, max_terms: int, first_line: int) -> ParseResult:
    """All statements of the file are one event (an initial load is one change)."""
    native = _read_natively(data, fmt, first_line)
    if native is not None:
        return native
    return parse_lines(data, fmt, max_terms, first_line)


def parse_lines(data: bytes, fmt: str, max_terms: int, first_line: int = 1) -> ParseResult:
    """The lines read one at a time, each bad line with its fault."""
    result = ParseResult(fmt)
    for number, text in counted_lines(data, result, first_line):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            result.skipped += 1
            continue
        try:
            terms = parse_statement(text, max_terms=max_terms)
            stream = stream_of(terms[3] if len(terms) == 4 else None)
        except TermError as exc:
            result.bad.append(BadLine.of(number, text, str(exc)))
            continue
        s, p, o = (t.nt for t in terms[:3])
        result.messages.append(Message(result.next_seq(), number, "file", None, "insert", s, p, o, stream))
    return result


def parse_ntriples(data: bytes, first_line: int = 1) -> ParseResult:
    return _parse(data, "n-triples", 3, first_line)


def parse_nquads(data: bytes, first_line: int = 1) -> ParseResult:
    return _parse(data, "n-quads", 4, first_line)
