"""Input formats: each parser turns the bytes of one file into messages and bad lines.

:func:`parse` picks the parser from the file extension; an unknown extension is one bad line at
line 0 (the file is reported, never silently ignored). :func:`parse_chunks` parses a file read in
chunks of lines (:mod:`.chunks`): the line-based formats chunk by chunk, Turtle (one document) whole.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Iterator

from .base import RAW_LIMIT, BadLine, Message, ParseResult, split_lines
from .chunks import Chunk
from .jsonl import parse_jsonl
from .ntriples import parse_nquads, parse_ntriples
from .patch import PatchReader, parse_patch
from .turtle import parse_turtle

#: ``(data, first line number) -> result``.
Parser = Callable[[bytes, int], ParseResult]

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


def _extension(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def parse(path: str, data: bytes, first_line: int = 1) -> ParseResult:
    """Parse ``data``, the content of ``path`` from line ``first_line`` on, with the parser its
    extension names."""
    ext = _extension(path)
    parser = PARSERS.get(ext)
    if parser is None:
        what = ext or "(no extension)"
        return ParseResult(UNSUPPORTED, bad=[BadLine(0, "", f"unsupported file type {what}")],
                           line_based=False)
    return parser(data, first_line)


def reads_whole(path: str) -> bool:
    """Whether ``path``'s format is parsed as one document (Turtle), not chunk by chunk."""
    return PARSERS.get(_extension(path)) is parse_turtle


def parse_chunks(path: str, items: Iterable[Chunk | BadLine]) -> Iterator[tuple[ParseResult, Chunk | None]]:
    """Each chunk of ``path`` parsed, with the chunk (None for a result no chunk holds: an overlong
    line, the end of a patch, an unsupported file's one bad line, an empty file). A file whose format
    :func:`reads_whole` must come as one chunk; an unsupported file's chunks are read (for the
    file's hash) and give its one bad line once."""
    ext = _extension(path)
    if ext not in PARSERS:
        for _ in items:
            pass
        yield parse(path, b""), None
        return
    patch = PatchReader() if PARSERS[ext] is parse_patch else None
    nothing = True
    for item in items:
        nothing = False
        if isinstance(item, Chunk):
            yield (patch.feed(item.data, item.first_line) if patch else parse(path, item.data, item.first_line)), item
        elif patch:
            yield patch.feed_bad(item), None
        else:
            yield ParseResult(parse(path, b"").format, lines=1, bad=[item]), None
    if patch:
        yield patch.end(), None
    elif nothing:
        yield parse(path, b""), None


__all__ = ["BadLine", "Chunk", "Message", "ParseResult", "PARSERS", "RAW_LIMIT", "UNSUPPORTED", "parse",
           "parse_chunks", "parse_jsonl", "parse_nquads", "parse_ntriples", "parse_patch", "parse_turtle",
           "reads_whole", "split_lines"]
