"""``python -m bench``: run the benchmark and write ``bench/results/`` (or ``--out``).

Bad options and failures (including the systems disagreeing) are one line on stderr and a non-zero
exit. ``--generate-only DIR`` writes the initial N-Triples and the landing files without running.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from .runner import OTHERS, QUERY_DIR, RESULTS_DIR, Config, exit_status


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"bench: error: {message}\n")


def _ints(text: str) -> list[int]:
    """Comma-separated positive integers."""
    items = [v.strip() for v in text.split(",") if v.strip()]
    if not items or not all(v.isdigit() and int(v) > 0 for v in items):
        raise argparse.ArgumentTypeError(f"expected positive integers, comma-separated, got {text!r}")
    return [int(v) for v in items]


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a ratio in [0, 1), got {text}")
    return value


def _queries(text: str) -> list[Path]:
    paths = []
    for item in (i.strip() for i in text.split(",") if i.strip()):
        path = Path(item) if item.endswith(".rq") else QUERY_DIR / f"{item}.rq"
        if not path.is_file():
            known = ", ".join(p.stem for p in sorted(QUERY_DIR.glob("*.rq")))
            raise argparse.ArgumentTypeError(f"no query {item!r} (bench queries: {known}; or a path to a .rq file)")
        paths.append(path)
    if not paths:
        raise argparse.ArgumentTypeError("no queries given")
    return paths


def _others(text: str) -> list[str]:
    """The systems beside lakegraph: at least one, which lakegraph's answers are checked against."""
    names = [n.strip() for n in text.split(",") if n.strip() and n.strip() != "lakegraph"]
    unknown = [n for n in names if n not in OTHERS]
    if unknown:
        raise argparse.ArgumentTypeError(f"no system {unknown[0]!r} (systems: lakegraph, {', '.join(OTHERS)})")
    if not names:
        raise argparse.ArgumentTypeError("name at least one system besides lakegraph: its answers are checked "
                                         "against it after every batch")
    return names


def add_data_options(p: argparse.ArgumentParser, defaults: Config) -> None:
    """The options that say what a run generates and registers: the LUBM shape, the stream, the
    queries (``python -m bench`` and ``python -m bench.growth``)."""
    p.add_argument("--departments", type=_positive, default=defaults.departments,
                   help="departments per university (default 2; LUBM has 15-25)")
    p.add_argument("--delete-ratio", type=_ratio, default=defaults.delete_ratio,
                   help="share of deletes in the stream (default 0.3)")
    p.add_argument("--seed", type=int, default=defaults.seed, help="generator seed (default 0)")
    p.add_argument("--queries", type=_queries, default=defaults.queries, metavar="Q,Q",
                   help="bench query names or .rq paths (default: every query in bench/queries)")


def build_parser() -> argparse.ArgumentParser:
    defaults = Config()
    p = _Parser(prog="python -m bench", description="lakegraph against a Spark and a DuckDB full recompute and "
                "pyoxigraph on LUBM-shaped data and an update stream, checking after every batch that all four agree.")
    p.add_argument("--scales", type=_ints, default=defaults.scales, metavar="N,N",
                   help="universities per run, comma-separated (default 1,10: the 10x growth figure)")
    p.add_argument("--batch-sizes", type=_ints, default=defaults.batch_sizes, metavar="N,N",
                   help="updates per batch, comma-separated (default 100,1000)")
    p.add_argument("--batches", type=_positive, default=defaults.batches,
                   help="batches per batch size (default 1: a quick run; 5 or more for a p95)")
    p.add_argument("--floor-batches", type=int, default=defaults.floor_batches,
                   help="batches matching no query, for lakegraph's fixed cost (default 1)")
    p.add_argument("--warmup", type=int, default=defaults.warmup,
                   help="unmeasured batches before the measured ones, per scale (default 1)")
    add_data_options(p, defaults)
    p.add_argument("--systems", type=_others, default=list(OTHERS), metavar="S,S",
                   help=f"the systems to run beside lakegraph (default {','.join(OTHERS)}); at 10M triples "
                        "all four do not fit in 24 GB, e.g. --systems duckdb")
    p.add_argument("--separate", action="store_true",
                   help="one lake per query (per-query lakegraph figures; replays the stream per query)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory (default bench/results)")
    p.add_argument("--work", type=Path, help="keep lakes and landing files here (default: a temporary directory)")
    p.add_argument("--engine", choices=["auto", "arrow", "spark"], default="auto",
                   help="lakegraph's Z-set engine, for its registrations and its batches (default auto: "
                   "arrow in process for these batch sizes on a local master)")
    p.add_argument("--storage", choices=["delta-rs", "delta-spark"], default="delta-rs",
                   help="lakegraph's storage backend (default delta-rs)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="Spark configuration, repeatable")
    p.add_argument("--generate-only", type=Path, metavar="DIR",
                   help="write the first scale's initial.nt and landing files to DIR, and stop")
    return p


def _generate_only(config: Config, target: Path) -> None:
    from .runner import write_landing

    files = write_landing(config, config.scales[0], target, [])
    batches = len(files.warmups) + len(files.planned) + len(files.floors)
    print(f"wrote {files.triples} triples to {files.initial} and {batches} landing files to {target / 'landing'}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for option, value in (("--floor-batches", args.floor_batches), ("--warmup", args.warmup)):
        if value < 0:
            print(f"bench: error: {option} must be 0 or more", file=sys.stderr)
            return 2
    config = Config(scales=args.scales, departments=args.departments, batch_sizes=args.batch_sizes,
                    batches=args.batches, warmup=args.warmup, floor_batches=args.floor_batches,
                    delete_ratio=args.delete_ratio, seed=args.seed, queries=args.queries, separate=args.separate,
                    engine=args.engine, storage=args.storage, others=args.systems,
                    out=args.out, work=args.work)
    if args.generate_only:
        _generate_only(config, args.generate_only)
        return 0
    return exit_status("bench", lambda: _run(args.master, args.conf, config), kept=config.out / "results.jsonl")


def _run(master: str, conf: list[str] | None, config: Config) -> None:
    """The run ``config`` describes on a session of ``master``, then its report's paths printed."""
    from pipelines.spark import get_spark, parse_conf

    from .report import write_report
    from .runner import run_benchmark

    spark = get_spark(master, parse_conf(conf), app_name="lakegraph-bench")
    for path in write_report(run_benchmark(config, spark), config.out):
        print(path)


if __name__ == "__main__":
    sys.exit(main())
