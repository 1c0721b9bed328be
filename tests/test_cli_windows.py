"""The window commands through the CLI on the example of docs/windows.md: `windows`, `answers
--window/--close`, `run --flush`, `register --lateness`; each misuse is one line on stderr and a
non-zero exit."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipelines import cli

from .test_cli_register import lake_state

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "windows"
CLOSE_3 = "2026-11-23T09:00:15Z"


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):  # noqa: ARG001 - the shared session, which the CLI reuses
    """The worked example's lake after both badge files (windows 1..3 emitted, one late message)."""
    root = tmp_path_factory.mktemp("windows")
    path, PLAIN = str(root / "lake"), root / "plain.rq"
    steps = [["init"], ["ingest", str(EXAMPLE / "building.ttl"), "--stream", "http://example.org/building"],
             ["register", str(EXAMPLE / "together.rq"), "--lateness", "PT2S"],
             ["ingest", str(EXAMPLE / "badges-1.jsonl")], ["run"], ["ingest", str(EXAMPLE / "badges-2.jsonl")],
             ["run"], ["register", str(PLAIN), "--name", "whole"]]
    PLAIN.parent.mkdir(parents=True, exist_ok=True)
    PLAIN.write_text("SELECT ?s WHERE { ?s <http://example.org/isIn> ?o }", encoding="utf-8")
    for argv in steps:
        assert cli.main(["--lake", path, "-q", *argv]) == 0, argv
    return path


def _out(lake: str, capsys, *argv: str) -> str:
    capsys.readouterr()
    assert cli.main(["--lake", lake, *argv]) == 0, argv
    return capsys.readouterr().out


def test_a_window_by_number_by_close_in_iso_or_ms_and_the_latest_agree(lake, capsys):
    by_number = _out(lake, capsys, "answers", "together", "--window", "3")
    assert "<http://example.org/r2>" in by_number
    assert _out(lake, capsys, "answers", "together", "--close", CLOSE_3) == by_number
    assert _out(lake, capsys, "answers", "together", "--close", "1795424415000") == by_number
    assert _out(lake, capsys, "answers", "together") == by_number          # the latest emitted window
    assert _out(lake, capsys, "answers", "together", "--window", "2").strip() == "?room\t?floor"


def test_windows_lists_the_log_and_the_late_count_in_every_format(lake, capsys):
    listed = json.loads(_out(lake, capsys, "windows", "together", "--format", "json"))
    assert listed["query"] == "together" and listed["late"] == 1
    assert [(w["window"], w["close"], w["answers"]) for w in listed["windows"]] == [
        (1, "2026-11-23T09:00:05.000Z", 1), (2, "2026-11-23T09:00:10.000Z", 0), (3, "2026-11-23T09:00:15.000Z", 1)]
    csv = _out(lake, capsys, "windows", "together", "--format", "csv").splitlines()
    assert csv[0] == "window,open,close,open_ms,close_ms,answers" and csv[-1] == "late messages: 1"
    status = _out(lake, capsys, "status")
    assert "together: 3 window(s) emitted, the last closing at 2026-11-23 09:00:15Z; 1 late message(s)" in status


