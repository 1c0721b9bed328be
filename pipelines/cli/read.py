"""The read commands: ``status``, ``queries``, ``explain``, ``answers``, ``changes``, ``windows``.

They answer from the Delta tables' files and logs alone: no Spark, and nothing imported that the
command does not use (no pandas, rdflib or pyspark), so each prints in a fraction of a second.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .context import CliError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .context import Context

FORMATS = ["tsv", "csv", "json"]


def cmd_status(ctx: "Context") -> None:
    from schemas.tables import rows

    from .. import catalog
    from ..lake import INGEST_LOG, BatchLog

    store = ctx.require_lake()
    print(f"lake {ctx.lake} ({store.backend})")
    print(f"{'table':<40} {'version':>8} {'rows':>10}")
    for name in store.tables():
        print(f"{name:<40} {store.version(name):>8} {store.row_count(name):>10}")
    log = rows(store.read_arrow(INGEST_LOG))
    if log:
        last = max(log, key=lambda r: r["ingest_id"])
        print(f"last ingest: #{last['ingest_id']} {last['path']} at {last['ingested_at']:%Y-%m-%d %H:%M:%S}Z "
              f"({last['ingested']} rows, {last['quarantined']} quarantined)")
    else:
        print("last ingest: none")
    done = BatchLog(store).last_done()
    print(f"last batch: {done.batch} (bronze v{done.bronze_to}, seq {done.seq_to})" if done else "last batch: none")
    queries = catalog.registered(store)
    print(f"queries: {', '.join(q.plan.name for q in queries) or 'none'}")
    for q in queries:
        if q.plan.streams:
            from ..answers import late_messages, windows

            emitted = windows(store, q.plan.name)
            last = f", the last closing at {emitted[-1]['close']:%Y-%m-%d %H:%M:%S}Z" if emitted else ""
            print(f"  {q.plan.name}: {len(emitted)} window(s) emitted{last}; "
                  f"{late_messages(store, q.plan.name)} late message(s)")


def cmd_queries(ctx: "Context") -> None:
    from .. import catalog

    queries = catalog.registered(ctx.require_lake())
    if not queries:
        print("no queries registered")
    for q in queries:
        first = " ".join(q.plan.text.split())
        print(f"{q.plan.name}\t{q.plan.query_class}\tfrom batch {q.registered_batch}\t{first[:100]}")


def cmd_explain(ctx: "Context") -> None:
    from views.plan import explain

    target = ctx.args.target
    if os.path.isfile(target):
        from .write import compile_file

        plan = compile_file(target, ctx.args.name)
    else:
        from .. import catalog

        plan = catalog.lookup(ctx.require_lake(), target).plan
    print(explain(plan))


def _when(text: str | None, option: str = "--as-of") -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise CliError(f"{option} expects an ISO-8601 time like 2026-11-23T09:00:00Z, got {text!r}") from exc
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _close_ms(text: str | None) -> int | None:
    """``--close``: epoch milliseconds, or an ISO-8601 time."""
    if text is None:
        return None
    if text.strip().lstrip("-").isdigit():
        return int(text)
    when = _when(text, "--close")
    return round(when.timestamp() * 1000)


def cmd_answers(ctx: "Context") -> None:
    from .. import catalog
    from ..answers import answers, format_answers

    when = _when(ctx.args.as_of)
    store = ctx.require_lake()
    plan = catalog.lookup(store, ctx.args.name).plan
    table = answers(store, plan.name, ctx.args.as_of_batch, when, ctx.args.window, _close_ms(ctx.args.close))
    print(format_answers(table, plan.projection, ctx.args.format, ask=plan.form == "ask", template=plan.template))


def cmd_windows(ctx: "Context") -> None:
    from ..answers import format_windows, late_messages, windows

    store = ctx.require_lake()
    rows = windows(store, ctx.args.name)
    print(format_windows(ctx.args.name, rows, late_messages(store, ctx.args.name), ctx.args.format))


def cmd_changes(ctx: "Context") -> None:
    from .. import catalog
    from ..answers import changes, format_changes

    store = ctx.require_lake()
    plan = catalog.lookup(store, ctx.args.name).plan
    print(format_changes(changes(store, plan.name, ctx.args.since_batch), plan.projection, ctx.args.format))


def add_commands(add) -> None:
    """Declare the commands with ``add(name, func, help)`` (see :func:`pipelines.cli.build_parser`)."""
    add("status", cmd_status, "tables with their versions and row counts, the last ingest and batch, the queries")
    add("queries", cmd_queries, "list registered queries: name, class, batch registered at, text")
    p = add("explain", cmd_explain, "show a query's decomposition, views, partial embeddings and delta plan")
    p.add_argument("target", metavar="FILE.rq|NAME", help="a query file (not registered) or a registered query")
    p.add_argument("--name", help="the name to show for a query file (default: the file name)")
    p = add("answers", cmd_answers, "a query's answers, now or in the past (SPARQL 1.1 result formats)")
    p.add_argument("name", help="a registered query")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--as-of-batch", type=int, metavar="B", help="the answers after batch B")
    when.add_argument("--as-of", metavar="TIME", help="the answers current at an ISO-8601 time, e.g. "
                      "2026-11-23T09:00:00Z (Delta time travel)")
    when.add_argument("--window", type=int, metavar="N", help="a windowed query's answers in its window "
                      "number N (its RStream; see lakegraph windows)")
    when.add_argument("--close", metavar="TIME", help="a windowed query's answers in the window closing at "
                      "TIME (ISO-8601 or epoch milliseconds)")
    p.add_argument("--format", choices=FORMATS, default="tsv", help="result format (default tsv)")
    p = add("changes", cmd_changes, "a query's answer changes, batch by batch (+ added, - removed)")
    p.add_argument("name", help="a registered query")
    p.add_argument("--since-batch", type=int, metavar="B", help="only the changes of batches after B")
    p.add_argument("--format", choices=FORMATS, default="tsv", help="output format (default tsv)")
    p = add("windows", cmd_windows, "a windowed query's emitted windows (number, open, close, answer rows) "
            "and its late message count")
    p.add_argument("name", help="a registered query with FROM STREAM windows")
    p.add_argument("--format", choices=FORMATS, default="tsv", help="output format (default tsv)")
