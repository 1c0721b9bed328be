"""The benchmark harness: a deterministic generator, and one tiny end-to-end run of the four systems."""
from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import pytest

from bench.__main__ import main
from bench.lubm import UpdateStream, generate, write_ntriples
from bench.measure import spark_jobs
from bench.report import write_report
from bench.runner import QUERY_DIR, Config, Disagreement, check, run_benchmark
from bench.systems import BenchQuery, Lakegraph


def test_generator_is_deterministic_and_scale_stable():
    one = generate(1, departments=1, seed=3)
    assert one.triples == generate(1, departments=1, seed=3).triples
    assert one.triples != generate(1, departments=1, seed=4).triples
    # a larger scale adds universities and leaves the existing ones as they were
    assert set(one.triples) <= set(generate(2, departments=1, seed=3).triples)


def test_stream_is_deterministic_and_every_update_changes_the_graph():
    def batches(seed: int) -> list:
        stream = UpdateStream(generate(1, departments=1, seed=0), seed=seed, delete_ratio=0.4)
        return [stream.next_batch(200) for _ in range(3)]

    first = batches(7)
    assert first == batches(7) and first != batches(8)
    graph = set(generate(1, departments=1, seed=0).triples)
    for op, triple in (u for batch in first for u in batch):
        assert (triple in graph) == (op == "-")
        (graph.discard if op == "-" else graph.add)(triple)
    ops = [op for batch in first for op, _ in batch]
    assert 0.3 < ops.count("-") / len(ops) < 0.5


def test_help_lists_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    usage = capsys.readouterr().out
    for option in ("--scales", "--batch-sizes", "--batches", "--engine", "--separate", "--queries", "--systems",
                   "--out"):
        assert option in usage


