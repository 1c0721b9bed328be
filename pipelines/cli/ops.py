"""The operations commands: ``validate`` (quality gates) and ``maintain`` (compaction and vacuum)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .context import CliError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .context import Context


def cmd_validate(ctx: "Context") -> None:
    """Run the bronze and gold suites (or one table's), print one line per expectation, and exit
    non-zero when one failed."""
    from ..ops.validate import validate

    store = ctx.require_lake()
    report = validate(store, ctx.spark(), ctx.args.table)
    print(report.text())
    if not report.success:
        raise CliError(f"quality gate failed: {report.gate_message()}")


def cmd_maintain(ctx: "Context") -> None:
    """Compact and vacuum every table; a refusal (retention below the horizon, an interrupted
    batch) is a one-line error."""
    from ..ops.maintain import TIME_TRAVEL_HORIZON_HOURS, maintain

    store = ctx.require_lake()
    hours = TIME_TRAVEL_HORIZON_HOURS if ctx.args.retention_hours is None else ctx.args.retention_hours
    print(maintain(store, hours, ctx.args.force, ctx.wait).summary())


def add_commands(add) -> None:
    """Declare the commands with ``add(name, func, help)`` (see :func:`pipelines.cli.build_parser`)."""
    p = add("validate", cmd_validate, "run the Great Expectations suites on bronze and gold; keep the outcomes "
            "in quality_results; exit 1 when one fails")
    p.add_argument("--table", help="validate only this table (bronze or gold_<query>)")
    p = add("maintain", cmd_maintain, "compact small files and vacuum old ones in every table")
    p.add_argument("--retention-hours", type=int, metavar="H",
                   help="keep removed files this long (default: the time-travel horizon, 168)")
    p.add_argument("--force", action="store_true", help="allow a retention shorter than the time-travel horizon")
