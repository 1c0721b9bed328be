"""JSON Lines: one change per line, ``{"time", "op", "s", "p", "o"[, "stream"][, "event"]}``.

Terms are N-Triples strings; ``op`` is ``+`` or ``-``; ``time`` is ISO-8601 with an offset;
``stream`` an IRI with or without angle brackets. Lines sharing an ``event`` string form one event;
other lines are events of their own. Unknown fields are ignored so producers can add metadata.
"""
from __future__ import annotations

import json

from schemas.terms import TermError, canonical_nt

from .base import BadLine, Message, ParseResult, counted_lines, parse_stream, parse_time

_REQUIRED = ("time", "op", "s", "p", "o")
_OPS = {"+": "insert", "-": "delete"}


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


def parse_jsonl(data: bytes) -> ParseResult:
    result = ParseResult("jsonl")
    for number, text in counted_lines(data, result):
        if not text.strip():
            result.skipped += 1
            continue
        try:
            result.messages.append(_message(result.next_seq(), number, text))
        except ValueError as exc:
            result.bad.append(BadLine.of(number, text, str(exc)))
    return result
