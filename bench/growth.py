"""``python -m bench.growth``: how lakegraph's batch time grows with the graph, measured so that the
machine's drift cancels out (issue 13's growth figure, 1M to 10M triples).

The main benchmark (``python -m bench``) runs its scales one after the other, each beside the
systems it compares with: a scale's batches are timed minutes apart from another's, each after
another system's work (at 10M triples every lakegraph batch follows DuckDB's 31 s re-run of the
queries), on a shared machine whose speed drifts (:func:`bench.machine.speed_probe`; the same
1,000-update batch took 0.12 s one day and 0.36 s another). So its growth figure moved from 1.22x
to 1.49x between runs of the same code. Here lakegraph alone keeps a lake per scale in one process,
all built first (load, then the queries registered together), and the measured batches alternate:
round ``k`` applies the ``k``-th batch at every scale in turn, the order rotated each round. The
growth is the ratio of the scales' median batch times, and each round's ratio of the largest scale
to the smallest is given too, since both come from the same minutes of the machine.

After the last round every scale's answers are checked against DuckDB's: the graph loaded, every
batch merged, each query run once (a disagreement stops the run, exit status 1).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Callable

from pipelines.spark import LazySpark, SparkSource, get_spark, parse_conf

from .__main__ import _Parser, _ints, _positive, add_data_options
from .machine import machine_info, speed_probe
from .runner import RESULTS_DIR, Config, Landing, Records, check, run_command, settle, write_landing
from .systems import BenchQuery, DuckDBRecompute, Lakegraph

#: Where ``python -m bench.growth`` writes unless told (``--out``).
GROWTH_DIR = RESULTS_DIR / "growth"


def rounds_order(scales: list[int], round_: int) -> list[int]:
    """The order the scales take their batch in round ``round_``: rotated by one each round, so
    that no scale always goes first (or always follows the largest)."""
    shift = round_ % len(scales)
    return scales[shift:] + scales[:shift]


def run(config: Config, spark: SparkSource, work: Path, command: str, log: Callable[[str], None]) -> list[dict]:
    """Build a lake per scale, then alternate the measured batches; returns the raw records
    (also in ``config.out/growth.jsonl``)."""
    records = Records(config.out / "growth.jsonl")
    records.add({"kind": "machine", **machine_info(None), "command": command})
    queries = [BenchQuery.from_file(p) for p in config.queries]
    landings: dict[int, Landing] = {}
    lakes: dict[int, Lakegraph] = {}
    for scale in config.scales:
        landings[scale] = files = write_landing(config, scale, work / f"scale{scale}", [])   # no matchable count
        lakes[scale] = lake = Lakegraph(spark, work / f"scale{scale}" / "lake", config.engine, config.storage)
        load_s, register_s = lake.load(files.initial), lake.register(queries)
        records.add({"kind": "setup", "scale": scale, "triples": files.triples, "load_s": load_s,
                     "register_s": register_s})
        log(f"scale {scale}: {files.triples} triples, load {load_s:.1f}s, register {register_s:.1f}s")
        for path in files.warmups:
            lake.apply(path)
    for k in range(config.batches):
        probe = speed_probe()
        for scale in rounds_order(config.scales, k):
            settle(spark)
            batch = landings[scale].planned[k]
            timing = lakes[scale].apply(batch.path)
            records.add({"kind": "batch", "round": k + 1, "scale": scale, "batch_size": batch.size,
                         "graph_triples": batch.triples_after, "seconds": timing.seconds, "parts": timing.parts,
                         "commits": timing.commits, "probe_ms": probe})
            log(f"round {k + 1}/{config.batches}, scale {scale}: {timing.parts['run']:.3f}s")
    for scale in config.scales:
        files = landings[scale]
        duckdb = DuckDBRecompute(work / f"scale{scale}" / "duckdb")
        duckdb.load(files.initial)
        duckdb.replay(queries, [*files.warmups, *(b.path for b in files.planned)])
        check([lakes[scale], duckdb], queries, f"scale {scale}, after the last round")
        duckdb.close()
        records.add({"kind": "checked", "scale": scale, "against": "duckdb"})
        log(f"scale {scale}: lakegraph's answers equal DuckDB's")
    return records.rows


def summary(rows: list[dict]) -> dict:
    """The figures of a run's records: per scale the median bronze-to-gold and end-to-end batch
    time, the growth (ratio of medians, smallest scale to largest), and each round's paired ratio."""
    batches = [r for r in rows if r["kind"] == "batch"]
    scales = sorted({r["scale"] for r in batches})
    run_s = {s: [r["parts"]["run"] for r in batches if r["scale"] == s] for s in scales}
    end_s = {s: [r["seconds"] for r in batches if r["scale"] == s] for s in scales}
    medians = {s: statistics.median(v) for s, v in run_s.items()}
    small, large = scales[0], scales[-1]
    by_round = {(r["round"], r["scale"]): r["parts"]["run"] for r in batches}
    rounds = sorted({r["round"] for r in batches})
    paired = [by_round[(k, large)] / by_round[(k, small)] for k in rounds
              if (k, large) in by_round and (k, small) in by_round]
    return {"scales": scales, "median_run": medians, "median_end": {s: statistics.median(v) for s, v in end_s.items()},
            "growth": medians[large] / medians[small], "paired": paired,
            "paired_median": statistics.median(paired) if paired else None}


