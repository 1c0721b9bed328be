"""Bad input at (scaled-down) size: a file read in many chunks gives the tables one read whole gives,
every line ends in bronze or quarantine once, binary garbage and overlong lines are quarantined,
a file changing while it is read is refused whole, symbolic links are followed once, and an
unreadable file is reported while the others are ingested. ``python -m bench.bad_input`` runs the
same at a gigabyte and a million bad lines."""
from __future__ import annotations

import hashlib
import io
import os
import random
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench.bad_input import blank_or_comment
from pipelines import cli
from pipelines.ingest import ingest_paths
from pipelines.storage import open_store
from schemas.formats import BadLine, Chunk
from schemas.formats.chunks import CHUNK_ENV, read_chunks
from tests.test_ingest import BAD, LANDING, rows, snapshot

WHEN = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)


def _store(path: Path):
    return open_store(str(path), backend="delta-rs")


def write_mixed(path: Path, lines: int, bad_every: int) -> set[int]:
    """N-Triples with a bad line every ``bad_every`` lines; returns the bad lines' numbers."""
    bad = set(range(bad_every, lines + 1, bad_every))
    with path.open("w") as handle:
        for k in range(1, lines + 1):
            if k in bad:
                handle.write(f"<http://e.org/s{k}> broken line {k}\n")
            else:
                handle.write(f'<http://e.org/s{k}> <http://e.org/p{k % 7}> "value {k}" .\n')
    return bad


@pytest.mark.parametrize("size", [7, 300])
def test_a_file_read_in_chunks_gives_the_tables_a_whole_read_gives(size, tmp_path, monkeypatch):
    whole = _store(tmp_path / "whole")
    ingest_paths(whole, [str(LANDING), str(BAD)], event_time=WHEN)
    monkeypatch.setenv(CHUNK_ENV, str(size))
    chunked = _store(tmp_path / "chunked")
    ingest_paths(chunked, [str(LANDING), str(BAD)], event_time=WHEN)
    assert snapshot(chunked) == snapshot(whole)
    formats = {Path(r["path"]).name: r["format"] for r in rows(whole, "ingest_log")}
    assert (formats["empty.nq"], formats["broken.ttl"], formats["mixed.rdfp"]) == ("n-quads", "turtle", "rdf-patch")
    assert not os.path.exists(tmp_path / "chunked" / "_ingest")      # nothing staged is left


def test_a_file_of_many_chunks_lands_every_line_once(tmp_path, monkeypatch):
    monkeypatch.setenv(CHUNK_ENV, str(64 << 10))
    landing = tmp_path / "big.nt"
    bad = write_mixed(landing, 40_000, 9)                               # about 2.4 MB: 40 chunks
    store = _store(tmp_path / "lake")
    report = ingest_paths(store, [str(landing)])
    bronze, quarantine = rows(store, "bronze"), rows(store, "quarantine")
    landed = [int(r["source"].rsplit(":", 1)[1]) for r in bronze]
    assert (report.lines, report.ingested, report.quarantined) == (40_000, 40_000 - len(bad), len(bad))
    assert sorted(landed + [q["line"] for q in quarantine]) == list(range(1, 40_001))
    assert {q["line"] for q in quarantine} == bad and all(q["file"] == str(landing) for q in quarantine)
    assert sorted(r["seq"] for r in bronze) == list(range(1, len(landed) + 1))
    assert ingest_paths(store, [str(landing)]).skipped_files == 1
    # the spilled files became bronze's data files: the log's row count and the change feed see them
    fresh = _store(tmp_path / "lake")
    assert fresh.row_count("bronze") == len(landed) == fresh.changes("bronze", 0).num_rows
    assert fresh.committed("bronze", "ingest") == 1


def test_overlong_lines_are_quarantined_without_being_held(tmp_path):
    data = b"short\n" + b"x" * 5000 + b"\nafter\n" + b"y" * 3000
    items = list(read_chunks(io.BytesIO(data), 100, hashlib.sha256(), max_line=1000))
    chunks = [i for i in items if isinstance(i, Chunk)]
    overlong = [i for i in items if isinstance(i, BadLine)]
    assert [b.line for b in overlong] == [2, 4]
    assert b"".join(c.data for c in chunks) == b"short\nafter\n"
    assert [c.first_line for c in chunks] == [1, 3]
    assert all(b.reason == "line longer than 1000 bytes (truncated)" for b in overlong)


