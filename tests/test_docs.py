"""The commands of docs/sql.md and docs/audit.md, run as written on the example lake.

The lake is built with the steps of ``scripts/demo.sh``. Each ``bash`` block is run command by
command through the CLI's ``main()`` in this process (so the commands share the test run's Spark
session), with the few shell forms the docs use: ``lakegraph ...`` and ``NAME=$(lakegraph ... | tail
-n 1)``, ``$NAME`` expanded as bash would. A ``text`` block after a ``bash`` block is the output of
that block's last command. ``python`` blocks are executed as they are.
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
DOCS = ["sql.md", "audit.md"]
BLOCK = re.compile(r"^```(bash|python|text)\n(.*?)^```$", re.S | re.M)
CAPTURE = re.compile(r"^([A-Za-z_]\w*)=\$\((lakegraph .*) \| tail -n 1\)$", re.S)
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def blocks(doc: str) -> list[tuple[str, str]]:
    return BLOCK.findall((ROOT / "docs" / doc).read_text(encoding="utf-8"))


def commands(script: str) -> list[str]:
    """Shell commands of a block: a command goes on over lines while a quote is open."""
    found, pending = [], ""
    for line in script.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            shlex.split(pending, comments=True)
        except ValueError:   # an open quote: the command continues on the next line
            continue
        if pending.strip() and not pending.lstrip().startswith("#"):
            found.append(pending.strip())
        pending = ""
    assert not pending, f"unterminated command: {pending}"
    return found


def lakegraph(command: str, variables: dict[str, str]) -> str:
    """Run one ``lakegraph ...`` command line; its stdout."""
    def expand(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        assert name in variables, f"${name} is not set before: {command}"
        return variables[name]

    argv = shlex.split(VARIABLE.sub(expand, command))
    assert argv[0] == "lakegraph", f"the docs may only run lakegraph commands, not: {command}"
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(argv[1:])
    assert code == 0, f"{command!r} failed: {err.getvalue().strip()}"
    return out.getvalue()


@pytest.fixture(scope="module")
def demo_lake(tmp_path_factory, spark):  # noqa: ARG001 - the shared session, which the CLI then reuses
    """The lake of ``bash scripts/demo.sh``: init, ingest the initial graph, register the example
    queries, ingest the landing directory, run."""
    lake = str(tmp_path_factory.mktemp("demo") / "lake")
    landing, queries = ROOT / "examples" / "landing", ROOT / "examples" / "queries"
    steps = [["init"], ["-q", "ingest", str(landing / "01_initial.nt")]]
    steps += [["register", str(q)] for q in sorted(queries.glob("*.rq"))]
    steps += [["-q", "ingest", str(landing)], ["-q", "run"]]
    with redirect_stdout(io.StringIO()):
        for argv in steps:
            assert cli.main(["--lake", lake, *argv]) == 0, f"demo step {argv} failed"
    return lake


def run_doc(doc: str, monkeypatch, lake: str) -> list[tuple[str, str]]:
    """Run the doc's bash blocks in order, checking each text block; ``(command, output)`` pairs."""
    monkeypatch.setenv("LAKEGRAPH_LAKE", lake)
    variables: dict[str, str] = {}
    ran: list[tuple[str, str]] = []
    for kind, body in blocks(doc):
        if kind == "bash":
            subprocess.run(["bash", "-n"], input=body, text=True, check=True)   # valid shell as written
            for command in commands(body):
                capture = CAPTURE.match(command)
                if capture:
                    variables[capture.group(1)] = lakegraph(capture.group(2), variables).strip().splitlines()[-1]
                else:
                    ran.append((command, lakegraph(command, variables)))
        elif kind == "text":
            assert body.strip() == ran[-1][1].strip(), f"the output shown after {ran[-1][0]!r} is not what it prints"
    assert ran, f"{doc} has no command"
    return ran


def test_sql_doc_commands_run(demo_lake, monkeypatch):
    outputs = dict(run_doc("sql.md", monkeypatch, demo_lake))
    removed = outputs['lakegraph sql "SELECT * FROM gold_teaching@v1 EXCEPT SELECT * FROM gold_teaching"']
    assert '"Databases"' in removed and "Linear Algebra" not in removed


def test_audit_walkthrough_runs_and_finds_the_messages(demo_lake, monkeypatch):
    ran = run_doc("audit.md", monkeypatch, demo_lake)
    narrowed = ran[-1][1]
    seqs = {int(line.split()[0]) for line in narrowed.splitlines()[1:]}
    assert {33, 41, 42} <= seqs and "04_semester2.rdfp" in narrowed


@pytest.mark.parametrize("doc,index", [(d, i) for d in DOCS for i, (k, _) in enumerate(blocks(d)) if k == "python"])
def test_python_blocks_run(demo_lake, monkeypatch, capsys, doc, index):
    code = blocks(doc)[index][1]
    monkeypatch.setenv("LAKEGRAPH_LAKE", demo_lake)
    exec(compile(code, f"{doc} block {index}", "exec"), {})
    assert "Databases" in capsys.readouterr().out
