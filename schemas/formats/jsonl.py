"""JSON Lines: one change per line, ``{"time", "op", "s", "p", "o"[, "stream"][, "event"]}``.

Terms are N-Triples strings; ``op`` is ``+`` or ``-``; ``time`` is ISO-8601 with an offset;
``stream`` an IRI with or without angle brackets. Lines sharing an ``event`` string form one event;
other lines are events of their own. Unknown fields are ignored so producers can add metadata.
"""
from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from schemas.terms import CANONICAL_AS_IS, TermError, canonical_nt

from .base import MESSAGE_COLUMNS, BadLine, Message, ParseResult, counted_lines, parse_stream, parse_time, per_distinct

_REQUIRED = ("time", "op", "s", "p", "o")
_OPS = {"+": "insert", "-": "delete"}
_FIELDS = pa.schema([(name, pa.string()) for name in (*_REQUIRED, "stream", "event")])
#: A line that is empty or only blanks (the native reader skips those, and would shift line numbers).
_BLANK_LINE = re.compile(rb"\n[ \t\r]*\n")
_NULL_EVENT = re.compile(rb'"event"\s*:\s*null')
#: The event times both readers take alike: ISO 8601 with seconds, at most microseconds, an offset.
_ISO_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$"


def _string(record: dict, name: str) -> str:
    value = record[name]
    if not isinstance(value, str):
        raise ValueError(f"field {name!r} is not a string")
    return value


def _term(record: dict, name: str) -> str:
    try:
        return canonical_nt(_string(record, name))
    except TermError as exc:
        raise ValueError(f"bad term in {name!r}: {exc}") from None


def _stream(record: dict) -> str | None:
    if record.get("stream") is None:
        return None
    return parse_stream(_string(record, "stream"))


def _message(seq: int, number: int, text: str) -> Message:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(record, dict):
        raise ValueError("line is not a JSON object")
    missing = [name for name in _REQUIRED if name not in record]
    if missing:
        raise ValueError(f"missing field {missing[0]!r}")
    op = record["op"]
    if op not in _OPS:
        raise ValueError(f"unknown op {str(op)[:20]!r} (expected '+' or '-')")
    event_key = f"event:{_string(record, 'event')}" if "event" in record else f"line:{number}"
    return Message(seq, number, event_key, parse_time(_string(record, "time")), _OPS[op],
                   _term(record, "s"), _term(record, "p"), _term(record, "o"), _stream(record))


def _read_natively(data: bytes, first_line: int) -> pa.Table | None:
    """The messages of a file whose every line is a good message, read by pyarrow's JSON reader
    and checked column by column (:data:`MESSAGE_COLUMNS`); None when any line is not (or the file
    has blank lines): the caller then reads it line by line, which names each bad line's fault."""
    body = data[:-1] if data.endswith(b"\n") else data
    if not body.strip() or body.startswith(b"\xef\xbb\xbf") or _BLANK_LINE.search(b"\n" + body + b"\n"):
        return None
    try:
        body.decode("utf-8")
        read = pa_json.read_json(pa.BufferReader(data), parse_options=pa_json.ParseOptions(
            explicit_schema=_FIELDS, unexpected_field_behavior="ignore"))
        if read.num_rows != body.count(b"\n") + 1 or any(read[name].null_count for name in _REQUIRED):
            return None
        if _NULL_EVENT.search(data):                # a bad line, but a null to the native reader
            return None
        if not (pc.all(pc.is_in(read["op"], pa.array(list(_OPS)))).as_py()
                and pc.all(pc.match_substring_regex(read["time"], _ISO_TIME)).as_py()):
            return None
        times = pc.cast(read["time"], MESSAGE_COLUMNS.field("event_time").type)
        terms = {name: per_distinct(read[name], canonical_nt, CANONICAL_AS_IS) for name in ("s", "p", "o")}
        streams = per_distinct(read["stream"], parse_stream)        # nulls stay null
    except (pa.ArrowInvalid, UnicodeDecodeError, TermError, ValueError):
        return None
    lines = pa.array(range(first_line, first_line + read.num_rows), pa.int64())
    keys = pc.if_else(pc.is_null(read["event"]),
                      pc.binary_join_element_wise("line", pc.cast(lines, pa.string()), ":"),
                      pc.binary_join_element_wise("event", read["event"], ":"))
    ops = pc.if_else(pc.equal(read["op"], "+"), "insert", "delete")
    return pa.table([lines, keys, times, ops, terms["s"], terms["p"], terms["o"], streams,
                     pa.nulls(read.num_rows, pa.string())], schema=MESSAGE_COLUMNS)


def parse_jsonl(data: bytes, first_line: int = 1) -> ParseResult:
    """JSON Lines from line ``first_line`` on: natively when every line is a good message, else
    line by line."""
    columns = _read_natively(data, first_line)
    if columns is not None:
        return ParseResult("jsonl", lines=columns.num_rows, columns=columns)
    return parse_jsonl_lines(data, first_line)


def parse_jsonl_lines(data: bytes, first_line: int = 1) -> ParseResult:
    """JSON Lines read one line at a time, each bad line with its fault."""
    result = ParseResult("jsonl")
    for number, text in counted_lines(data, result, first_line):
        if not text.strip():
            result.skipped += 1
            continue
        try:
            result.messages.append(_message(result.next_seq(), number, text))
        except ValueError as exc:
            result.bad.append(BadLine.of(number, text, str(exc)))
    return result
