"""Input formats: each parser turns the bytes of one file into messages and bad lines.

:func:`parse` picks the parser from the file extension; an unknown extension is one bad line at
line 0 (the file is reported, never silently ignored).
"""
from __future__ import annotations

import os
from typing import Callable

from .base import RAW_LIMIT, BadLine, Message, ParseResult, split_lines
from .jsonl import parse_jsonl
from .ntriples import parse_nquads, parse_ntriples
from .patch import parse_patch
from .turtle import parse_turtle

Parser = Callable[[bytes], ParseResult]

#: File extension -> parser.
PARSERS: dict[str, Parser] = {
    ".rdfp": parse_patch,
    ".patch": parse_patch,
    ".jsonl": parse_jsonl,
    ".ndjson": parse_jsonl,
    ".nt": parse_ntriples,
    ".nq": parse_nquads,
    ".ttl": parse_turtle,
}

UNSUPPORTED = "unsupported"


def parse(path: str, data: bytes) -> ParseResult:
    """Parse ``data``, the content of ``path``, with the parser its extension names."""
    ext = os.path.splitext(path)[1].lower()
    parser = PARSERS.get(ext)
    if parser is None:
        what = ext or "(no extension)"
        return ParseResult(UNSUPPORTED, bad=[BadLine(0, "", f"unsupported file type {what}")],
                           line_based=False)
    return parser(data)


__all__ = ["BadLine", "Message", "ParseResult", "PARSERS", "RAW_LIMIT", "UNSUPPORTED", "parse",
           "parse_jsonl", "parse_nquads", "parse_ntriples", "parse_patch", "parse_turtle",
           "split_lines"]
