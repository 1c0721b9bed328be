"""Bad input at size: ``python -m bench.bad_input`` generates a 1 GB N-Triples landing file, a JSON
Lines file with a million bad lines among a million good ones, and 100 MB of binary garbage, ingests
each with ``lakegraph ingest`` in a fresh process, and reports its wall and CPU time and peak RSS
(the process's own, from ``wait4``) and whether every line ended in bronze or quarantine once.

Kept out of CI (minutes, gigabytes); CI runs the same paths scaled down (tests/test_bad_input.py).
Writes ``bench/results/bad_input.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow.compute as pc

from bench.lubm import RDF_TYPE, literal, ub
from pipelines.storage import open_store
from schemas.formats.chunks import chunk_bytes

RESULTS = Path(__file__).resolve().parent / "results" / "bad_input.md"
MB = 1 << 20


@dataclass(frozen=True)
class Case:
    """One landing file to generate: its name, size knob and writer (returns the bad line numbers)."""

    name: str
    file: str
    what: str
    write: Callable[[Path, int], set[int]]
    amount: int


def _student(k: int) -> str:
    return f"<http://www.Department{k % 15}.University{k // 15000}.edu/UndergraduateStudent{k}>"


def write_large(path: Path, size: int) -> set[int]:
    """LUBM-shaped N-Triples (students, their names, emails and courses) up to ``size`` bytes."""
    course, name, email, kind = ub("takesCourse"), ub("name"), ub("emailAddress"), ub("UndergraduateStudent")
    with path.open("w", encoding="utf-8") as handle:
        k, written = 0, 0
        while written < size:
            s = _student(k)
            block = (f"{s} {RDF_TYPE} {kind} .\n{s} {name} {literal(f'UndergraduateStudent{k}')} .\n"
                     f"{s} {email} {literal(f'UndergraduateStudent{k}@Department{k % 15}.edu')} .\n"
                     f"{s} {course} <http://www.Department{k % 15}.University0.edu/Course{k % 60}> .\n")
            handle.write(block)
            written += len(block)
            k += 1
    return set()


def write_bad_lines(path: Path, bad: int) -> set[int]:
    """JSON Lines messages, every other line broken in one of four ways: ``bad`` bad lines."""
    faults = ['{{"time": "2026-01-01T00:00:00Z", "op": "+", "s": "{s}", "p": "<p>"',          # cut short
              '{{"time": "yesterday", "op": "+", "s": "{s}", "p": "<p>", "o": "<o>"}}',        # bad time
              '{{"time": "2026-01-01T00:00:00Z", "op": "*", "s": "{s}", "p": "<p>", "o": "<o>"}}',
              '{{"time": "2026-01-01T00:00:00Z", "op": "+", "s": "\\"lit\\"", "p": "<p>", "o": "{s}"}}']
    numbers = set()
    with path.open("w", encoding="utf-8") as handle:
        for k in range(2 * bad):
            s = _student(k)
            if k % 2:
                handle.write(faults[k // 2 % 4].format(s=s.replace('"', '\\"')) + "\n")
                numbers.add(k + 1)
            else:
                handle.write(json.dumps({"time": "2026-01-01T00:00:00.001Z", "op": "+", "s": s,
                                         "p": ub("takesCourse"), "o": f"<http://e.org/Course{k % 60}>"}) + "\n")
    return numbers


def write_garbage(path: Path, size: int) -> set[int]:
    """``size`` random bytes (a newline every 256 bytes on average: that many garbage lines)."""
    rng = random.Random(1)
    with path.open("wb") as handle:
        for _ in range(max(1, size // MB)):
            handle.write(rng.randbytes(MB))
    return set()


CASES = (Case("1 GB of N-Triples", "large.nt", "every line good", write_large, 1 << 30),
         Case("a million bad lines", "bad.jsonl", "1M good and 1M bad JSON Lines", write_bad_lines, 1_000_000),
         Case("binary garbage", "garbage.nt", "100 MB of random bytes", write_garbage, 100 * MB))


@dataclass
class Result:
    case: Case
    bytes: int
    lines: int
    bronze: int
    quarantine: int
    skipped: int
    wall: float
    cpu: float
    peak_rss: int
    once: bool
    load: tuple[float, float, float]


def ingest(lake: Path, path: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (bytes) of ``lakegraph ingest path`` in a new process."""
    argv = [sys.executable, "-m", "pipelines.cli", "--lake", str(lake), "-q", "ingest", str(path)]
    began = time.monotonic()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    out, err = child.stdout.read().decode(), child.stderr.read().decode()
    if child.returncode:
        raise SystemExit(f"ingest of {path} failed: {err.strip() or out.strip()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def blank_or_comment(line: bytes) -> bool:
    """Whether a parser skips ``line`` (UTF-8, blank or a ``#`` comment) rather than quarantine it."""
    try:
        text = line.decode("utf-8").strip()
    except UnicodeDecodeError:
        return False
    return not text or text.startswith("#")


def count_lines(path: Path) -> tuple[int, int]:
    """The file's lines, and those of them a parser skips (blank or a comment), read in blocks."""
    lines = skipped = 0
    with path.open("rb") as handle:
        for line in handle:
            lines += 1
            skipped += blank_or_comment(line.rstrip(b"\n"))
    return lines, skipped


def run_case(case: Case, work: Path) -> Result:
    path = work / case.file
    bad = case.write(path, case.amount)
    lines, skipped = count_lines(path)
    lake = work / "lake"
    wall, cpu, rss = ingest(lake, path)
    store = open_store(str(lake), backend="delta-rs")
    seqs = store.read_arrow("bronze", columns=["seq"])["seq"]
    quarantined = store.read_arrow("quarantine", columns=["line"])["line"]
    held = set(quarantined.to_pylist())
    once = (len(seqs) + len(quarantined) + skipped == lines and len(held) == len(quarantined)
            and (not seqs or (pc.min(seqs).as_py(), pc.max(seqs).as_py()) == (1, len(seqs)))
            and (not bad or held == bad))
    result = Result(case, path.stat().st_size, lines, len(seqs), len(quarantined), skipped, wall, cpu, rss,
                    once, os.getloadavg())
    path.unlink()
    shutil.rmtree(lake)
    return result


def report(results: list[Result]) -> str:
    rows = "\n".join(
        f"| {r.case.name} ({r.case.what}) | {r.bytes / MB:,.0f} MB | {r.lines:,} | {r.bronze:,} | "
        f"{r.quarantine:,} | {r.skipped:,} | {'yes' if r.once else '**no**'} | {r.wall:.0f} | {r.cpu:.0f} | "
        f"{r.peak_rss / MB:,.0f} MB | {' '.join(f'{x:.1f}' for x in r.load)} |" for r in results)
    return f"""# Bad input at size

`python -m bench.bad_input`: each file ingested by `lakegraph ingest` in a new process, read in chunks
of {chunk_bytes() // MB} MB of lines; peak RSS is the ingest process's own (`wait4`), CPU time is user
+ system. "once" checks that bronze + quarantine + skipped (blank) lines = the file's lines, that no
line is quarantined twice, that bronze's seqs run 1..n without a gap, and (for the bad-lines file)
that the quarantined lines are exactly those written bad. The machine has {os.cpu_count()} cores, shared with other jobs (load average
when each ingest ended, 1/5/15 min).

| file | size | lines | bronze | quarantine | skipped | once | wall s | CPU s | peak RSS | load |
|---|---|---|---|---|---|---|---|---|---|---|
{rows}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bad_input", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every file's size by this (default 1: 1 GB, 1M bad lines, 100 MB)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"the report (default {RESULTS})")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="lakegraph-bad-input-"))
    try:
        results = []
        for case in CASES:
            scaled = Case(case.name, case.file, case.what, case.write, max(1, int(case.amount * args.scale)))
            results.append(run_case(scaled, work))
            r = results[-1]
            print(f"{case.name}: {r.lines:,} lines -> {r.bronze:,} bronze + {r.quarantine:,} quarantine "
                  f"+ {r.skipped:,} skipped, {r.wall:.0f} s wall, {r.cpu:.0f} s CPU, peak RSS "
                  f"{r.peak_rss / MB:,.0f} MB, once: {r.once}", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report(results))
        return 0 if all(r.once for r in results) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
