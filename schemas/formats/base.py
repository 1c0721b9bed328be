"""The records every format parser produces, and the line handling they share.

Why parsers never raise on bad input: one bad line must not stop a feed. Each input line becomes a
:class:`Message`, a :class:`BadLine` (quarantined with its reason) or a skipped line (blank, comment,
header, transaction control), and :class:`ParseResult` keeps the three counts so that every line of
every file can be accounted for.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from schemas.terms import TermError, parse_term

#: Raw text kept for a bad line, in characters; longer lines are cut (the reason says so).
RAW_LIMIT = 65536


@dataclass(frozen=True)
class Message:
    """One change to the graph. ``event_key`` groups the messages of one event within a file;
    ``event_id`` is set when the file names the event itself (RDF Patch ``H id``); terms are
    canonical N-Triples strings; ``stream`` is a plain IRI (the graph name) or None."""

    seq_in_file: int
    line: int
    event_key: str
    event_time: datetime | None
    op: str
    s: str
    p: str
    o: str
    stream: str | None = None
    event_id: str | None = None


@dataclass(frozen=True)
class BadLine:
    """An input line that could not become a message (``line`` 0: the whole file)."""

    line: int
    raw: str
    reason: str

    @classmethod
    def of(cls, line: int, raw: str, reason: str) -> "BadLine":
        """A bad line whose raw text is cut to :data:`RAW_LIMIT` characters, saying so."""
        if len(raw) > RAW_LIMIT:
            return cls(line, raw[:RAW_LIMIT], f"{reason} (truncated)")
        return cls(line, raw, reason)


#: :class:`Message` as columns (``seq_in_file`` is the row's position): how a file read by a native
#: reader holds its messages, and what bronze is built from.
MESSAGE_COLUMNS = pa.schema([("line", pa.int64()), ("event_key", pa.string()),
                             ("event_time", pa.timestamp("us", tz="UTC")), ("op", pa.string()),
                             ("s", pa.string()), ("p", pa.string()), ("o", pa.string()),
                             ("stream", pa.string()), ("event_id", pa.string())])


@dataclass
class ParseResult:
    """What one file gave. For line-based formats every line is exactly one message, bad line or
    skipped line. Turtle is not line based: its triples (or its one syntax error) stand for the
    whole file, as does the one bad line of an unsupported file.

    A parser appends :class:`Message` objects to :attr:`messages`, or, when a native reader took
    the whole file at once, sets :attr:`columns` (:data:`MESSAGE_COLUMNS`): a million Python
    objects cost more than the rest of an ingest, so they are only built if someone asks."""

    format: str
    lines: int = 0
    bad: list[BadLine] = field(default_factory=list)
    skipped: int = 0
    line_based: bool = True
    columns: pa.Table | None = None
    _listed: list[Message] = field(default_factory=list, repr=False)

    @property
    def messages(self) -> list[Message]:
        """The messages in file order."""
        if self.columns is not None and not self._listed:
            self._listed.extend(Message(k + 1, **row) for k, row in enumerate(self.columns.to_pylist()))
        return self._listed

    @property
    def count(self) -> int:
        """How many messages the file gave."""
        return len(self._listed) if self.columns is None else self.columns.num_rows

    def table(self) -> pa.Table:
        """The messages as :data:`MESSAGE_COLUMNS`."""
        if self.columns is not None:
            return self.columns
        return pa.table({name: [getattr(m, name) for m in self._listed] for name in MESSAGE_COLUMNS.names},
                        schema=MESSAGE_COLUMNS)

    @property
    def balanced(self) -> bool:
        """Whether messages + bad lines + skipped lines == lines (always true when not line based)."""
        return not self.line_based or self.count + len(self.bad) + self.skipped == self.lines

    def next_seq(self) -> int:
        """The ``seq_in_file`` of the next message."""
        return self.count + 1


def per_distinct(column: pa.Array | pa.ChunkedArray, function: Callable[[str], str | None],
                 as_is: str | None = None) -> pa.Array:
    """``function`` applied once per distinct value of a string ``column`` (nulls stay null): a
    stream repeats its terms, and a term is canonicalised in Python. ``as_is``: an RE2 pattern of
    the values ``function`` returns unchanged, matched in Arrow so that only the others (most
    terms are plain IRIs) cost a Python call."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column)
    values = encoded.dictionary
    if as_is is None:
        mapped = pa.array([function(v) for v in values.to_pylist()], pa.string())
    else:
        other = pc.invert(pc.match_substring_regex(values, as_is))
        changed = [function(v) for v in values.filter(other).to_pylist()]
        mapped = pc.replace_with_mask(values, other, pa.array(changed, pa.string())) if changed else values
    return mapped.take(encoded.indices)


def split_lines(data: bytes) -> list[bytes]:
    """Physical lines without their terminator (``\\n`` or ``\\r\\n``); no final empty line."""
    if not data:
        return []
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def decode(data: bytes, first_line: int = 1) -> Iterator[tuple[int, str] | BadLine]:
    """Each line as ``(number, text)``, or as a :class:`BadLine` when it is not valid UTF-8;
    ``data`` starts at line ``first_line`` of its file (a chunk, :mod:`.chunks`). A byte order
    mark at the start of the file is dropped."""
    for number, raw in enumerate(split_lines(data), start=first_line):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield BadLine.of(number, raw.decode("utf-8", errors="backslashreplace"),
                             f"invalid UTF-8 at byte {exc.start}")


def counted_lines(data: bytes, result: ParseResult, first_line: int = 1) -> Iterator[tuple[int, str]]:
    """The decodable lines of ``data`` (from line ``first_line``); every line is counted in
    ``result`` and the undecodable ones are recorded there as bad, so a line-based parser only
    sees text."""
    for item in decode(data, first_line):
        result.lines += 1
        if isinstance(item, BadLine):
            result.bad.append(item)
        else:
            yield item


@lru_cache(maxsize=1 << 10)
def parse_stream(text: str) -> str:
    """A stream (graph) IRI written with or without angle brackets, as bronze stores it (bare).
    Cached: every message of a stream names it again."""
    text = text.strip()
    try:
        term = parse_term(text if text.startswith("<") else f"<{text}>")
    except TermError as exc:
        raise ValueError(f"bad stream: {exc}") from None
    if term.kind != "iri":
        raise ValueError("bad stream: not an IRI")
    return term.value


def parse_time(text: str) -> datetime:
    """An ISO-8601 timestamp with a UTC offset (or ``Z``), converted to UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"bad time {text!r}: not ISO-8601") from None
    if value.tzinfo is None:
        raise ValueError(f"time {text!r} has no UTC offset")
    return value.astimezone(timezone.utc)
