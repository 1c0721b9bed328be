"""Bronze ingest: landing files become bronze rows, exactly once, with bad input quarantined.

Each file is handled under the lake's ingest lock (:mod:`pipelines.storage.lock`), so concurrent
ingests serialise file by file: ids and seqs are never handed out twice, bronze commit order is seq
order, and a file (identified by absolute path and SHA-256 of its content) is ingested at most once.

A file lands in up to three commits, each carrying ``Txn("ingest", ingest_id)``: its quarantine
rows, its bronze rows (the point of no return), then its ingest log row; empty batches are not
committed. Before each file, :func:`recover` repairs what a crash left behind: bronze ahead of the
log gets its log row written (roll forward); quarantine rows ahead of the log are deleted (roll
back) and the ingest id is handed out again, so re-running the same paths ends with exactly the
tables an uninterrupted run gives.

A file is read in chunks of lines (:mod:`schemas.formats.chunks`) and its rows are staged
(:mod:`pipelines.staged`), so a large file costs a chunk of memory and still lands in those three
commits. It is hashed before it is read (an ingested file is skipped unread) and again as it is
read; a file whose two hashes, or whose size and modification time, differ was changed while it was
read: it is refused and nothing of it is committed. A file that cannot be read (permissions, a
dangling link, not a regular file) is reported, and the other files are still ingested.
"""
from __future__ import annotations

import hashlib
import math
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from quality.bronze import row_failures
from schemas import tables as S
from schemas.formats import UNSUPPORTED, BadLine, Chunk, ParseResult, parse, parse_chunks, reads_whole, split_lines
from schemas.formats.chunks import Digest, chunk_bytes, read_chunks

from .lake import BRONZE, FIXED_TABLES, INGEST_LOG, QUARANTINE, now
from .staged import Staged, clear
from .storage import TableStore, Txn
from .storage.lock import ingesting

#: App id of the ingest commits; the transaction version is the ingest id.
APP = "ingest"
UNKNOWN_SHA = "unknown"
#: Where the files lakegraph writes itself (REGISTER STREAM output) live, inside the lake.
GENERATED = "_streams"
#: Bytes hashed at a time.
HASH_BLOCK = 1 << 20


class NotIngested(Exception):
    """A file that was not ingested, and why (one line); the other files go on."""


@dataclass(frozen=True)
class FileReport:
    """What happened to one file; ``status`` is ``ingested``, ``skipped`` (already ingested) or
    ``failed`` (not ingested, for ``reason``: unreadable, or changed while it was read)."""

    path: str
    format: str
    status: str
    ingest_id: int | None = None
    lines: int = 0
    ingested: int = 0
    quarantined: int = 0
    skipped_lines: int = 0
    reason: str | None = None

    def line(self) -> str:
        """One line for a progress log: ``ingest <path>: ...``."""
        if self.status == "skipped":
            return f"ingest {self.path}: skipped, already ingested (#{self.ingest_id})"
        if self.status == "failed":
            return f"ingest {self.path}: not ingested, {self.reason}"
        return (f"ingest {self.path}: #{self.ingest_id} {self.format}, {self.ingested} rows, "
                f"{self.quarantined} quarantined")


@dataclass
class IngestReport:
    """Per-file rows and their totals (lines count the files actually read, not skipped ones)."""

    rows: list[FileReport] = field(default_factory=list)

    def _done(self) -> list[FileReport]:
        return [r for r in self.rows if r.status == "ingested"]

    @property
    def files(self) -> int:
        return len(self.rows)

    @property
    def lines(self) -> int:
        return sum(r.lines for r in self._done())

    @property
    def ingested(self) -> int:
        return sum(r.ingested for r in self._done())

    @property
    def quarantined(self) -> int:
        return sum(r.quarantined for r in self._done())

    @property
    def skipped_lines(self) -> int:
        return sum(r.skipped_lines for r in self._done())

    @property
    def skipped_files(self) -> int:
        return sum(r.status == "skipped" for r in self.rows)

    @property
    def failed(self) -> list[FileReport]:
        """The files not ingested (each with its reason)."""
        return [r for r in self.rows if r.status == "failed"]

    def summary(self) -> str:
        failed = f", {len(self.failed)} not ingested" if self.failed else ""
        return (f"ingested {self.ingested} rows, quarantined {self.quarantined}, "
                f"skipped {_count(self.skipped_files, 'file')} already ingested{failed} "
                f"({_count(self.files, 'file')}, {_count(self.lines, 'line')})")