def write_report(rows: list[dict], out: Path) -> Path:
    """``growth.md`` in ``out``: the setup, every round, and the growth."""
    machine = next(r for r in rows if r["kind"] == "machine")
    setup = {r["scale"]: r for r in rows if r["kind"] == "setup"}
    figures = summary(rows)
    scales = figures["scales"]
    lines = ["# lakegraph batch time as the graph grows (issue 13's growth figure)", "",
             f"`{machine['command']}`, lakegraph at commit {machine['commit']}; {machine['cores']} cores, "
             f"Python {machine['python']}, deltalake {machine['versions'].get('deltalake')}.", "",
             "| scale | triples | load (s) | register (s) | median bronze→gold (s) | median end to end (s) |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {s} | {setup[s]['triples']:,} | {setup[s]['load_s']:.1f} | {setup[s]['register_s']:.1f} | "
              f"{figures['median_run'][s]:.3f} | {figures['median_end'][s]:.3f} |" for s in scales]
    batches = [r for r in rows if r["kind"] == "batch"]
    lines += ["", "| round | speed probe (ms) | " + " | ".join(f"scale {s} bronze→gold (s)" for s in scales)
              + f" | {scales[-1]} ÷ {scales[0]} |", "|---|---|" + "---|" * len(scales) + "---|"]
    for k, ratio in zip(sorted({r["round"] for r in batches}), figures["paired"]):
        cells = {r["scale"]: r for r in batches if r["round"] == k}
        lines.append(f"| {k} | {cells[scales[0]]['probe_ms']:.0f} | "
                     + " | ".join(f"{cells[s]['parts']['run']:.3f}" for s in scales) + f" | {ratio:.2f}x |")
    checked = sorted(r["scale"] for r in rows if r["kind"] == "checked")
    lines += ["", f"**Growth from scale {scales[0]} to {scales[-1]}** "
              f"({setup[scales[-1]]['triples'] / setup[scales[0]]['triples']:.1f}x the triples): "
              f"{figures['growth']:.2f}x (ratio of the medians); each round's ratio "
              f"{min(figures['paired']):.2f}-{max(figures['paired']):.2f}x, median {figures['paired_median']:.2f}x.",
              "", "Rounds alternate the scales (the order rotated each round) in one process, lakegraph alone; "
              "bronze→gold is `Runner.run`, end to end adds the ingest. The speed probe is "
              "`bench.machine.speed_probe` before the round (lower is faster). "
              f"Answers after the last round equal DuckDB's at scale(s) {', '.join(map(str, checked))}."]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "growth.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def build_parser() -> argparse.ArgumentParser:
    defaults = Config()
    p = _Parser(prog="python -m bench.growth", description="lakegraph's batch time at several graph sizes, "
                "the batches alternating between the sizes in one process, the answers checked against DuckDB.")
    p.add_argument("--scales", type=_ints, default=defaults.scales, metavar="N,N",
                   help="universities per lake, comma-separated (default 1,10; 75,750 for 1M and 10M triples)")
    p.add_argument("--batch-size", type=_positive, default=1000, help="updates per batch (default 1000)")
    p.add_argument("--batches", type=_positive, default=5, help="measured rounds (default 5)")
    p.add_argument("--warmup", type=int, default=defaults.warmup, help="unmeasured batches per lake (default 1)")
    add_data_options(p, defaults)
    p.add_argument("--out", type=Path, default=GROWTH_DIR, help="results directory (default bench/results/growth)")
    p.add_argument("--work", type=Path, help="keep lakes and landing files here (default: a temporary directory)")
    p.add_argument("--master", default="local[2]", help="Spark master, if a step needs one (default local[2])")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="Spark configuration, repeatable")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.warmup < 0:
        print("bench.growth: error: --warmup must be 0 or more", file=sys.stderr)
        return 2
    config = Config(scales=args.scales, departments=args.departments, batch_sizes=[args.batch_size],
                    batches=args.batches, warmup=args.warmup, floor_batches=0, delete_ratio=args.delete_ratio,
                    seed=args.seed, queries=args.queries, out=args.out, work=args.work)
    command = " ".join(["python -m bench.growth", *(sys.argv[1:] if argv is None else argv)])

    def body(work: Path, log: Callable[[str], None]) -> Path:
        spark = LazySpark(lambda: get_spark(args.master, parse_conf(args.conf), app_name="lakegraph-bench-growth"))
        return write_report(run(config, spark, work, command, log), config.out)

    return run_command("bench.growth", config.work, "lakegraph-growth-", body)


if __name__ == "__main__":
    sys.exit(main())
