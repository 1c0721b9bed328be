"""Turtle through rdflib: the whole file is one event, a syntax error quarantines the whole file.

Two rdflib defaults are worked around so that a re-parse gives the same bronze rows: literals are
parsed with ``NORMALIZE_LITERALS`` off (quoted lexical forms are kept; rdflib still rewrites numeric
shorthands such as ``01`` to ``1``), and blank nodes, which rdflib names at random, are renamed by
order of first appearance, scoped by the file's hash (Turtle blank nodes are local to their
document). A triple repeated in the document is one message (a graph is a set).
"""
from __future__ import annotations

import hashlib
import logging
from contextlib import contextmanager
from typing import Iterator

import rdflib
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.plugins.parsers.notation3 import BadSyntax
from rdflib.term import Node

from schemas.terms import Term, TermError

from .base import BadLine, Message, ParseResult, split_lines

#: Raw text kept for a file rejected by the Turtle parser.
HEAD_CHARS = 4096


class _Recorder(Graph):
    """A graph that also remembers its triples in document order (rdflib's store does not)."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[tuple[Node, Node, Node]] = []

    def add(self, triple):  # type: ignore[override]
        self.order.append(triple)
        return super().add(triple)


@contextmanager
def _lexical_forms_kept() -> Iterator[None]:
    """rdflib settings for one parse: keep lexical forms, and do not log a traceback for each
    ill-typed literal (we quarantine those ourselves, with a one-line reason)."""
    saved = rdflib.NORMALIZE_LITERALS
    term_log = logging.getLogger("rdflib.term")
    level = term_log.level
    rdflib.NORMALIZE_LITERALS = False
    term_log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        rdflib.NORMALIZE_LITERALS = saved
        term_log.setLevel(level)


def _term(node: Node, bnodes: dict[BNode, str], scope: str) -> Term:
    if isinstance(node, URIRef):
        return Term("iri", str(node))
    if isinstance(node, BNode):
        return Term("bnode", bnodes.setdefault(node, f"t{scope}b{len(bnodes) + 1}"))
    if isinstance(node, Literal):
        return Term("literal", str(node), str(node.datatype) if node.datatype else None, node.language)
    raise TermError(f"unsupported node {type(node).__name__}")


def parse_turtle(data: bytes, first_line: int = 1) -> ParseResult:
    """A whole Turtle document (``first_line`` is always 1: Turtle is never read in chunks)."""
    result = ParseResult("turtle", lines=len(split_lines(data)), line_based=False)
    head = data[:HEAD_CHARS * 4].decode("utf-8", errors="backslashreplace")[:HEAD_CHARS]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        result.bad.append(BadLine(line, head, f"invalid UTF-8 at byte {exc.start}"))
        return result
    graph = _Recorder()
    try:
        with _lexical_forms_kept():
            graph.parse(data=text, format="turtle")
    except BadSyntax as exc:  # args: (uri, 0-based line, text, offset, why)
        result.bad.append(BadLine(exc.args[1] + 1, head, f"Turtle syntax error: {exc.args[4]}"))
        return result
    except Exception as exc:  # rdflib raises assorted other errors on bad input
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        result.bad.append(BadLine(0, head, f"Turtle syntax error: {reason}"))
        return result
    scope = hashlib.sha256(data).hexdigest()[:12]
    bnodes: dict[BNode, str] = {}
    seen: set[tuple[str, str, str]] = set()
    for s, p, o in graph.order:
        try:
            triple = tuple(_term(node, bnodes, scope).nt for node in (s, p, o))
        except TermError as exc:
            result.bad.append(BadLine.of(0, f"{s.n3()} {p.n3()} {o.n3()} .", str(exc)))
            continue
        if triple not in seen:
            seen.add(triple)
            result.messages.append(Message(result.next_seq(), 0, "file", None, "insert", *triple))
    return result
