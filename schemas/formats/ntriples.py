"""N-Triples and N-Quads, parsed line by line so that one bad line quarantines only itself.

The statement reader is shared with RDF Patch rows (which add prefixed names). Term positions
(a literal subject, a blank node predicate) are not rejected here: the bronze expectation suite
checks them at ingest, so their quarantine reason names the expectation that caught them. Only
the graph name is checked, because it becomes the stream IRI.
"""
from __future__ import annotations

from typing import Mapping

from schemas.terms import Term, TermError, read_term

from .base import BadLine, Message, ParseResult, counted_lines

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


def _parse(data: bytes, fmt: str, max_terms: int) -> ParseResult:
    """All statements of the file are one event (an initial load is one change)."""
    result = ParseResult(fmt)
    for number, text in counted_lines(data, result):
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


def parse_ntriples(data: bytes) -> ParseResult:
    return _parse(data, "n-triples", 3)


def parse_nquads(data: bytes) -> ParseResult:
    return _parse(data, "n-quads", 4)