def test_binary_garbage_is_quarantined_in_one_readable_line(tmp_path, capsys):
    rng = random.Random(7)
    garbage = tmp_path / "landing" / "garbage.nt"
    garbage.parent.mkdir()
    garbage.write_bytes(bytes(rng.randrange(256) for _ in range(100_000)))
    lines = garbage.read_bytes().split(b"\n")
    blank = {k for k, line in enumerate(lines, start=1) if blank_or_comment(line)}
    code = cli.main(["--lake", str(tmp_path / "lake"), "ingest", str(garbage)])
    out, err = capsys.readouterr()
    assert code == 0
    assert err.strip() == f"ingest {garbage}: #1 n-triples, 0 rows, {len(lines) - len(blank)} quarantined"
    quarantine = rows(_store(tmp_path / "lake"), "quarantine")
    assert sorted(q["line"] for q in quarantine) == sorted(set(range(1, len(lines) + 1)) - blank)
    assert all(q["raw"].isprintable() or "\\x" in q["raw"] for q in quarantine)


def test_a_file_changing_while_read_is_refused_and_nothing_of_it_lands(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(CHUNK_ENV, str(4 << 10))
    landing = tmp_path / "growing.nt"
    write_mixed(landing, 20_000, 1_000_000)
    done = threading.Event()

    def append() -> None:                       # a producer still writing the file
        with landing.open("a") as handle:
            k = 0
            while not done.is_set():
                k += 1
                handle.write(f'<http://e.org/late{k}> <http://e.org/p> "x" .\n')
                handle.flush()
                done.wait(0.001)

    writer = threading.Thread(target=append)
    writer.start()
    try:
        code = cli.main(["--lake", str(tmp_path / "lake"), "ingest", str(landing)])
    finally:
        done.set()
        writer.join()
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines()[-1] == (f"lakegraph: error: 1 file not ingested: {landing}: changed while it was "
                                    "read (its hash no longer matches): nothing of it was ingested; ingest it "
                                    "again once it is complete")
    store = _store(tmp_path / "lake")
    assert [store.row_count(t) for t in ("bronze", "quarantine", "ingest_log")] == [0, 0, 0]
    assert ingest_paths(store, [str(landing)]).lines == landing.read_bytes().count(b"\n")   # once complete


def test_symbolic_links_are_followed_and_each_file_is_ingested_once(tmp_path):
    landing, outside = tmp_path / "landing", tmp_path / "outside"
    landing.mkdir()
    outside.mkdir()
    write_mixed(landing / "a.nt", 3, 10)
    write_mixed(outside / "b.nt", 4, 10)
    (landing / "a_again.nt").symlink_to(landing / "a.nt")         # a link beside its target
    (landing / "more").symlink_to(outside)                          # a linked directory
    (outside / "loop").symlink_to(landing)                          # a cycle back
    report = ingest_paths(_store(tmp_path / "lake"), [str(landing)])
    assert [(r.path, r.status, r.ingested) for r in report.rows] == [
        (str(landing / "a.nt"), "ingested", 3), (str(outside / "b.nt"), "ingested", 4)]


def test_an_unreadable_file_is_reported_and_the_others_are_ingested(tmp_path, capsys):
    landing = tmp_path / "landing"
    landing.mkdir()
    write_mixed(landing / "a.nt", 3, 10)
    (landing / "gone.nt").symlink_to(tmp_path / "nowhere.nt")      # a dangling link
    os.mkfifo(landing / "pipe.nt")                                  # reading it would block
    write_mixed(landing / "z.nt", 2, 10)
    secret = landing / "secret.nt"
    write_mixed(secret, 2, 10)
    secret.chmod(0)                                                 # unreadable unless we are root
    unreadable = [] if os.geteuid() == 0 else [f"ingest {secret}: not ingested, unreadable: Permission denied"]
    code = cli.main(["--lake", str(tmp_path / "lake"), "ingest", str(landing)])
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 1
    assert [line for line in lines if "not ingested," in line] == sorted([
        f"ingest {landing / 'gone.nt'}: not ingested, unreadable: No such file or directory",
        f"ingest {landing / 'pipe.nt'}: not ingested, not a regular file", *unreadable])
    failed = 2 + len(unreadable)
    assert lines[-1] == (f"lakegraph: error: {failed} files not ingested: {landing / 'gone.nt'}: unreadable: "
                         f"No such file or directory (and {failed - 1} more, above)")
    assert out.startswith(f"ingested {7 - 2 * len(unreadable)} rows")
