"""The commands that change the lake: ``init``, ``ingest``, ``register``, ``unregister``, ``run``."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .context import CliError
from .progress import Progress

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .context import Context

ENGINE_HELP = ("where the delta joins run: arrow (in process), spark (Spark jobs), or auto: arrow for "
               "batches of at most 200,000 messages (a registration's backfill: 5,000,000 bronze rows) on a "
               "local master, spark otherwise (docs/engines.md)")


def cmd_init(ctx: "Context") -> None:
    from ..lake import init_lake

    created = init_lake(ctx.store(), ctx.wait)
    print(f"lake {ctx.lake}: " + (f"created {', '.join(created)}" if created else "already initialised"))


def cmd_ingest(ctx: "Context") -> None:
    from ..ingest import ingest_paths

    from schemas.formats.base import parse_stream, parse_time

    missing = [p for p in ctx.args.paths if not os.path.exists(p)]
    if missing:
        raise CliError(f"no such file or directory: {missing[0]}")
    stream = parse_stream(ctx.args.stream) if ctx.args.stream is not None else None
    when = parse_time(ctx.args.time) if ctx.args.time is not None else None
    progress = Progress(ctx.args.quiet, "ingest", "file")
    try:
        report = ingest_paths(ctx.store(), ctx.args.paths, on_file=lambda f: progress.step(f.line()),
                              stream=stream, event_time=when, wait=ctx.wait)
    finally:
        progress.close()
    print(report.summary())
    if report.failed:
        first = report.failed[0]
        more = f" (and {len(report.failed) - 1} more, above)" if len(report.failed) > 1 else ""
        files = "file" if len(report.failed) == 1 else "files"
        raise CliError(f"{len(report.failed)} {files} not ingested: {first.path}: {first.reason}{more}")


def read_query(path: str) -> tuple[str, str]:
    """A query file's text and its stem (the default query name)."""
    if not os.path.isfile(path):
        raise CliError(f"no such query file: {path}")
    with open(path, encoding="utf-8") as handle:
        return handle.read(), os.path.splitext(os.path.basename(path))[0]


def compile_file(path: str, name: str | None, lateness: str | None = None, output_stream: str | None = None,
                 paths: str = "walks", store=None):
    """The plan of a query file, named ``name``, else by its ``REGISTER QUERY name AS`` header, else
    after the file; ``lateness`` is the allowed lateness of its windows (a duration, e.g. ``2s``),
    ``output_stream`` the stream of a ``REGISTER STREAM`` query (an IRI, with or without <>),
    ``paths`` the semantics of its property paths; with the lake's ``store``, the plan shares the
    path views its registered queries keep where it can."""
    from schemas.formats.base import parse_stream
    from views.plan import compile_query, validate_name
    from views.sparql import parse_query
    from views.streams import parse_duration

    from .. import catalog

    try:
        lateness_ms = parse_duration(lateness) if lateness is not None else 0
    except ValueError as exc:
        raise CliError(f"--lateness: {exc}") from None
    try:
        output = parse_stream(output_stream) if output_stream is not None else None
    except ValueError as exc:
        raise CliError(f"--output-stream: {exc}") from None
    text, stem = read_query(path)
    query = parse_query(text, path)
    chosen = name if name is not None else query.register_name or stem      # --name "" is refused, not ignored
    shared = catalog.kept_paths(store) if store is not None else frozenset()
    return compile_query(query, validate_name(chosen), lateness_ms, output, paths, shared)


def cmd_register(ctx: "Context") -> None:
    from ..engine.register import register

    store = ctx.require_lake()
    plan = compile_file(ctx.args.file, ctx.args.name, ctx.args.lateness, ctx.args.output_stream, ctx.args.paths, store)
    result = register(store, ctx.spark, plan, ctx.args.engine, ctx.args.master, ctx.wait)
    print(f"registered {plan.name} ({plan.query_class}) at batch {result['batch']}: "
          f"{result['views']} view(s), {result['new_views']} new; {result['answers']} answer(s) from the backfill"
          + (f"; {result['windows']} window(s) emitted" if plan.streams else ""))


