"""Every command the README and ``docs/`` show, run as written.

Each fenced ``bash`` block of ``README.md`` and ``docs/*.md`` is run command by command, in order,
through the CLI's ``main()`` in this process (so the commands share the test run's Spark session),
in a scratch working directory where ``examples/`` is the repository's. Docs that say they run on
the example lake of ``bash scripts/demo.sh`` get that lake as ``./lake`` (and ``$LAKEGRAPH_LAKE``).
The shell forms the docs use: ``lakegraph ...``, ``export NAME=value``, ``NAME=$(lakegraph ... |
tail -n 1)`` and ``$NAME``. A ``text`` block after a ``bash`` block is the output of that block's
last command. Every command must exit 0, print something, and write nothing on stderr but progress
lines. ``python`` blocks are executed as they are.

A command that is not ``lakegraph`` must be in :data:`ELSEWHERE`, with the test that runs it: a new
command in the docs without a test fails here. Inline ``lakegraph ...`` spans in the prose must parse
with the CLI's parser (so they name no option that does not exist).
"""
from __future__ import annotations

import io
import re
import shlex
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from pipelines import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md"] + [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
INLINE = re.compile(r"`(lakegraph\s[^`]*)`")   # a span may wrap across lines
CAPTURE = re.compile(r"^([A-Za-z_]\w*)=\$\((lakegraph .*) \| tail -n 1\)$", re.S)
EXPORT = re.compile(r"^export ([A-Za-z_]\w*)=(\S+)$")
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
#: What a command may print on stderr: the progress lines of ingest and run (stderr not a terminal).
PROGRESS = re.compile(r"^(ingest|batch) ")

#: Docs whose commands run on the example lake of ``bash scripts/demo.sh``.
ON_DEMO_LAKE = {"docs/sql.md", "docs/audit.md", "docs/airflow.md", "docs/engines.md", "docs/storage.md"}

#: Commands of the docs that are not lakegraph commands, and the test that runs each.
ELSEWHERE: dict[str, str] = {
    "bash scripts/demo.sh": "tests/test_cli_process.py::test_demo_script_runs_quietly",
    ".venv/bin/python -m pipelines.jvm_archive":
        "tests/test_jvm_archive.py::test_the_documented_command_keeps_an_archive_that_fits",
    ".venv/bin/python -m pytest -q": "the suite itself: .ci/run runs exactly this",
    ".venv/bin/python -m bench": "tests/test_bench.py::test_smoke_four_systems_agree_and_outputs_exist",
    ".venv/bin/python -m bench --scales 1,10,70 --batch-sizes 1000,10000,100000 --batches 5":
        "tests/test_bench.py::test_smoke_four_systems_agree_and_outputs_exist",
    ".venv/bin/python -m bench --help": "tests/test_bench.py::test_help_lists_every_option",
    ".venv/bin/python -m bench.windows":
        "tests/test_bench.py::test_window_benchmark_smoke_agrees_and_reports_bounded_state",
    ".venv/bin/python -m bench.steady":
        "tests/test_bench.py::test_steady_benchmark_smoke_checks_answers_and_reports_each_window",
    'pip install -e ".[airflow]"': "scripts/setup.sh (run by .ci/run) installs this extra",
    'ln -s "$PWD/airflow_dags/lakegraph_dag.py" "$AIRFLOW_HOME/dags/lakegraph_dag.py"':
        "tests/test_dag.py::test_dag_file_defines_both_dags_with_their_tasks",
    "airflow dags trigger lakegraph -c '{\"lake\": \"/data/lake\", \"landing\": \"/data/landing\", "
    "\"master\": \"local[4]\"}'": "tests/test_dag.py::test_a_dag_run_ingests_validates_and_answers_like_pyoxigraph",
    'airflow pools set lakegraph 1 "lakegraph state writers"': "tests/test_dag.py::test_a_dag_run_ingests_validates_and_answers_like_pyoxigraph",
    "export LAKEGRAPH_POOL=lakegraph": "tests/test_dag.py::test_a_dag_run_ingests_validates_and_answers_like_pyoxigraph",
    "export AIRFLOW_HOME=$(mktemp -d) AIRFLOW__CORE__DAGS_FOLDER=$PWD/airflow_dags "
    "AIRFLOW__CORE__LOAD_EXAMPLES=False": "tests/test_dag.py::test_a_dag_run_ingests_validates_and_answers_like_pyoxigraph",
    "airflow db migrate": "tests/test_dag.py::test_a_dag_run_ingests_validates_and_answers_like_pyoxigraph",
    "airflow dags test lakegraph -c '{\"lake\": \"/tmp/lake\", \"landing\": \"/tmp/landing\", "
    "\"master\": \"local[2]\"}'": "tests/test_dag.py::test_a_dag_run_ingests_validates_and_answers_like_pyoxigraph",
    "airflow dags test lakegraph_maintenance -c '{\"lake\": \"/tmp/lake\"}'":
        "tests/test_dag.py::test_the_maintenance_dag_keeps_the_answers_and_refuses_a_short_retention",
}