def _count(n: int, noun: str) -> str:
    """``n`` and the noun, plural but for one: "1 file", "2 files"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# -- files --------------------------------------------------------------------------------------
def _resolved(path: str) -> str:
    """``path`` with every symbolic link followed; a dangling link stays itself (it is reported)."""
    real = os.path.realpath(path)
    return real if os.path.exists(real) else os.path.abspath(path)


def expand_paths(paths: list[str]) -> list[tuple[str, str | None]]:
    """``(path, problem)`` for every file to ingest, in the order given, directories walked
    recursively in sorted order; ``problem`` says why a directory could not be walked (None for a
    file). Paths are resolved (symbolic links followed, to files and directories alike), so a link
    and its target are one file, ingested once under the target's path; a directory reached twice
    is walked once. Hidden files and directories inside a walked directory are left out."""
    found: list[tuple[str, str | None]] = []
    walked: set[str] = set()
    for given in paths:
        path = _resolved(given)
        if not os.path.isdir(path):
            if not os.path.lexists(given):
                raise FileNotFoundError(f"no such file or directory: {given}")
            found.append((path, None))
            continue
        files: list[tuple[str, str | None]] = []

        def unwalkable(error: OSError) -> None:
            files.append((_resolved(error.filename), f"unreadable directory: {error.strerror}"))

        for root, dirs, names in os.walk(path, onerror=unwalkable, followlinks=True):
            real = os.path.realpath(root)
            if real in walked:
                dirs[:] = []
                continue
            walked.add(real)
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            files.extend((_resolved(os.path.join(root, n)), None) for n in names if not n.startswith("."))
        found.extend(sorted(files))
    first: dict[str, str | None] = {}
    for path, problem in found:
        first.setdefault(path, problem)
    return list(first.items())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextmanager
def _reading() -> Iterator[None]:
    """A landing file's read: an OS error there makes the file unreadable, not the ingest failed."""
    try:
        yield
    except OSError as exc:
        raise NotIngested(f"unreadable: {exc.strerror or exc}") from None


