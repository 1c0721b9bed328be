"""Writers and readers at once, as real processes: one writer at a time (the other fails with one
line, or waits its turn), ingests beside a run, and readers that see whole batches only."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines import answers
from pipelines.engine.register import unregister
from pipelines.engine.runner import Runner
from pipelines.lake import BatchLog
from pipelines.ops.maintain import maintain
from pipelines.storage import open_store
from pipelines.storage.lock import WRITER, LakeBusy, writer

from .processes import LAKEGRAPH, cli_env

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def lakegraph(lake: Path, *argv: str) -> subprocess.Popen:
    return subprocess.Popen([LAKEGRAPH, "--lake", str(lake), "-q", *argv], env=cli_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def done(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def ok(lake: Path, *argv: str) -> str:
    code, out, err = done(lakegraph(lake, *argv))
    assert code == 0, f"lakegraph {' '.join(argv)}: {err}"
    return out


def holder(lake: Path) -> int | None:
    """The pid the writer lock's file names, once a process holds it."""
    try:
        return json.loads((lake / WRITER).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def wait_for_holder(lake: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while holder(lake) != process.pid:
        assert process.poll() is None and time.monotonic() < deadline, "the run never took the lock"
        time.sleep(0.02)


def enrolments(path: Path, count: int) -> Path:
    """``count`` students enrolling in and leaving the example's courses, one event each."""
    uni = "http://example.org/uni/"
    lines = [json.dumps({"time": f"2026-11-23T09:{i // 60:02d}:{i % 60:02d}Z", "op": "+-"[i % 7 == 6],
                         "s": f"<{uni}s{i % 40}>", "p": f"<{uni}enrolledIn>", "o": f"<{uni}{('db101', 'alg201')[i % 2]}>"})
             for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def lake(tmp_path) -> Path:
    """The example lake with teaching registered and 480 enrolment events waiting: a run of
    batches of 2 takes seconds, longer than the two refused commands after it start (with 120, a
    run on a fast hour of this machine ended before the second did)."""
    path = tmp_path / "lake"
    ok(path, "ingest", str(EXAMPLES / "landing" / "01_initial.nt"), "--time", "2026-11-23T09:00:00Z")
    ok(path, "register", str(EXAMPLES / "queries" / "teaching.rq"))
    ok(path, "ingest", str(enrolments(tmp_path / "enrolments.jsonl", 480)))
    return path


def test_one_writer_at_a_time_and_readers_see_whole_batches(lake, tmp_path):
    run = lakegraph(lake, "run", "--max-rows", "2")
    wait_for_holder(lake, run)
    code, out, err = done(lakegraph(lake, "--wait", "0", "run"))
    assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"lakegraph: error: the lake {lake} is busy: lakegraph run (pid {run.pid}, since ")
    code, _, err = done(lakegraph(lake, "--wait", "0", "maintain"))
    assert code == 1 and "is busy: lakegraph run" in err and len(err.splitlines()) == 1, err
    patient = lakegraph(lake, "--wait", "300", "run")          # waits its turn
    late = tmp_path / "late.nt"
    late.write_text('<http://example.org/uni/s9> <http://xmlns.com/foaf/0.1/name> "Nine" .\n')
    ingested = ok(lake, "ingest", str(late), "--time", "2026-11-23T09:00:00Z")   # beside the run
    seen = []
    while not seen or run.poll() is None:     # at least one read, however fast the run
        seen.append(json.loads(ok(lake, "answers", "teaching", "--format", "json"))["results"]["bindings"])
    assert done(run)[0] == 0 and "ingested 1 rows" in ingested
    code, out, err = done(patient)
    assert code == 0, err
    # on a loaded machine both runs may end before the ingest commits: a last run takes its line
    ok(lake, "run")

    store = open_store(str(lake), None, backend="delta-rs")
    batches = BatchLog(store).records("done")
    assert [b.batch for b in batches] == list(range(len(batches)))                  # none twice
    assert all(b.seq_from == a.seq_to for a, b in zip(batches, batches[1:]))         # none skipped
    assert batches[-1].seq_to == max(store.read_arrow("bronze", columns=["seq"])["seq"].to_pylist())
    settled = [answers.format_answers(answers.answers(store, "teaching", b.batch), ("prof", "student", "title"),
                                      "json") for b in batches]
    whole = [json.loads(text)["results"]["bindings"] for text in settled]
    assert seen and all(s in whole for s in seen), "a reader saw answers no completed batch had"


def _hold_writer_lock(lake: str) -> None:
    with writer(lake, "test"):
        print("held", flush=True)
        sys.stdin.read()          # until the test closes it


def test_every_writer_waits_for_the_writer_lock_on_either_backend(tmp_path, backend, spark):
    store = open_store(str(tmp_path / "lake"), spark, backend=backend)
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.test_concurrency import _hold_writer_lock; " \
           f"_hold_writer_lock({store.root!r})"
    with subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as other:
        assert other.stdout.readline() == "held\n"
        began = time.monotonic()
        for write in (lambda: Runner(store, spark).run(wait=0.3), lambda: maintain(store, wait=0.3),
                      lambda: unregister(store, "q", wait=0.3)):
            with pytest.raises(LakeBusy, match=rf"is busy: lakegraph test \(pid {other.pid}, since .*\) holds its "
                                              r"writer lock; gave up after 0.3 s"):
                write()
        assert time.monotonic() - began < 10
        other.stdin.close()
    with writer(store.root, "check", wait=0):          # released with the process
        pass
