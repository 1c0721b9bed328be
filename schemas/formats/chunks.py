"""A landing file read in chunks of whole lines, so that ingest holds a chunk, not the file.

Why lines: every line-based format quarantines per line, so a chunk that ends at a line end parses
exactly as the same lines would inside the whole file (the parsers take the chunk's first line
number). A line longer than :data:`MAX_LINE` bytes (binary garbage without a newline, say) is never
held whole: it becomes one bad line, its head kept as raw text, and reading goes on after it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Protocol

from .base import RAW_LIMIT, BadLine

#: Bytes read at a time (a chunk is about this size); ``$LAKEGRAPH_INGEST_CHUNK_BYTES`` overrides
#: it, so that tests run the chunked path on small files.
CHUNK_BYTES = 16 << 20
CHUNK_ENV = "LAKEGRAPH_INGEST_CHUNK_BYTES"
#: The longest line ingest reads; a longer one is quarantined whole as one bad line.
MAX_LINE = 16 << 20


class Digest(Protocol):
    """What :func:`read_chunks` needs of a hash (``hashlib`` objects)."""

    def update(self, data: bytes, /) -> None: ...


@dataclass(frozen=True)
class Chunk:
    """Whole lines of a file (the last one may lack its newline), from line ``first_line``."""

    first_line: int
    data: bytes


def chunk_bytes() -> int:
    """The chunk size in force (:data:`CHUNK_BYTES` unless the environment sets one)."""
    value = os.environ.get(CHUNK_ENV)
    if value is None:
        return CHUNK_BYTES
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"${CHUNK_ENV} must be a positive number of bytes, not {value!r}")
    return int(value)


def _overlong(line: int, head: bytes, max_line: int) -> BadLine:
    raw = head[:RAW_LIMIT].decode("utf-8", errors="backslashreplace")[:RAW_LIMIT]
    return BadLine(line, raw, f"line longer than {max_line} bytes (truncated)")


def read_chunks(handle: BinaryIO, size: int, digest: Digest, max_line: int = MAX_LINE) -> Iterator[Chunk | BadLine]:
    """The file behind ``handle`` as chunks of about ``size`` bytes of whole lines, and a bad line
    for each line longer than ``max_line`` bytes; every byte read is fed to ``digest`` too, so the
    hash is of exactly the bytes parsed."""
    line = 1
    pending = bytearray()           # the start of a line whose end is not read yet
    skipping: bytes | None = None   # the head of an overlong line, while reading on to its end
    while block := handle.read(size):
        digest.update(block)
        if skipping is not None:
            cut = block.find(b"\n")
            if cut < 0:
                continue
            yield _overlong(line, skipping, max_line)
            line, skipping, block = line + 1, None, block[cut + 1:]
        cut = block.rfind(b"\n")
        if cut < 0:
            pending += block
        else:
            data = bytes(pending) + block[:cut + 1]
            pending = bytearray(block[cut + 1:])
            yield Chunk(line, data)
            line += data.count(b"\n")
        if len(pending) > max_line:
            skipping, pending = bytes(pending[:RAW_LIMIT]), bytearray()
    if skipping is not None:
        yield _overlong(line, skipping, max_line)
    elif pending:
        yield Chunk(line, bytes(pending))
