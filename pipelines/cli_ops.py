"""The operations commands of the ``lakegraph`` CLI: ``validate`` (quality gates) and ``maintain``
(compaction and vacuum). Kept apart from ``cli.py`` so the command line's core stays small;
:func:`add_commands` declares them on its parser. Like ``cli.py``, nothing heavy is imported until a
command runs, so ``lakegraph --help`` stays instant.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover - typing only; cli.py imports this module
    from .cli import Context


def cmd_validate(ctx: "Context") -> None:
    """Run the bronze and gold suites (or one table's), print one line per expectation, and exit
    non-zero when one failed."""
    from .cli import CliError
    from .validate import validate

    ctx.require_lake()
    report = validate(ctx.store(spark=True), ctx.spark(), ctx.args.table)
    print(report.text())
    if not report.success:
        raise CliError(f"quality gate failed: {report.gate_message()}")


def cmd_maintain(ctx: "Context") -> None:
    """Compact and vacuum every table; a refusal (retention below the horizon, an interrupted
    batch) is a one-line error."""
    from .maintain import TIME_TRAVEL_HORIZON_HOURS, maintain

    ctx.require_lake()
    hours = TIME_TRAVEL_HORIZON_HOURS if ctx.args.retention_hours is None else ctx.args.retention_hours
    print(maintain(ctx.store(spark=True), hours, ctx.args.force).summary())


def add_commands(add: Callable[[str, Callable, str], argparse.ArgumentParser]) -> None:
    """Declare ``validate`` and ``maintain`` with ``add(name, func, help)`` from ``build_parser``."""
    p = add("validate", cmd_validate, "run the Great Expectations suites on bronze and gold; keep the outcomes")
    p.add_argument("--table", help="validate only this table (bronze or gold_<query>)")
    p = add("maintain", cmd_maintain, "compact small files and vacuum old ones in every table")
    p.add_argument("--retention-hours", type=int, metavar="H",
                   help="keep removed files this long (default: the time-travel horizon)")
    p.add_argument("--force", action="store_true", help="allow a retention shorter than the time-travel horizon")
