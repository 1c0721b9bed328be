"""A soak: ``python -m bench.soak --minutes 20 --rate 1000`` feeds a sustained stream and keeps the
pipeline running on it, all through the ``lakegraph`` CLI, then reports latency and state over time.

Why processes and a stream that does not grow the graph: the soak is the deployment in small (a
producer landing files, ``ingest`` beside a ``run`` loop, ``maintain`` on a schedule, as the Airflow
DAG runs them), and what it must show is that nothing accumulates: latency without an upward
trend, Delta files held by compaction, state bounded. So the LUBM-shaped stream
(:class:`bench.lubm.UpdateStream`) deletes as often as it inserts and re-inserts what it deleted:
the graph, and with it the state, stays the size it started at, while every batch still moves the
queries' answers. Bronze, the log of every message, grows by design.

Every ``--interval`` seconds a landing file of ``rate x interval`` messages is written (then
renamed into place) and ingested; the main loop runs ``lakegraph run`` back to back and, every
``--maintain-minutes``, ``lakegraph maintain`` (vacuuming with ``--retention-hours``, 0 by default:
a 20-minute soak under the 7-day time-travel retention would vacuum nothing). After each command it
samples rows, data files and disk use per part of the lake. A batch's latency is from the landing of
the oldest file it applies to the batch's done record; its processing time is from its planned
record to its done record (both in the batch log). Writes ``bench/results/soak.md``, ``soak.png``
and ``soak.jsonl`` (:mod:`bench.soak_report`).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.cli import LAKEGRAPH
from bench.lubm import MessageWriter, UpdateStream, generate, write_ntriples
from bench.measure import lake_sizes
from bench.soak_report import Soak, write_report

QUERIES = Path(__file__).resolve().parent / "queries"
RESULTS = Path(__file__).resolve().parent / "results"
#: How long a command waits for another's lock: a soak's commands queue, they never fail for it.
WAIT = "3600"


def lakegraph(lake: Path, *argv: str) -> float:
    """Run one ``lakegraph`` command on ``lake``; its wall seconds (it must succeed)."""
    began = time.monotonic()
    done = subprocess.run([LAKEGRAPH, "--lake", str(lake), "--wait", WAIT, "-q", *argv],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"bench.soak: error: lakegraph {' '.join(argv)} failed: {done.stderr.strip()}")
    return time.monotonic() - began


class Feeder(threading.Thread):
    """Lands and ingests a file of ``rate x interval`` messages every ``interval`` seconds (at once
    when it is behind), recording when each file landed."""

    def __init__(self, soak: Soak, lake: Path, landing: Path, stream: UpdateStream, rate: int,
                 interval: float, until: float) -> None:
        super().__init__(name="feeder", daemon=True)
        self.soak, self.lake, self.landing, self.stream = soak, lake, landing, stream
        self.size, self.interval, self.until = max(1, round(rate * interval)), interval, until
        self.writer = MessageWriter()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            due, k = time.monotonic(), 0
            while due < self.until:
                time.sleep(max(0.0, due - time.monotonic()))
                path = self.landing / f"{k:06d}.jsonl"
                self.writer.write(path.with_suffix(".part"), self.stream.next_batch(self.size))
                os.replace(path.with_suffix(".part"), path)       # a landing file lands complete
                landed = time.time()
                self.soak.ingested(str(path), landed, lakegraph(self.lake, "ingest", str(path)))
                due, k = due + self.interval, k + 1
        except BaseException as exc:                              # reported by the main loop
            self.failure = exc


def prepare(work: Path, scale: int, queries: list[str]) -> tuple[Path, UpdateStream]:
    """A lake holding the initial LUBM graph with ``queries`` registered, and the stream over it."""
    lake, dataset = work / "lake", generate(scale)
    initial = write_ntriples(work / "initial" / "initial.nt", dataset.triples)
    lakegraph(lake, "init")
    lakegraph(lake, "ingest", str(initial))
    for name in queries:
        lakegraph(lake, "register", str(QUERIES / f"{name}.rq"))
    lakegraph(lake, "run")
    return lake, UpdateStream(dataset, seed=1, delete_ratio=0.5, reinsert_ratio=1.0)


def soak(args: argparse.Namespace, work: Path) -> Soak:
    queries = args.queries.split(",")
    lake, stream = prepare(work, args.scale, queries)
    landing = work / "landing"
    landing.mkdir()
    began = time.monotonic()
    until = began + args.minutes * 60
    result = Soak(args.rate, args.interval, args.scale, queries, args.maintain_minutes,
                  args.retention_hours, triples=len(stream), started=time.time())
    feeder = Feeder(result, lake, landing, stream, args.rate, args.interval, until)
    feeder.start()
    next_maintain = began + args.maintain_minutes * 60
    while feeder.is_alive() or time.monotonic() < until:
        if time.monotonic() >= next_maintain:
            command = "maintain"
            seconds = lakegraph(lake, "maintain", "--retention-hours", str(args.retention_hours), "--force")
            next_maintain = time.monotonic() + args.maintain_minutes * 60
        else:
            command, seconds = "run", lakegraph(lake, "run")
        result.sample(command, seconds, lake_sizes(lake), os.getloadavg())
    if feeder.failure is not None:
        raise SystemExit(f"bench.soak: error: the feeder failed: {feeder.failure}")
    result.sample("run", lakegraph(lake, "run"), lake_sizes(lake), os.getloadavg())    # drain
    result.read_logs(lake)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20, help="how long to feed the stream (default 20)")
    parser.add_argument("--rate", type=int, default=1000, help="messages per second (default 1000)")
    parser.add_argument("--interval", type=float, default=5, help="seconds between landing files (default 5)")
    parser.add_argument("--scale", type=int, default=1, help="LUBM universities of the initial graph (default 1)")
    parser.add_argument("--queries", default="q1,q2,q4,q6",
                        help="bench/queries to register, comma-separated (default q1,q2,q4,q6)")
    parser.add_argument("--maintain-minutes", type=float, default=5, help="minutes between maintenances (default 5)")
    parser.add_argument("--retention-hours", type=int, default=0, help="the maintenances' vacuum retention "
                        "(default 0: every file no version uses goes)")
    parser.add_argument("--bucket-minutes", type=float, default=2, help="latency buckets (default 2)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"where the report goes (default {RESULTS})")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="lakegraph-soak-"))
    try:
        result = soak(args, work)
        print(write_report(result, args.out, args.bucket_minutes))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