@pytest.mark.parametrize("argv,message", [
    (["windows", "nope"], "no registered query named 'nope'"),
    (["answers", "together", "--window", "9"], "has not emitted window 9 (the last is window 3"),
    (["answers", "together", "--close", "2026-11-23T09:00:16Z"], "has not emitted a window closing at"),
    (["answers", "together", "--close", "soon"], "--close expects an ISO-8601 time"),
    (["register", str(EXAMPLE / "together.rq"), "--name", "w2", "--lateness", "2"], "--lateness: '2' is not a duration"),
])
def test_misuse_is_one_line(lake, capsys, argv, message):
    capsys.readouterr()
    assert cli.main(["--lake", lake, *argv]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_queries_share_the_window_log_and_state_and_unregistering_takes_out_only_their_rows(lake, tmp_path, capsys):
    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    mine = ["window", "close", "answers"]
    before = [{k: w[k] for k in mine} for w in json.loads(_out(copy, capsys, "windows", "together", "--format", "json"))["windows"]]
    for _ in range(2):              # registered anew: its windows are logged once
        _out(copy, capsys, "register", str(EXAMPLE / "together.rq"), "--name", "again", "--lateness", "PT2S")
        again = json.loads(_out(copy, capsys, "windows", "again", "--format", "json"))["windows"]
        assert [{k: w[k] for k in mine} for w in again] == before
        _out(copy, capsys, "unregister", "again")
    for table in ("window_log", "window_state"):
        rows = _out(copy, capsys, "sql", f"SELECT query, count(*) AS n FROM {table} GROUP BY query")
        assert "together" in rows and "again" not in rows, table


def test_window_options_on_a_query_without_windows_are_refused(lake, tmp_path, capsys):
    query = Path(lake).parent / "plain.rq"
    before = lake_state(lake)
    for argv, message in [(["register", str(query), "--lateness", "2s"], "a lateness applies to time and [NOW]"),
                          (["windows", "whole"], "has no stream windows"),
                          (["answers", "whole", "--window", "1"], "has no stream windows")]:
        capsys.readouterr()
        assert cli.main(["--lake", lake, *argv]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert lake_state(lake) == before


def test_flush_emits_the_windows_that_hold_data_then_nothing_more(lake, tmp_path, capsys):
    import shutil

    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    _out(copy, capsys, "run", "--flush")
    listed = json.loads(_out(copy, capsys, "windows", "together", "--format", "json"))
    assert [w["window"] for w in listed["windows"]] == [1, 2, 3, 4, 5, 6]
    assert listed["windows"][-1]["close"] == "2026-11-23T09:00:30.000Z"       # last event 09:00:21 + RANGE
    _out(copy, capsys, "run", "--flush")
    assert len(json.loads(_out(copy, capsys, "windows", "together", "--format", "json"))["windows"]) == 6


def test_a_register_stream_feeds_a_query_and_answers_print_its_graph(lake, tmp_path, capsys):
    import shutil

    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    busy = tmp_path / "busy.rq"
    busy.write_text((EXAMPLE / "together.rq").read_text(encoding="utf-8")
                    .replace("REGISTER QUERY together AS", "REGISTER STREAM busy AS")
                    .replace("SELECT ?room ?floor", "CONSTRUCT { ?room ex:busyOn ?floor }"), encoding="utf-8")
    floors = tmp_path / "floors.rq"
    floors.write_text("PREFIX ex: <http://example.org/>\nSELECT ?floor\nFROM STREAM <http://example.org/busy> "
                      "[RANGE 10s TUMBLING]\nWHERE { ?room ex:busyOn ?floor }", encoding="utf-8")
    _out(copy, capsys, "register", str(busy), "--lateness", "2s", "--output-stream", "http://example.org/busy")
    _out(copy, capsys, "register", str(floors))
    _out(copy, capsys, "run", "--flush")
    graph = _out(copy, capsys, "answers", "busy", "--window", "3")
    assert graph.strip() == ('<http://example.org/r2> <http://example.org/busyOn> '
                             '"2"^^<http://www.w3.org/2001/XMLSchema#integer> .')
    windows = json.loads(_out(copy, capsys, "windows", "floors", "--format", "json"))["windows"]
    assert [w["answers"] for w in windows] == [1, 1, 1]     # floor 1, then 2 (r2 busy at :15 and :20)


def test_a_query_whose_state_is_in_the_old_per_query_table_is_refused_until_registered_again(lake, tmp_path, capsys):
    """A lake from before the one window state table: running its windowed query would restart its
    windows from nothing, so `run` refuses it in one line; registering it again replays bronze."""
    from pipelines.storage.delta_rs import DeltaRsStore
    from schemas import tables as S

    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    before = json.loads(_out(copy, capsys, "windows", "together", "--format", "json"))["windows"]
    DeltaRsStore(copy).create("w_together_state", S.WINDOW_PROGRESS)   # what an earlier lakegraph left
    capsys.readouterr()
    assert cli.main(["--lake", copy, "run"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "w_together_state" in err[0] and "register it again" in err[0], err
    _out(copy, capsys, "unregister", "together")
    _out(copy, capsys, "register", str(EXAMPLE / "together.rq"), "--lateness", "PT2S")
    _out(copy, capsys, "run")
    assert "w_together_state" not in lake_state(copy)
    again = json.loads(_out(copy, capsys, "windows", "together", "--format", "json"))["windows"]
    assert [w["close"] for w in again] == [w["close"] for w in before]