def _identity(location: str) -> tuple[int, int, int, int]:
    """What would show a change of the file besides its content: device, inode, size, mtime."""
    with _reading():
        info = os.stat(location)
    if not stat.S_ISREG(info.st_mode):
        raise NotIngested("not a regular file")
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _digest(location: str) -> tuple[str, int]:
    """The file's SHA-256 and physical line count, read a block at a time."""
    digest, lines, last = hashlib.sha256(), 0, b"\n"
    with open(location, "rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
            lines += block.count(b"\n")
            last = block[-1:]
    return digest.hexdigest(), lines + (last != b"\n")


def _read(location: str, digest: Digest) -> Iterator[Chunk | BadLine]:
    """The file as chunks of lines (one chunk for a format read whole), every byte fed to ``digest``."""
    with _reading(), open(location, "rb") as handle:
        if reads_whole(location):
            data = handle.read()
            digest.update(data)
            yield Chunk(1, data)
        else:
            yield from read_chunks(handle, chunk_bytes(), digest)


def _max(table: pa.Table, column: str) -> int:
    value = pc.max(table[column]).as_py() if table.num_rows else None
    return value or 0


# -- crash recovery -----------------------------------------------------------------------------
def _log_row(ingest_id: int, path: str, sha: str, fmt: str, lines: int, ingested: int,
             quarantined: int, first_seq: int | None, last_seq: int | None, at: datetime) -> dict:
    return {"ingest_id": ingest_id, "path": path, "sha256": sha, "format": fmt, "lines": lines,
            "ingested": ingested, "quarantined": quarantined, "first_seq": first_seq,
            "last_seq": last_seq, "ingested_at": at}


def _finish_log(store: TableStore, ingest_id: int) -> None:
    """Write the log row of a file whose bronze rows landed before a crash, from those rows.
    The file is read again for its hash and line count when it still exists."""
    bronze = store.read_arrow(BRONZE, columns=["seq", "source", "ingest_id"])
    bronze = bronze.filter(pc.equal(bronze["ingest_id"], ingest_id))
    quarantine = store.read_arrow(QUARANTINE, columns=["ingest_id"])
    quarantined = pc.sum(pc.equal(quarantine["ingest_id"], ingest_id)).as_py() or 0
    path = bronze["source"][0].as_py().rsplit(":", 1)[0]
    fmt = parse(path, b"").format
    try:
        sha, lines = _digest(os.path.join(store.root, path))      # a generated file's path is lake-relative
        lines = 0 if fmt == UNSUPPORTED else lines
    except OSError:
        sha, lines = UNKNOWN_SHA, bronze.num_rows + quarantined
    row = _log_row(ingest_id, path, sha, fmt, lines, bronze.num_rows, quarantined,
                   pc.min(bronze["seq"]).as_py(), pc.max(bronze["seq"]).as_py(), now())
    store.append(INGEST_LOG, pa.Table.from_pylist([row], schema=S.INGEST_LOG), Txn(APP, ingest_id))


_LOG_COLUMNS = ["ingest_id", "path", "sha256", "format", "last_seq"]


def recover(store: TableStore) -> pa.Table:
    """Bring quarantine and bronze back in line with the ingest log after a crash (call it under
    the lock); returns the ingest log's identity columns as they are after the repair."""
    # read whole (a row per file): a store keeps a table read whole, and its own appends to it, in
    # memory, so a process that ingests file after file does not read the log's files each time
    log = store.read_arrow(INGEST_LOG).select(_LOG_COLUMNS)
    last = _max(log, "ingest_id")
    landed = store.committed(BRONZE, APP) or 0
    if landed > last:
        _finish_log(store, landed)
        log = store.read_arrow(INGEST_LOG).select(_LOG_COLUMNS)
        last = landed
    if (store.committed(QUARANTINE, APP) or 0) > last:
        stale = store.read_arrow(QUARANTINE, columns=["ingest_id"])
        if _max(stale, "ingest_id") > last:
            store.delete(QUARANTINE, f"ingest_id > {last}")
    return log


# -- one file -----------------------------------------------------------------------------------
def bronze_batch(parsed: ParseResult, path: str, ingest_id: int, first_seq: int, at: datetime,
                 stream: str | None = None, event_time: datetime | None = None) -> pa.Table:
    """The file's messages as bronze rows, seqs from ``first_seq`` in message order. A message that
    names no stream gets ``stream`` (else the default stream), one without an event time gets
    ``event_time`` (else the ingest time ``at``)."""
    m = parsed.table()
    n = m.num_rows
    return pa.table({
        "seq": pa.array(range(first_seq, first_seq + n), pa.int64()),
        "event_id": pc.coalesce(m["event_id"], pc.binary_join_element_wise(str(ingest_id), m["event_key"], ":")),
        "event_time": pc.coalesce(m["event_time"], pa.scalar(event_time or at, m.schema.field("event_time").type)),
        "op": m["op"],
        "s": m["s"],
        "p": m["p"],
        "o": m["o"],
        "stream": pc.coalesce(m["stream"], pa.scalar(stream or S.DEFAULT_STREAM)),
        "source": pc.binary_join_element_wise(path, pc.cast(m["line"], pa.string()), ":"),
        "ingest_id": pa.repeat(pa.scalar(ingest_id, pa.int64()), n),
    }, schema=S.BRONZE)


def _rejected(parsed: ParseResult, chunk: Chunk | None, failures: dict[int, list[str]]) -> list[BadLine]:
    """Bad lines for the messages the bronze suite rejected, with the original line as raw text
    when ``chunk`` holds it (Turtle has no line per triple, and a patch transaction's rows may
    come from earlier chunks: their raw text is the triple itself)."""
    if not failures:
        return []
    lines = split_lines(chunk.data) if chunk is not None and parsed.line_based else []
    bad = []
    for index, why in failures.items():
        message = parsed.messages[index]
        at = message.line - chunk.first_line if chunk is not None else -1
        if message.line and 0 <= at < len(lines):
            raw = lines[at].decode("utf-8", errors="backslashreplace")
        else:
            raw = f"{message.s} {message.p} {message.o} ."
        bad.append(BadLine.of(message.line, raw, "; ".join(why)))
    return bad


def _quarantine_table(bad: list[BadLine], path: str, ingest_id: int, at: datetime) -> pa.Table:
    return pa.Table.from_pylist(
        [{"ingest_id": ingest_id, "file": path, "line": b.line, "raw": b.raw, "reason": b.reason,
          "quarantined_at": at} for b in sorted(bad, key=lambda b: b.line)], schema=S.QUARANTINE)


@dataclass
class _Counts:
    """A file's line counts, summed over its chunks."""

    format: str = UNSUPPORTED
    lines: int = 0
    ingested: int = 0
    quarantined: int = 0
    skipped: int = 0


def _stage(path: str, location: str, sha: str, ingest_id: int, first_seq: int,
           at: datetime, stream: str | None, event_time: datetime | None,
           bronze_rows: Staged, quarantine_rows: Staged) -> _Counts:
    """Parse the file chunk by chunk into staged bronze and quarantine rows (seqs from
    ``first_seq``, in message order, without gaps); raises :class:`NotIngested` when what was read
    is not the file that was hashed as ``sha``."""
    before = _identity(location)
    counts, next_seq, digest = _Counts(), first_seq, hashlib.sha256()
    for parsed, chunk in parse_chunks(path, _read(location, digest)):
        bronze = bronze_batch(parsed, path, ingest_id, next_seq, at, stream, event_time)
        failures = row_failures(bronze)
        bad = list(parsed.bad) + _rejected(parsed, chunk, failures)
        if failures:
            bronze = bronze.filter(pa.array([i not in failures for i in range(bronze.num_rows)]))
            seq = bronze.schema.get_field_index("seq")
            bronze = bronze.set_column(seq, bronze.schema.field(seq),
                                       pa.array(range(next_seq, next_seq + bronze.num_rows), pa.int64()))
        next_seq += bronze.num_rows
        bronze_rows.add(bronze)
        quarantine_rows.add(_quarantine_table(bad, path, ingest_id, at))
        counts.format = parsed.format
        counts.lines += parsed.lines
        counts.ingested += bronze.num_rows
        counts.quarantined += len(bad)
        counts.skipped += parsed.skipped
    if digest.hexdigest() != sha or _identity(location) != before:
        raise NotIngested("changed while it was read (its hash no longer matches): nothing of it "
                          "was ingested; ingest it again once it is complete")
    return counts


def _ingest_file(store: TableStore, log: pa.Table, path: str, location: str, stream: str | None,
                 event_time: datetime | None) -> FileReport:
    """Ingest the file at ``location`` as ``path``; the caller holds the ingest lock and passes the
    log :func:`recover` returned."""
    _identity(location)                 # a FIFO would block the read below
    with _reading():
        sha, _ = _digest(location)
    done = log.filter(pc.and_(pc.equal(log["path"], path), pc.equal(log["sha256"], sha)))
    if done.num_rows:
        return FileReport(path, done["format"][0].as_py(), "skipped", done["ingest_id"][0].as_py())
    ingest_id = _max(log, "ingest_id") + 1
    first_seq = _max(log, "last_seq") + 1
    at = now()
    clear(store.root)
    bronze = Staged(store.root, BRONZE, S.BRONZE)
    quarantine = Staged(store.root, QUARANTINE, S.QUARANTINE)
    try:
        counts = _stage(path, location, sha, ingest_id, first_seq, at, stream, event_time,
                        bronze, quarantine)
        if quarantine.rows:
            # A rolled-back attempt of this id already moved the quarantine's transaction marker to
            # it (markers never go back) and recover() deleted its rows: then write without the marker.
            marked = (store.committed(QUARANTINE, APP) or 0) >= ingest_id
            quarantine.commit(store, None if marked else Txn(APP, ingest_id))
        bronze.commit(store, Txn(APP, ingest_id))
    finally:
        bronze.close()
        quarantine.close()
        clear(store.root)
    last_seq = first_seq + counts.ingested - 1 if counts.ingested else None
    row = _log_row(ingest_id, path, sha, counts.format, counts.lines, counts.ingested, counts.quarantined,
                   first_seq if counts.ingested else None, last_seq, at)
    store.append(INGEST_LOG, pa.Table.from_pylist([row], schema=S.INGEST_LOG), Txn(APP, ingest_id))
    return FileReport(path, counts.format, "ingested", ingest_id, counts.lines, counts.ingested,
                      counts.quarantined, counts.skipped)


def ingest_generated(store: TableStore, stem: str, data: bytes) -> FileReport:
    """Ingest JSON Lines messages lakegraph made itself (a ``REGISTER STREAM`` query's window
    output): written first as ``<lake>/_streams/<stem>-<hash>.jsonl``, then ingested like a
    landing file under that lake-relative name. A re-run after a crash finds it ingested (or rolls
    its log row forward from the file) and adds nothing."""
    path = f"{GENERATED}/{stem}-{_sha256(data)[:16]}.jsonl"
    full = os.path.join(store.root, path)
    if not os.path.exists(full):
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full + ".tmp", "wb") as handle:
            handle.write(data)
        os.replace(full + ".tmp", full)
    # Waits as long as it takes: its caller holds the writer lock, so only an ingest's file (a
    # bounded commit) can hold the ingest lock now, and giving up would interrupt a batch.
    with ingesting(store.root, "run", math.inf):
        return _ingest_file(store, recover(store), path, full, None, None)


