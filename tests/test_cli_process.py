"""The command line as a user meets it: real ``lakegraph`` processes, their stdout, stderr and exit
status. Nothing but results on stdout, nothing but progress lines or one error line on stderr (no
JVM or Spark log lines at start-up, on an error or at exit), a progress bar on a terminal."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from pipelines import cli

from .processes import LAKEGRAPH, cli_env as _env
from .test_docs import EXPORT, PROGRESS, blocks, commands

ROOT = Path(__file__).resolve().parents[1]


def _stray(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not PROGRESS.match(line)]


@pytest.fixture(scope="module")
def tour(tmp_path_factory) -> Path:
    """The README's tour, run command by command as processes in a scratch directory; the
    directory (with the tour's lake ``./tour``) afterwards."""
    work = tmp_path_factory.mktemp("tour")
    (work / "examples").symlink_to(ROOT / "examples")
    block = next(body for kind, body in blocks("README.md") if kind == "bash" and "LAKEGRAPH_LAKE=./tour" in body)
    env = _env()
    for command in commands(block):
        export = EXPORT.match(command)
        if export:
            env[export.group(1)] = export.group(2)
            continue
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}: exit {done.returncode}: {done.stderr}"
        assert not _stray(done.stderr), f"{command} printed on stderr: {done.stderr}"
        assert done.stdout.strip(), f"{command} printed nothing"
    return work


def lakegraph(work: Path, *argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([LAKEGRAPH, "--lake", str(work / "tour"), *argv], cwd=work, env=_env(),
                          capture_output=True, text=True, **kwargs)


def test_the_readme_tour_prints_no_log_lines_and_keeps_the_jvm_output(tour):
    log = tour / "tour" / "_logs" / "spark.log"
    assert log.is_file() and log.stat().st_size > 0, "the sql commands started a JVM: its output goes here"


@pytest.mark.parametrize("argv,code,starts", [
    (["sql", "SELECT source FROM quarantine"], 1, "lakegraph: error: SQL failed: [UNRESOLVED_COLUMN"),
    (["sql", "INSERT OVERWRITE DIRECTORY '/tmp/lakegraph-x' USING parquet SELECT 1"], 1,
     "lakegraph: error: lakegraph sql is read-only: refused a InsertIntoDir statement"),
    (["answers", "nope"], 1, "lakegraph: error: no registered query named 'nope'"),
    (["--conf", "nonsense", "status"], 1, "lakegraph: error: --conf expects key=value"),
    (["run", "--max-rows", "0"], 1, "lakegraph: error: --max-rows must be at least 1"),
    (["register", "missing.rq"], 1, "lakegraph: error: no such query file: missing.rq"),
    (["answers", "any", "--as-of", "yesterday"], 1, "lakegraph: error: --as-of expects an ISO-8601 time"),
    (["frobnicate"], 2, "lakegraph: error: argument COMMAND: invalid choice"),
    (["answers"], 2, "lakegraph answers: error: the following arguments are required: name"),
])
def test_an_error_is_one_line_and_a_non_zero_exit(tour, argv, code, starts):
    done = lakegraph(tour, *argv)
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(starts), done.stderr


def test_a_reader_that_stops_reading_ends_it_quietly(tour):
    """``lakegraph answers enrolment | head``: once the reader has gone, lakegraph stops without a word,
    with the status a shell gives a command that SIGPIPE ended."""
    proc = subprocess.Popen([LAKEGRAPH, "--lake", str(tour / "tour"), "answers", "enrolment", "--format", "json"],
                            cwd=tour, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()                     # gone before lakegraph writes its first line
    stderr = proc.stderr.read()
    assert (proc.wait(), stderr) == (141, "")


def test_no_lake_is_one_line(tmp_path):
    done = subprocess.run([LAKEGRAPH, "--lake", str(tmp_path / "none"), "status"], env=_env(),
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.splitlines() == [
        f"lakegraph: error: no lake at {tmp_path / 'none'}; create it with "
        f"'lakegraph --lake {tmp_path / 'none'} init'"]


def test_debug_shows_the_traceback(tour):
    done = lakegraph(tour, "--debug", "answers", "nope")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr and "CatalogError" in done.stderr


def test_debug_shows_what_the_jvm_prints(tour):
    done = lakegraph(tour, "--debug", "sql", "SELECT source FROM quarantine")
    assert done.returncode == 1
    assert "Setting default log level" in done.stderr and "Traceback (most recent call last)" in done.stderr


def test_version():
    done = subprocess.run([LAKEGRAPH, "--version"], env=_env(), capture_output=True, text=True)
    assert done.returncode == 0 and re.fullmatch(r"lakegraph \d+\.\d+\.\d+\n", done.stdout)


def test_every_option_of_every_command_is_described():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in [("lakegraph", parser), *sub.choices.items()]:
        for action in command._actions:
            assert action.help, f"{name}: {'/'.join(action.option_strings) or action.dest} has no help"


def test_run_draws_a_progress_bar_on_a_terminal(tmp_path):
    lake = str(tmp_path / "lake")
    for argv in (["init"], ["-q", "ingest", "examples/landing/01_initial.nt"],
                 ["register", "examples/queries/teaching.rq"], ["-q", "ingest", "examples/landing"]):
        subprocess.run([LAKEGRAPH, "--lake", lake, *argv], cwd=ROOT, env=_env(), check=True, capture_output=True)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))   # a terminal's size
    with subprocess.Popen([LAKEGRAPH, "--lake", lake, "run"], cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                          stderr=follower, text=True) as process:
        os.close(follower)
        out = process.stdout.read()
        terminal = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:   # the terminal closed with the process
                break
            if not chunk:
                break
            terminal += chunk
        os.close(leader)
    assert process.returncode == 0
    assert out.startswith("ran 1 batch(es) 1..1: 16 messages")
    shown = terminal.decode(errors="replace")
    assert "batches: " in shown and "messages=16" in shown and "answer changes=2" in shown, shown
    assert not (tmp_path / "lake" / "_logs").exists(), "no step of these needed Spark, yet a JVM started"


def test_demo_script_runs_quietly(tmp_path):
    done = subprocess.run(["bash", "scripts/demo.sh"], cwd=ROOT, env=_env(LAKEGRAPH_LAKE=str(tmp_path / "lake")),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not _stray(done.stderr), done.stderr
    assert '"Linear Algebra"' in done.stdout and "queries: classmates, db_students, enrolment, teaching" in done.stdout
    assert "== answers of enrolment" in done.stdout and '"24"^^<http://www.w3.org/2001/XMLSchema#integer>' in done.stdout