def blocks(doc: str) -> list[tuple[str, str]]:
    return BLOCK.findall((ROOT / doc).read_text(encoding="utf-8"))


def commands(script: str) -> list[str]:
    """Shell commands of a block: a command goes on over lines while a quote is open; comments and
    blank lines are dropped, and so is a trailing ``# comment``."""
    found, pending = [], ""
    for line in script.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:   # an open quote: the command continues on the next line
            continue
        if words:
            found.append(_strip_comment(pending.strip()))
        pending = ""
    assert not pending, f"unterminated command: {pending}"
    return found


def _strip_comment(command: str) -> str:
    """The command without a trailing ``  # comment`` (outside quotes)."""
    quote, out = None, []
    for i, char in enumerate(command):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or command[i - 1].isspace()):
            break
        out.append(char)
    return "".join(out).strip()


def every_command() -> list[tuple[str, str]]:
    """``(doc, command)`` for every command of every fenced bash block."""
    return [(doc, c) for doc in DOCS for kind, body in blocks(doc) if kind == "bash" for c in commands(body)]


def lakegraph(command: str, variables: dict[str, str]) -> str:
    """Run one ``lakegraph ...`` command line in this process; its stdout."""
    def expand(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        assert name in variables, f"${name} is not set before: {command}"
        return variables[name]

    argv = shlex.split(VARIABLE.sub(expand, command))
    assert argv[0] == "lakegraph", f"not a lakegraph command: {command}"
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(argv[1:])
    assert code == 0, f"{command!r} failed: {err.getvalue().strip()}"
    stray = [line for line in err.getvalue().splitlines() if not PROGRESS.match(line)]
    assert not stray, f"{command!r} printed on stderr: {stray}"
    assert out.getvalue().strip(), f"{command!r} printed nothing"
    return out.getvalue()


DEMO_STEPS = [["init"], ["ingest", "examples/landing/01_initial.nt"],
              *[["register", f"examples/queries/{q}.rq"] for q in ("classmates", "db_students", "enrolment", "teaching")],
              ["ingest", "examples/landing"], ["run"],
              ["ingest", "examples/windows/building.ttl", "--stream", "http://example.org/building"],
              ["register", "examples/windows/together.rq", "--lateness", "2s"],
              ["ingest", "examples/windows/badges-1.jsonl", "examples/windows/badges-2.jsonl"], ["run", "--flush"]]


@pytest.fixture()
def workdir(tmp_path, monkeypatch, spark):  # noqa: ARG001 - the shared session, which the CLI reuses
    """A scratch working directory with the repository's ``examples/``, as the current directory."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LAKEGRAPH_LAKE", raising=False)
    return tmp_path


def build_demo_lake(workdir: Path) -> None:
    """``./lake`` as ``bash scripts/demo.sh`` leaves it (the script's steps, in its order)."""
    demo = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    assert "for q in examples/queries/*.rq; do lg register" in demo and "lg run" in demo and \
        "lg register examples/windows/together.rq --lateness 2s" in demo, \
        "scripts/demo.sh changed: update DEMO_STEPS"
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        for argv in DEMO_STEPS:
            assert cli.main(["--lake", str(workdir / "lake"), *argv]) == 0, f"demo step {argv} failed"


def run_doc(doc: str, monkeypatch) -> list[tuple[str, str]]:
    """Run the doc's bash blocks in order, checking each text block; ``(command, output)`` pairs."""
    variables: dict[str, str] = {}
    ran: list[tuple[str, str]] = []
    for kind, body in blocks(doc):
        if kind == "bash":
            subprocess.run(["bash", "-n"], input=body, text=True, check=True)   # valid shell as written
            for command in commands(body):
                capture, export = CAPTURE.match(command), EXPORT.match(command)
                if command in ELSEWHERE:
                    continue
                if capture:
                    variables[capture.group(1)] = lakegraph(capture.group(2), variables).strip().splitlines()[-1]
                elif export:
                    monkeypatch.setenv(export.group(1), export.group(2))
                else:
                    ran.append((command, lakegraph(command, variables)))
        elif kind == "text" and ran:
            assert body.strip() == ran[-1][1].strip(), f"the output shown after {ran[-1][0]!r} is not what it prints"
    return ran


def test_every_command_of_the_docs_is_run_by_a_test():
    """A command that is neither ``lakegraph ...`` (run below) nor in ELSEWHERE has no test; an entry
    of ELSEWHERE must name a test that exists (or say what runs it)."""
    unknown = [(doc, c) for doc, c in every_command()
               if c not in ELSEWHERE and not re.match(r"^(lakegraph |export |[A-Za-z_]\w*=\$\(lakegraph )", c)]
    assert not unknown, f"commands in the docs that no test runs: {unknown}"
    shown = {c for _, c in every_command()}
    for command, where in ELSEWHERE.items():
        assert command in shown, f"ELSEWHERE lists a command no doc shows any more: {command}"
        if "::" in where:
            path, name = where.split("::")
            assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), f"{where} does not exist"


def _options(parser) -> set[str]:
    return {o for action in parser._actions for o in action.option_strings}


@pytest.mark.parametrize("doc,span", [(d, s) for d in DOCS
                                      for s in INLINE.findall((ROOT / d).read_text(encoding="utf-8"))])
def test_inline_commands_name_real_options(doc, span):
    """``lakegraph ...`` in the prose names a real command and only options it has (values may be
    placeholders such as ``NAME`` or ``B``)."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    words = shlex.split(span)[1:]
    command = next((w for w in words if w in sub.choices), None)
    assert command or all(w.startswith("-") for w in words), f"{doc}: `{span}` names no lakegraph command"
    known = _options(parser) | (_options(sub.choices[command]) if command else set())
    unknown = [w.split("=")[0] for w in words if w.startswith("-") and w.split("=")[0] not in known]
    assert not unknown, f"{doc}: `{span}` names options {command} does not have: {unknown}"


def test_readme_using_it_runs_as_written(workdir, monkeypatch):
    build_demo_lake(workdir)        # the README's window example reads the demo's lake
    outputs = dict(run_doc("README.md", monkeypatch))
    assert "registered teaching (var-connected) at batch 0" in outputs[
        "lakegraph register examples/queries/teaching.rq --name teaching"]
    assert outputs["lakegraph run"].startswith("ran 1 batch(es) 1..1: 16 messages")
    assert '"Linear Algebra"' in outputs["lakegraph answers teaching"]
    assert '"Databases"' in outputs["lakegraph answers teaching --as-of-batch 0 --format json"]
    assert "unregistered teaching" in outputs["lakegraph unregister teaching"]
    assert (workdir / "tour" / "bronze" / "_delta_log").is_dir()


def test_sql_doc_commands_run(workdir, monkeypatch):
    build_demo_lake(workdir)
    outputs = dict(run_doc("docs/sql.md", monkeypatch))
    removed = outputs['lakegraph sql "SELECT * FROM gold_teaching@v1 EXCEPT SELECT * FROM gold_teaching"']
    assert '"Databases"' in removed and "Linear Algebra" not in removed


def test_audit_walkthrough_runs_and_finds_the_messages(workdir, monkeypatch):
    build_demo_lake(workdir)
    ran = run_doc("docs/audit.md", monkeypatch)
    narrowed = ran[-1][1]
    seqs = {int(line.split()[0]) for line in narrowed.splitlines()[1:]}
    assert {33, 41, 42} <= seqs and "04_semester2.rdfp" in narrowed


def test_paths_walkthrough_runs_as_written(workdir, monkeypatch):
    """docs/paths.md's example: ben, re-attached through another manager, keeps his answer."""
    outputs = dict(run_doc("docs/paths.md", monkeypatch))
    changed = outputs["lakegraph changes under_ceo --since-batch 0"]
    assert "org/cto" in changed and "org/ben" not in changed


@pytest.mark.parametrize("doc", sorted(ON_DEMO_LAKE - {"docs/sql.md", "docs/audit.md"}))
def test_other_docs_commands_run(workdir, monkeypatch, doc):
    build_demo_lake(workdir)
    run_doc(doc, monkeypatch)


@pytest.mark.parametrize("doc,index", [(d, i) for d in DOCS for i, (k, _) in enumerate(blocks(d)) if k == "python"])
def test_python_blocks_run(workdir, monkeypatch, capsys, doc, index):
    build_demo_lake(workdir)
    code = blocks(doc)[index][1]
    exec(compile(code, f"{doc} block {index}", "exec"), {})
    assert "Databases" in capsys.readouterr().out


def test_docs_that_use_the_demo_lake_are_known():
    """A doc that runs commands on the demo lake must be listed, so that it gets one."""
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        if "scripts/demo.sh" in text and doc != "README.md" and any(k == "bash" for k, _ in blocks(doc)):
            assert doc in ON_DEMO_LAKE, f"{doc} mentions the demo lake: add it to ON_DEMO_LAKE"
