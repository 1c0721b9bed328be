"""``python -m bench.growth``: lakes at several sizes, the measured batches alternating between them
in one process, the answers checked against DuckDB's after the last round. No Spark: the Arrow
engine runs these batches (a test outside the Spark session's group that started one would fail)."""
from __future__ import annotations

import json

from bench import growth
from bench.growth import main, rounds_order
from bench.systems import DuckDBRecompute


def test_rounds_rotate_the_order_of_the_scales():
    assert [rounds_order([1, 10, 75], k) for k in range(4)] == [[1, 10, 75], [10, 75, 1], [75, 1, 10], [1, 10, 75]]


def test_a_run_alternates_the_scales_checks_the_answers_and_reports_the_growth(tmp_path, capsys):
    out = tmp_path / "results"
    argv = ["--scales", "1,2", "--batch-size", "50", "--batches", "2", "--out", str(out), "--work", str(tmp_path / "work")]
    assert main(argv) == 0
    rows = [json.loads(line) for line in (out / "growth.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["round"], r["scale"]) for r in rows if r["kind"] == "batch"] == [(1, 1), (1, 2), (2, 2), (2, 1)]
    assert sorted(r["scale"] for r in rows if r["kind"] == "checked") == [1, 2]
    report = (out / "growth.md").read_text(encoding="utf-8")
    figures = growth.summary(rows)
    assert f"{figures['growth']:.2f}x (ratio of the medians)" in report
    assert len(figures["paired"]) == 2 and "equal DuckDB's at scale(s) 1, 2" in report
    assert capsys.readouterr().out.strip() == str(out / "growth.md")


def test_answers_that_differ_from_duckdbs_stop_the_run_in_one_line(tmp_path, capsys, monkeypatch):
    """DuckDB given one batch fewer: its answers differ from lakegraph's, and the run says so."""
    replay = DuckDBRecompute.replay
    monkeypatch.setattr(DuckDBRecompute, "replay", lambda self, queries, paths: replay(self, queries, paths[:-1]))
    argv = ["--scales", "1", "--batch-size", "200", "--batches", "1", "--out", str(tmp_path / "results")]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("bench.growth: disagreement: query ") and "after the last round" in err[-1]
