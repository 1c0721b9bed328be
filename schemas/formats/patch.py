"""RDF Patch (https://afs.github.io/rdf-patch/), read line by line for per-line quarantine reasons.

A ``TX`` ... ``TC`` transaction is one event; a row outside a transaction is an event of its own.
Transactions are all or nothing: the rows of an aborted (``TA``) or unfinished transaction, and
the rows of a transaction that contains a bad row, are quarantined rather than applied in part.
``H id`` and ``H timestamp`` headers (before ``TX``, or inside it before any row) name and date the
next event only; other headers are accepted and ignored. A fourth term on a row names the graph,
which becomes the message's stream.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from schemas.terms import TermError, read_term

from .base import BadLine, Message, ParseResult, decode, parse_time
from .ntriples import parse_statement, stream_of

_CODE = re.compile(r"(\S+)\s*(.*)")
_PREFIX = re.compile(r"((?:[A-Za-z](?:[\w.\-]*[\w\-])?)?):\s*")
_END = re.compile(r"\s*(\.\s*)?(#.*)?")
_OPS = {"A": "insert", "D": "delete"}


@dataclass
class _Row:
    line: int
    text: str
    op: str
    s: str
    p: str
    o: str
    stream: str | None


@dataclass
class _Transaction:
    line: int
    rows: list[_Row] = field(default_factory=list)
    bad_line: int | None = None


@dataclass
class _Headers:
    """The headers waiting for the next event."""

    event_id: str | None = None
    time: datetime | None = None


def _check_end(rest: str, what: str) -> None:
    if not _END.fullmatch(rest):
        raise TermError(f"unexpected text after {what}: {rest[:20]!r}")


class PatchReader:
    """A patch read chunk by chunk (:mod:`.chunks`): prefixes, headers and an open transaction
    carry over from one chunk to the next. Each call gives what its lines decided; the rows of a
    transaction come out with the chunk holding its ``TC`` (or, rejected, at :meth:`end`)."""

    def __init__(self) -> None:
        self.result = ParseResult("rdf-patch")
        self.prefixes: dict[str, str] = {}
        self.headers = _Headers()
        self.tx: _Transaction | None = None

    def _taken(self) -> ParseResult:
        result, self.result = self.result, ParseResult("rdf-patch")
        return result

    def feed(self, data: bytes, first_line: int = 1) -> ParseResult:
        """The lines of ``data``, which starts at line ``first_line`` of the patch."""
        for item in decode(data, first_line):
            self.result.lines += 1
            if isinstance(item, BadLine):
                self._bad_row(item)
                continue
            number, text = item
            try:
                self._line(number, text)
            except ValueError as exc:  # TermError, or a bad timestamp
                self._bad_row(BadLine.of(number, text, str(exc)))
        return self._taken()

    def feed_bad(self, bad: BadLine) -> ParseResult:
        """A line the chunk reader could not hand over (longer than its limit)."""
        self.result.lines += 1
        self._bad_row(bad)
        return self._taken()

    def end(self) -> ParseResult:
        """The end of the patch: an open transaction is rejected."""
        if self.tx is not None:
            self._reject(self.tx.rows, "transaction not committed (no TC before end of file)")
            self.tx = None
        return self._taken()

    def _bad_row(self, bad: BadLine) -> None:
        self.result.bad.append(bad)
        if self.tx is not None and self.tx.bad_line is None:
            self.tx.bad_line = bad.line

    def _reject(self, rows: list[_Row], reason: str) -> None:
        self.result.bad.extend(BadLine.of(row.line, row.text, reason) for row in rows)

    def _line(self, number: int, text: str) -> None:
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            self.result.skipped += 1
            return
        code, rest = _CODE.fullmatch(stripped).groups()
        if code in _OPS:
            self._row(number, text, _OPS[code], rest)
            return
        handler = {"H": self._header, "PA": self._prefix_add, "PD": self._prefix_delete,
                   "TX": self._begin, "TC": self._commit, "TA": self._abort}.get(code)
        if handler is None:
            raise TermError(f"unknown row code {code[:20]!r}")
        handler(number, rest)
        self.result.skipped += 1

    def _row(self, number: int, text: str, op: str, rest: str) -> None:
        terms = parse_statement(rest, prefixes=self.prefixes)
        stream = stream_of(terms[3] if len(terms) == 4 else None)
        row = _Row(number, text, op, terms[0].nt, terms[1].nt, terms[2].nt, stream)
        if self.tx is not None:
            self.tx.rows.append(row)
        else:
            self._emit([row], f"line:{number}")

    def _emit(self, rows: list[_Row], event_key: str) -> None:
        for row in rows:
            self.result.messages.append(Message(self.result.next_seq(), row.line, event_key, self.headers.time,
                                    row.op, row.s, row.p, row.o, row.stream, self.headers.event_id))
        self.headers = _Headers()

    def _header(self, number: int, rest: str) -> None:
        if self.tx is not None and self.tx.rows:
            raise TermError("header after rows in a transaction")
        parts = rest.split(None, 1)
        if len(parts) != 2:
            raise TermError("header needs a name and a value")
        key, value = parts
        term, end = read_term(value, 0, self.prefixes)
        _check_end(value[end:], f"header {key}")
        if key == "id":
            self.headers.event_id = term.value
        elif key == "timestamp":
            if term.kind != "literal":
                raise TermError("timestamp header must be a literal")
            self.headers.time = parse_time(term.value)

    def _prefix_add(self, number: int, rest: str) -> None:
        match = _PREFIX.match(rest)
        if match is None:
            raise TermError("PA needs 'prefix: <iri>'")
        iri, end = read_term(rest, match.end())
        if iri.kind != "iri":
            raise TermError("PA needs an IRI")
        _check_end(rest[end:], "PA")
        self.prefixes[match.group(1)] = iri.value

    def _prefix_delete(self, number: int, rest: str) -> None:
        match = _PREFIX.match(rest)
        if match is None:
            raise TermError("PD needs 'prefix:'")
        _check_end(rest[match.end():], "PD")
        if self.prefixes.pop(match.group(1), None) is None:
            raise TermError(f"PD of undeclared prefix '{match.group(1)}:'")

    def _begin(self, number: int, rest: str) -> None:
        _check_end(rest, "TX")
        if self.tx is not None:
            raise TermError(f"TX inside the transaction opened at line {self.tx.line}")
        self.tx = _Transaction(number)

    def _commit(self, number: int, rest: str) -> None:
        _check_end(rest, "TC")
        if self.tx is None:
            raise TermError("TC without TX")
        tx, self.tx = self.tx, None
        if tx.bad_line is not None:
            self._reject(tx.rows, f"transaction rejected: bad row at line {tx.bad_line}")
            self.headers = _Headers()
        else:
            self._emit(tx.rows, f"line:{tx.line}")

    def _abort(self, number: int, rest: str) -> None:
        _check_end(rest, "TA")
        if self.tx is None:
            raise TermError("TA without TX")
        self._reject(self.tx.rows, "transaction aborted")
        self.tx = None
        self.headers = _Headers()


def parse_patch(data: bytes, first_line: int = 1) -> ParseResult:
    """A whole patch (or one starting at ``first_line`` that ends with ``data``)."""
    reader = PatchReader()
    result, last = reader.feed(data, first_line), reader.end()
    result.bad.extend(last.bad)
    return result
