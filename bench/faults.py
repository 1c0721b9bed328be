"""Many real kills: ``python -m bench.faults --kills 200`` runs :mod:`tests.faults` for seed after
seed (about ``--per-run`` kills each, against one uninterrupted lake) until that many kills have
landed, and reports the kills by command and whether every lake equalled the uninterrupted one.

Kept out of CI (minutes); CI runs one seeded sample (tests/test_faults.py).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.faults import differences, landing, run_clean, run_with_kills, script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="kills to land in all (default 200)")
    parser.add_argument("--per-run", type=int, default=25, help="kills per seeded run (default 25)")
    parser.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    parser.add_argument("--retention-hours", type=int, default=0, help="the maintenance's retention: 0 "
                        "(forced: a real vacuum, default) or 168 (every version must stay readable)")
    parser.add_argument("--out", type=Path, help="append one JSON line per run to this file")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="lakegraph-faults-"))
    try:
        steps = script(landing(work), args.retention_hours)
        durations, start_up = run_clean(work / "reference", steps)
        total, failures, seed, began = {}, [], args.seed, time.monotonic()
        while sum(total.values()) < args.kills:
            trial = work / f"seed{seed}"
            kills = run_with_kills(trial, steps, durations, start_up, args.per_run, seed)
            found = differences(work / "reference", trial, vacuumed=args.retention_hours < 168)
            for command, count in kills.landed.items():
                total[command] = total.get(command, 0) + count
            line = {"seed": seed, "landed": kills.landed, "missed": kills.missed, "differences": found,
                    "retention_hours": args.retention_hours}
            print(json.dumps(line), flush=True)
            if args.out:
                with args.out.open("a") as handle:
                    handle.write(json.dumps(line) + "\n")
            failures += [f"seed {seed}: {d}" for d in found]
            shutil.rmtree(trial)
            seed += 1
        print(f"{sum(total.values())} kills landed ({', '.join(f'{c} {n}' for c, n in sorted(total.items()))}) "
              f"over seeds {args.seed}..{seed - 1} in {time.monotonic() - began:.0f} s: "
              + ("every lake equals the uninterrupted one" if not failures else f"{len(failures)} difference(s)"))
        for failure in failures:
            print(failure)
        return 1 if failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
