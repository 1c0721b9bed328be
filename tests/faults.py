"""Real faults: the ``lakegraph`` commands as processes, SIGKILLed at seeded random moments, restarted
until each completes, and the lake compared with one built without a kill.

The script (:func:`script`) is the example lake's life in the commands a deployment runs: ingests
(N-Triples, Turtle background graphs, RDF Patch, JSON Lines), registrations with a backfill (an
aggregate over a join, a property path, a windowed query), runs in several small batches
(``--max-rows``), a maintenance that compacts and vacuums (retention 0, forced, so it really deletes
files) between two runs, a last run that flushes the windows, and the aggregate unregistered and
registered again (its tables dropped and backfilled anew).

A kill lands at a moment drawn from the step's duration in the uninterrupted run, so it falls in
a commit, between two commits, or between the files of one (delta-rs writes the data files, then the
log entry). The whole process group is killed, as a node dying would take it. A killed step is
started again with ``--wait 0``: the flock of a killed holder is gone with it, so the restart must
never find the lake locked. A registration whose catalog row landed before the kill is done: its
restart says the name is registered, which ends the step; so is an unregistration whose catalog row
went (its restart says there is no such query; the tables it had not dropped yet are the next
registration's to drop).

The lakes are equal when every table holds the same rows as a bag (:func:`tests.lakes.snapshot`:
row order and the wall-clock write times are not content), and when every query's answers at every
batch (time travel) and its answer changes are the same.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipelines import answers
from pipelines.catalog import registered
from pipelines.lake import BatchLog
from pipelines.storage import StorageError
from pipelines.storage.delta_rs import DeltaRsStore

from .lakes import snapshot
from .processes import LAKEGRAPH, cli_env

ROOT = Path(__file__).resolve().parents[1]
#: The event time of messages that carry none (N-Triples, Turtle, RDF Patch without a header), so
#: that two lakes built at different times hold the same bronze rows.
TIME = "2026-11-23T08:59:00Z"
#: What the restart of a command prints when the killed attempt had done its work, which ends the
#: step: a registration whose catalog row landed, an unregistration whose catalog row went (the
#: tables it had not dropped yet are the next registration's to drop).
DONE_BEFORE = {"register": "is already registered", "unregister": "no registered query named"}
#: Columns holding table version numbers (see :func:`differences`).
VERSION_COLUMNS = ("versions", "gold_version")


@dataclass(frozen=True)
class Step:
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join(self.argv)


def landing(work: Path) -> Path:
    """The example files, copied to ``work/landing`` (the ingest log keeps absolute paths, so the
    lakes compared must read the same copies)."""
    target = work / "landing"
    if not target.exists():
        for folder in ("landing", "queries", "paths", "windows"):
            shutil.copytree(ROOT / "examples" / folder, target / folder)
    return target


def script(files: Path, retention_hours: int = 0) -> list[Step]:
    """The commands of the example lake's life (see the module text), on the files at ``files``;
    its maintenance keeps removed files ``retention_hours`` (0, forced: the vacuum deletes every
    file no current version uses, and the run after it must still find the change feed it has not
    consumed; the default 168: every version stays readable)."""
    retention = ("--retention-hours", str(retention_hours), "--force") if retention_hours < 168 else ()
    def ingest(*paths: str, stream: str | None = None) -> Step:
        return Step(("ingest", *[str(files / p) for p in paths], "--time", TIME,
                     *(("--stream", stream) if stream else ())))

    def register(path: str, *options: str) -> Step:
        return Step(("register", str(files / path), *options))

    return [
        ingest("landing/01_initial.nt", "paths/org.ttl"),
        ingest("windows/building.ttl", stream="http://example.org/building"),
        register("queries/enrolment.rq"),
        register("paths/under_ceo.rq"),
        register("windows/together.rq", "--lateness", "2s"),
        ingest("landing", "paths/reorg.rdfp", "windows/badges-1.jsonl"),
        Step(("run", "--max-rows", "6")),
        Step(("maintain", *retention)),
        ingest("windows/badges-2.jsonl"),
        Step(("run", "--max-rows", "4", "--flush")),
        Step(("unregister", "enrolment")),
        register("queries/enrolment.rq"),
    ]


def start(lake: Path, step: Step) -> subprocess.Popen:
    """``step`` as a ``lakegraph`` process in its own process group."""
    return subprocess.Popen([LAKEGRAPH, "--lake", str(lake), "-q", "--wait", "0", *step.argv], env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(process: subprocess.Popen, step: Step) -> None:
    """Wait for ``process``; a failure other than the restart of a registration or
    unregistration the killed attempt had finished is an error."""
    out, err = process.communicate(timeout=600)
    done_before = DONE_BEFORE.get(step.argv[0])
    if process.returncode != 0 and not (done_before and done_before in err):
        raise AssertionError(f"lakegraph {step}: exit {process.returncode}: {err.strip()}")


def _timed(lake: Path, step: Step) -> float:
    began = time.monotonic()
    finish(start(lake, step), step)
    return time.monotonic() - began


def run_clean(lake: Path, steps: list[Step]) -> tuple[list[float], float]:
    """Run ``steps`` without a kill; the wall time of each, and of a ``queries`` afterwards (the
    start-up every command pays before its work: a kill before then tests nothing). ``queries``
    opens the lake and reads only the catalog; ``status``, which reads every table, took longer
    than an ingest on a slow machine, so that most kills were drawn for after their step ended."""
    durations = [_timed(lake, step) for step in steps]
    return durations, _timed(lake, Step(("queries",)))


@dataclass
class Kills:
    """What a run with kills did: kills that landed (the process was still running), by command."""

    landed: dict[str, int] = field(default_factory=dict)
    missed: int = 0
    restarts: int = 0

    @property
    def total(self) -> int:
        return sum(self.landed.values())


def run_with_kills(lake: Path, steps: list[Step], durations: list[float], start_up: float, kills: int,
                   seed: int) -> Kills:
    """Run ``steps``, killing about ``kills`` of their processes (each step's share in proportion
    to its work) at a moment drawn (``seed``) between ``start_up`` and 1.1 times its uninterrupted
    duration, both scaled by how much slower or faster than the uninterrupted run the last step
    that ran to its end was; a killed step is restarted until it completes (its restart may be
    killed too), and a kill that came too late goes to the next step."""
    rng = random.Random(seed)
    owed = [0] * len(steps)
    for index in rng.choices(range(len(steps)), weights=[max(d - start_up, 0.1) for d in durations], k=kills):
        owed[index] += 1
    report = Kills()
    pace = 1.0      # this run's speed against the uninterrupted one's (the machine's load moves)
    for index, step in enumerate(steps):
        while True:
            began = time.monotonic()
            process = start(lake, step)
            if not owed[index]:
                finish(process, step)
                pace = (time.monotonic() - began) / durations[index]
                break
            owed[index] -= 1
            try:
                process.wait(timeout=pace * rng.uniform(start_up, max(durations[index], start_up) * 1.1))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                report.landed[step.argv[0]] = report.landed.get(step.argv[0], 0) + 1
                report.restarts += 1
                continue
            report.missed += 1          # the step finished first: its next kill goes to the next step
            pace = (time.monotonic() - began) / durations[index]
            if index + 1 < len(steps):
                owed[index + 1] += owed[index] + 1
                owed[index] = 0
            finish(process, step)
            break
    return report


def _bag(table) -> list[str]:
    return sorted(map(repr, table.to_pylist()))


def differences(expected: Path, actual: Path, vacuumed: bool = True) -> list[str]:
    """How the lake at ``actual`` differs from the one at ``expected`` (see the module text); empty
    when they are equal. Answers at a version the expected lake cannot read are skipped when its
    maintenance was ``vacuumed`` (forced below the time-travel horizon), and a difference otherwise. Table version numbers are not compared (the batch log's ``versions``, the
    window log's ``gold_version``): a killed ``maintain`` that is run again commits its compaction
    and vacuum of a table again, which moves the numbers and changes no row. What they are for is
    compared instead: each query's answers at every batch and in every window, read through them."""
    found = []
    want, got = snapshot(expected, VERSION_COLUMNS), snapshot(actual, VERSION_COLUMNS)
    for name in sorted(set(want) | set(got)):
        if name not in got or name not in want:
            found.append(f"table {name}: only in the {'expected' if name in want else 'actual'} lake")
        elif want[name] != got[name]:
            lost = [r for r in want[name] if r not in got[name]]
            extra = [r for r in got[name] if r not in want[name]]
            found.append(f"table {name}: {len(want[name])} rows expected, {len(got[name])} found; "
                         f"e.g. missing {lost[:1]}, extra {extra[:1]}")
    if found:
        return found
    before, after = DeltaRsStore(str(expected)), DeltaRsStore(str(actual))
    batches = [r.batch for r in BatchLog(before).records("done")]
    for query in registered(before):
        name = query.plan.name
        reads = {f"at batch {b}": {"batch": b} for b in batches if b >= query.registered_batch}
        if query.plan.streams:
            reads.update({f"of window {w['window']}": {"window": w["window"]} for w in answers.windows(before, name)})
        for what, at in reads.items():
            try:
                want_rows = answers.answers(before, name, **at)
            except (StorageError, OSError) as exc:    # a version a forced vacuum removed
                if not vacuumed:
                    found.append(f"query {name}: answers {what} unreadable: {exc}")
                continue
            if _bag(answers.answers(after, name, **at)) != _bag(want_rows):
                found.append(f"query {name}: answers {what} differ")
    return found