def test_bad_option_is_one_line_and_non_zero(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--batch-sizes", "10,0"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "bench: error: argument --batch-sizes: expected positive integers, comma-separated, got '10,0'"]


def test_systems_must_name_one_to_check_lakegraph_against(capsys):
    for given, error in (("foo", "no system 'foo' (systems: lakegraph, recompute, duckdb, oxigraph)"),
                         ("lakegraph", "name at least one system besides lakegraph: its answers are checked "
                                       "against it after every batch")):
        with pytest.raises(SystemExit) as exit_info:
            main(["--systems", given])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.strip().splitlines() == [f"bench: error: argument --systems: {error}"]


def test_a_run_with_fewer_systems_checks_and_reports_those(spark, tmp_path):
    """At 10M triples the four systems do not fit one machine: ``--systems duckdb`` runs lakegraph
    against DuckDB alone, still checked after every batch, and the report leaves the others blank."""
    out = tmp_path / "results"
    config = Config(scales=[1], departments=1, batch_sizes=[30], batches=1, warmup=0, floor_batches=0,
                    queries=[QUERY_DIR / "q6.rq"], others=["duckdb"], out=out, work=tmp_path / "work")
    records = run_benchmark(config, spark, log=lambda _line: None)
    assert sorted(r["system"] for r in records if r["kind"] == "batch") == ["duckdb", "lakegraph"]
    assert write_report(records, out) and "| all |" in (out / "results.md").read_text()


@pytest.mark.parametrize("engine, spark_ran", [("arrow", False), ("spark", True)])
def test_lakegraph_registers_on_the_engine_the_run_names(spark, tmp_path, engine, spark_ran):
    """``--engine`` decides the registrations' backfills too, as ``lakegraph register --engine``
    does: on a local master ``auto`` would take Arrow (no Spark job) for both."""
    lake = Lakegraph(spark, tmp_path / "lake", engine)
    lake.load(write_ntriples(tmp_path / "g.nt", generate(1, departments=1, seed=0).triples))
    with spark_jobs(spark) as jobs:
        lake.register([BenchQuery.from_file(QUERY_DIR / "product.rq")])
    assert (jobs.count > 0) == spark_ran
    assert sum(lake.answers("product").values()) > 0


def test_smoke_four_systems_agree_and_outputs_exist(spark, tmp_path):
    out = tmp_path / "results"
    config = Config(scales=[1], departments=1, batch_sizes=[30], batches=2, warmup=0, floor_batches=1,
                    queries=[QUERY_DIR / "q6.rq", QUERY_DIR / "product.rq", QUERY_DIR / "courses.rq"], out=out,
                    work=tmp_path / "work")
    records = run_benchmark(config, spark, log=lambda _line: None)  # raises if the systems disagree
    batches = [r for r in records if r["kind"] == "batch"]
    assert sorted((r["system"], r["batch"]) for r in batches) == sorted(
        (s, b) for s in ("lakegraph", "recompute", "duckdb", "oxigraph") for b in (1, 2))
    assert [r["kind"] for r in records].count("floor") == 1
    state = next(r for r in records if r["kind"] == "state")
    assert state["answers"]["product"] > 0 and state["sizes"]["views"]["rows"] > 0
    paths = write_report(records, out)
    assert all(p.exists() and p.stat().st_size for p in paths)
    assert "| all |" in (out / "results.md").read_text()
    assert len((out / "results.jsonl").read_text().splitlines()) == len(records)
    assert json.loads((out / "results.jsonl").read_text().splitlines()[0])["kind"] == "machine"


def test_disagreement_names_query_and_batch():
    class Fixed:
        def __init__(self, name: str, bag: Counter) -> None:
            self.name, self.bag = name, bag

        def answers(self, _query: str) -> Counter:
            return self.bag

    systems = [Fixed("lakegraph", Counter({("<a>",): 1, ("<b>",): -1})), Fixed("oxigraph", Counter({("<a>",): 1}))]
    query = SimpleNamespace(name="q7")
    expected = r"query q7, scale 1, batch 3 .*0 answer\(s\) only in lakegraph.*1 only in oxigraph \(e.g. <b>\)"
    with pytest.raises(Disagreement, match=expected):
        check(systems, [query], "scale 1, batch 3 (batch_100_002.jsonl)")
    check(systems[1:], [query], "scale 1, batch 3")   # one system agrees with itself


def test_window_benchmark_smoke_agrees_and_reports_bounded_state(tmp_path):
    """``python -m bench.windows`` at a tiny size (no Spark: the Arrow engine decides its queries'
    FILTERs in process): the systems agree on every window (or it exits 1) and the report shows the
    throughput and the bounded buffer."""
    from bench.windows import main as windows_main

    out = tmp_path / "results"
    assert windows_main(["--window-seconds", "2,4", "--rate", "100", "--duration-seconds", "12",
                         "--file-seconds", "4", "--longer-batches", "6", "--spark-windows", "0",
                         "--check-windows", "2", "--out", str(out)]) == 0
    report = (out / "windows.md").read_text(encoding="utf-8")
    assert "| 2 s |" in report and "| 4 s |" in report and "**bounded**" in report
    assert "| 6 s | 2 |" in report.split("## Longer batches")[1]
    records = [json.loads(line) for line in (out / "windows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {"config", "lakegraph", "lakegraph_batches", "check"} <= {r["kind"] for r in records}


def test_steady_benchmark_smoke_checks_answers_and_reports_each_window(tmp_path):
    """``python -m bench.steady`` at a tiny size (no Spark): lakegraph and DuckDB agree at every
    check (or it exits 1), the one after a maintenance included, and the report gives a row per
    window of batches and the drift."""
    from bench.steady import main as steady_main

    out = tmp_path / "results"
    assert steady_main(["--scale", "1", "--batch-size", "50", "--batches", "12", "--window", "4",
                        "--check-every", "6", "--maintain-every", "6", "--out", str(out)]) == 0
    report = (out / "steady.md").read_text(encoding="utf-8")
    assert "| 1–4 |" in report and "| 9–12 |" in report and "**Drift:**" in report
    records = [json.loads(line) for line in (out / "steady.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["batch"] for r in records if r["kind"] == "check"] == [6, 12]
    assert [r["batch"] for r in records if r["kind"] == "maintain"] == [6]
    assert len([r for r in records if r["kind"] == "batch"]) == 12


def test_social_graph_stream_is_deterministic_and_every_update_changes_the_graph():
    from bench.snb import SocialGraph

    def stream(seed: int) -> tuple[list, list]:
        graph = SocialGraph(seed)
        return graph.grow(300), [graph.next_batch(100, 0.1) for _ in range(3)]

    initial, batches = stream(5)
    assert (initial, batches) == stream(5) and initial != stream(6)[0]
    edges = set(initial)
    for batch in batches:
        assert len(batch) == 100 and sum(op == "-" for op, _ in batch) == 10
        for op, triple in batch:
            assert (triple in edges) == (op == "-")
            (edges.discard if op == "-" else edges.add)(triple)
    assert {p.rsplit("/", 1)[1] for _, p, _ in edges} == {"knows>", "likes>", "replyOf>", "hasCreator>"}


def test_path_benchmark_smoke_agrees_and_reports(spark, tmp_path):
    """``python -m bench.paths`` at a tiny size without Spark's fixpoint: lakegraph and pyoxigraph
    agree on Q1..Q11 after every batch (or ``run`` raises) and the report has its tables."""
    from bench.paths import Settings, run
    from bench.paths_report import write_report as write_paths_report

    out = tmp_path / "results"
    settings = Settings(scale=200, batch_sizes=[40], delete_ratios=[0.1], batches=1, warmup=0, spark_batches=0,
                        out=out)
    records = run(settings, spark, tmp_path / "work", "test", lambda _line: None)
    assert {r["system"] for r in records if r["kind"] == "batch"} == {"lakegraph", "oxigraph"}
    report = write_paths_report(records, out).read_text(encoding="utf-8")
    assert "| 40 | 10% |" in report and "reach rows per pair" in report



def test_path_benchmark_reevaluates_once_and_checks_the_counts(spark, tmp_path):
    """``--systems lakegraph,pyoxigraph-once`` (the 1M-edge run): pyoxigraph re-evaluates each
    query once, after the last batch, its counts equal lakegraph's, and the report weighs one such
    re-evaluation against lakegraph's batches."""
    from bench.paths import Settings, run
    from bench.paths_report import write_report as write_paths_report

    out = tmp_path / "results"
    settings = Settings(scale=200, batch_sizes=[40], delete_ratios=[0.1], batches=1, warmup=0, spark_batches=0,
                        out=out, systems=["lakegraph", "pyoxigraph-once"])
    records = run(settings, spark, tmp_path / "work", "test", lambda _line: None)
    # the state is recorded (without Spark too) after registration and after each configuration's last batch
    assert [r["after"] for r in records if r["kind"] == "state"][1:] == ["b40_d10_000.jsonl"]
    once = next(r for r in records if r["kind"] == "reevaluation")
    answers = next(r for r in records if r["kind"] == "answers")
    assert once["answers"] == {k: v for k, v in answers.items() if k != "kind"} and sum(once["answers"].values())
    report = write_paths_report(records, out).read_text(encoding="utf-8")
    assert "re-evaluating once after the last batch" in report and "x pyoxigraph's one re-evaluation (below; " in report