def ingest_paths(store: TableStore, paths: list[str], on_file: Callable[[FileReport], None] | None = None,
                 stream: str | None = None, event_time: datetime | None = None,
                 wait: float | None = None) -> IngestReport:
    """Ingest files and directories into bronze (creating the ingest tables when missing);
    ``on_file`` is told about each file as it is done (progress). ``stream`` and ``event_time`` are
    the defaults of messages whose format carries none (a bare stream IRI; an aware time). Each
    file waits at most ``wait`` seconds for the ingest lock (:func:`~pipelines.storage.lock.hold`).
    A file that cannot be ingested (:class:`NotIngested`: unreadable, or changed while read) is
    reported as ``failed`` and the others still are."""
    files = expand_paths(paths)
    report = IngestReport()
    with ingesting(store.root, "ingest", wait):
        for name in (QUARANTINE, BRONZE, INGEST_LOG):
            store.create(name, FIXED_TABLES[name])
    for path, problem in files:
        try:
            if problem is not None:
                raise NotIngested(problem)
            with ingesting(store.root, "ingest", wait):
                report.rows.append(_ingest_file(store, recover(store), path, path, stream, event_time))
        except NotIngested as exc:
            report.rows.append(FileReport(path, parse(path, b"").format, "failed", reason=str(exc)))
        if on_file:
            on_file(report.rows[-1])
    return report