def cmd_unregister(ctx: "Context") -> None:
    from ..engine.register import unregister

    dropped, views = unregister(ctx.require_lake(), ctx.args.name, ctx.wait)
    print(f"unregistered {ctx.args.name}; dropped {len(dropped)} table(s): {', '.join(dropped)}"
          + (f"; removed {len(views)} view(s) from the views table: {', '.join(views)}" if views else ""))


def cmd_run(ctx: "Context") -> None:
    from ..engine.runner import Runner

    for option in ("max_rows", "max_batches"):
        value = getattr(ctx.args, option)
        if value is not None and value < 1:
            raise CliError(f"--{option.replace('_', '-')} must be at least 1")
    store = ctx.require_lake()
    progress = Progress(ctx.args.quiet, "batches", "batch")
    totals = {"messages": 0, "answer changes": 0}

    def on_batch(stats: dict) -> None:
        totals["messages"] += stats["messages"]
        totals["answer changes"] += stats["answer_changes"]
        windows = f", {stats['windows']} window(s)" if stats.get("windows") else ""
        late = f", {stats['late']} late" if stats.get("late") else ""
        progress.step(f"batch {stats['batch']}: {stats['messages']} messages{windows}{late}, "
                      f"{stats['answer_changes']} answer changes ({stats['engine']} engine)", **totals)

    try:
        report = Runner(store, ctx.spark, ctx.args.engine, ctx.args.master).run(
            ctx.args.max_rows, ctx.args.max_batches, on_batch=on_batch, flush=ctx.args.flush, wait=ctx.wait)
    finally:
        progress.close()
    print(report.summary())


def add_commands(add) -> None:
    """Declare the commands with ``add(name, func, help)`` (see :func:`pipelines.cli.build_parser`)."""
    add("init", cmd_init, "create the lake's tables (bronze, quarantine, ingest_log, queries, batches)")
    p = add("ingest", cmd_ingest, "append landing files (RDF Patch, JSON Lines, N-Triples, N-Quads, Turtle) to "
            "bronze; bad lines go to quarantine, a file already ingested is skipped")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or directories (walked recursively, sorted)")
    p.add_argument("--stream", metavar="IRI", help="the stream (graph) of messages whose format names none "
                   "(N-Triples, Turtle, JSON Lines without a stream field); with or without <>; default "
                   "urn:lakegraph:stream:default")
    p.add_argument("--time", metavar="ISO", help="the event time of messages whose format carries none, e.g. "
                   "2026-11-23T09:00:00Z (default: the ingest time)")
    p = add("register", cmd_register, "register a continuous SPARQL query and backfill its answers")
    p.add_argument("file", metavar="FILE.rq", help="a SPARQL SELECT, ASK or CONSTRUCT query, or a C-SPARQL "
                   "REGISTER QUERY|STREAM with FROM STREAM windows and FROM background graphs")
    p.add_argument("--name", help="query name (letters, digits, _; default: the name of a REGISTER QUERY "
                   "name AS header, else the file name without .rq)")
    p.add_argument("--engine", choices=["auto", "arrow", "spark"], default="auto", help=ENGINE_HELP)
    p.add_argument("--lateness", metavar="DURATION", help="how late an event may arrive for the query's time "
                   "and [NOW] windows, e.g. 2s or PT2S (default 0; docs/windows.md)")
    p.add_argument("--output-stream", metavar="IRI", help="the stream a REGISTER STREAM query appends each "
                   "window's constructed triples to (default urn:lakegraph:stream:NAME)")
    p.add_argument("--paths", choices=["walks", "simple"], default="walks", help="property-path semantics: "
                   "SPARQL's walks (default), or simple paths, with no repeated node (docs/paths.md)")
    p = add("unregister", cmd_unregister, "drop a query and the state only it uses")
    p.add_argument("name", help="a registered query")
    p = add("run", cmd_run, "run micro-batches until bronze is consumed")
    p.add_argument("--max-rows", type=int, metavar="N", help="cap on bronze rows per batch (events are not split)")
    p.add_argument("--max-batches", type=int, metavar="N", help="stop after this many batches")
    p.add_argument("--engine", choices=["auto", "arrow", "spark"], default="auto", help=ENGINE_HELP)
    p.add_argument("--flush", action="store_true", help="end of stream: then emit every window that holds "
                   "data, whatever the watermark (docs/windows.md)")

