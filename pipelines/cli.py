"""The ``lakegraph`` command line.

Every failure is one readable line on stderr (``lakegraph: error: ...``) and a non-zero exit;
``--debug`` shows the traceback instead. Spark starts only for the commands that need it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from datetime import datetime, timezone
from typing import Callable

LAKE_ENV = "LAKEGRAPH_LAKE"


class CliError(Exception):
    """A user error the CLI reports as one line."""


class Context:
    """Lazily opened lake and Spark session for one command."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lake = os.path.abspath(args.lake or os.environ.get(LAKE_ENV) or "./lake")
        self._spark = None
        self._store = None

    def spark(self):
        if self._spark is None:
            from .spark import get_spark, parse_conf

            try:
                conf = parse_conf(self.args.conf)
            except ValueError as exc:
                raise CliError(str(exc)) from exc
            self._spark = get_spark(self.args.master, conf)
        return self._spark

    def store(self, spark: bool = False):
        from .storage import open_store

        if self._store is None or (spark and self._store.spark is None):
            self._store = open_store(self.lake, self.spark() if spark else None, self.args.storage)
        return self._store

    def require_lake(self):
        store = self.store()
        if not store.exists("bronze"):
            raise CliError(f"no lake at {self.lake}; create it with 'lakegraph --lake {self.lake} init'")
        return store


# -- commands ---------------------------------------------------------------------------------
def cmd_init(ctx: Context) -> None:
    from .lake import init_lake

    created = init_lake(ctx.store())
    print(f"lake {ctx.lake}: " + (f"created {', '.join(created)}" if created else "already initialised"))


def cmd_ingest(ctx: Context) -> None:
    from .ingest import ingest_paths
    from .lake import init_lake

    missing = [p for p in ctx.args.paths if not os.path.exists(p)]
    if missing:
        raise CliError(f"no such file or directory: {missing[0]}")
    store = ctx.store()
    init_lake(store)
    report = ingest_paths(store, ctx.args.paths, progress=not ctx.args.quiet)
    print(report.summary())


def cmd_status(ctx: Context) -> None:
    from . import catalog
    from .lake import INGEST_LOG, BatchLog

    store = ctx.require_lake()
    print(f"lake {ctx.lake} ({store.backend})")
    print(f"{'table':<40} {'version':>8} {'rows':>10}")
    for name in store.tables():
        rows = store.read_arrow(name, columns=[store.schema(name).names[0]]).num_rows
        print(f"{name:<40} {store.version(name):>8} {rows:>10}")
    log = store.read_arrow(INGEST_LOG).to_pylist()
    if log:
        last = max(log, key=lambda r: r["ingest_id"])
        print(f"last ingest: #{last['ingest_id']} {last['path']} at {last['ingested_at']:%Y-%m-%d %H:%M:%S}Z "
              f"({last['ingested']} rows, {last['quarantined']} quarantined)")
    else:
        print("last ingest: none")
    done = BatchLog(store).last_done()
    print(f"last batch: {done.batch} (bronze v{done.bronze_to}, seq {done.seq_to})" if done else "last batch: none")
    print(f"queries: {', '.join(q.plan.name for q in catalog.registered(store)) or 'none'}")


_VERSIONED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)@v(\d+)\b")


def cmd_sql(ctx: Context) -> None:
    store = ctx.require_lake()
    store = ctx.store(spark=True)
    spark = ctx.spark()
    tables = set(store.tables())

    def pinned(match: re.Match) -> str:
        name, version = match.group(1), int(match.group(2))
        if name not in tables:
            raise CliError(f"no table {name!r} in the lake (tables: {', '.join(sorted(tables))})")
        if version > store.version(name):
            raise CliError(f"table {name!r} has no version {version} (latest: {store.version(name)})")
        alias = f"{name}__v{version}"
        store.read(name, version).createOrReplaceTempView(alias)
        return alias

    sql = _VERSIONED.sub(pinned, ctx.args.query)
    for name in tables:
        store.read(name).createOrReplaceTempView(name)
    try:
        result = spark.sql(sql).toArrow()
    except Exception as exc:  # Spark's analysis errors are long; keep their first line
        raise CliError(f"SQL failed: {str(exc).strip().splitlines()[0]}") from exc
    fmt = ctx.args.format
    if fmt == "table":
        print(result.to_pandas().to_string(index=False) if result.num_rows else "(no rows)")
    elif fmt == "json":
        print(json.dumps(result.to_pylist(), default=str, indent=1))
    else:
        sep = "\t" if fmt == "tsv" else ","
        print(sep.join(result.schema.names))
        for row in result.to_pylist():
            print(sep.join("" if v is None else str(v) for v in row.values()))


def _read_query(ctx: Context, path: str) -> tuple[str, str]:
    if not os.path.isfile(path):
        raise CliError(f"no such query file: {path}")
    with open(path, encoding="utf-8") as handle:
        return handle.read(), os.path.splitext(os.path.basename(path))[0]


def _compile(text: str, name: str, source: str):
    from views.plan import compile_query, validate_name
    from views.sparql import parse_query

    return compile_query(parse_query(text, source), validate_name(name))


def cmd_register(ctx: Context) -> None:
    from .register import register

    text, stem = _read_query(ctx, ctx.args.file)
    plan = _compile(text, ctx.args.name or stem, ctx.args.file)
    store = ctx.require_lake()
    store = ctx.store(spark=True)
    result = register(store, ctx.spark(), plan)
    print(f"registered {plan.name} ({plan.query_class}) at batch {result['batch']}: "
          f"{result['views']} view(s), {result['new_views']} new; {result['answers']} answer(s) from the backfill")


def cmd_queries(ctx: Context) -> None:
    from . import catalog

    store = ctx.require_lake()
    queries = catalog.registered(store)
    if not queries:
        print("no queries registered")
    for q in queries:
        first = " ".join(q.plan.text.split())
        print(f"{q.plan.name}\t{q.plan.query_class}\tfrom batch {q.registered_batch}\t{first[:100]}")


def cmd_unregister(ctx: Context) -> None:
    from .register import unregister

    dropped = unregister(ctx.require_lake(), ctx.args.name)
    print(f"unregistered {ctx.args.name}; dropped {len(dropped)} table(s): {', '.join(dropped)}")


def cmd_explain(ctx: Context) -> None:
    from views.plan import explain

    target = ctx.args.target
    if os.path.isfile(target):
        text, stem = _read_query(ctx, target)
        plan = _compile(text, ctx.args.name or stem, target)
    else:
        from . import catalog

        plan = catalog.lookup(ctx.require_lake(), target).plan
    print(explain(plan))


def cmd_run(ctx: Context) -> None:
    from .run import Runner

    if ctx.args.max_rows is not None and ctx.args.max_rows < 1:
        raise CliError("--max-rows must be at least 1")
    ctx.require_lake()
    store = ctx.store(spark=True)
    bar = None
    if not ctx.args.quiet:
        from tqdm import tqdm

        bar = tqdm(desc="batches", unit="batch", file=sys.stderr)
    report = Runner(store, ctx.spark(), ctx.args.engine).run(ctx.args.max_rows, ctx.args.max_batches,
                                            on_batch=(lambda _stats: bar.update()) if bar else None)
    if bar:
        bar.close()
    print(report.summary())


def _when(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise CliError(f"--as-of expects an ISO-8601 time like 2026-11-23T09:00:00Z, got {text!r}") from exc
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def cmd_answers(ctx: Context) -> None:
    from . import catalog
    from .answers import answers, format_answers

    store = ctx.require_lake()
    plan = catalog.lookup(store, ctx.args.name).plan
    table = answers(store, plan.name, ctx.args.as_of_batch, _when(ctx.args.as_of))
    print(format_answers(table, plan.projection, ctx.args.format, ask=plan.form == "ask"))


def cmd_changes(ctx: Context) -> None:
    from . import catalog
    from .answers import changes, format_changes

    store = ctx.require_lake()
    plan = catalog.lookup(store, ctx.args.name).plan
    print(format_changes(changes(store, plan.name, ctx.args.since_batch), plan.projection, ctx.args.format))


# -- parser -----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakegraph", description="Continuous SPARQL over a Delta lake of RDF updates.")
    parser.add_argument("--lake", help=f"lake directory (default ${LAKE_ENV} or ./lake)")
    parser.add_argument("--master", help="Spark master URL (default $LAKEGRAPH_SPARK_MASTER or local[*])")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE", help="Spark configuration, repeatable")
    parser.add_argument("--storage", choices=["auto", "delta-rs", "delta-spark"], default=None,
                        help="storage backend (default $LAKEGRAPH_STORAGE or auto)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[Context], None], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        return p

    add("init", cmd_init, "create the lake's tables")
    add("ingest", cmd_ingest, "append landing files (RDF Patch, JSON Lines, N-Triples, N-Quads, Turtle) to bronze"
        ).add_argument("paths", nargs="+", metavar="PATH")
    add("status", cmd_status, "tables, versions, row counts, last ingest and batch")
    p = add("sql", cmd_sql, "Spark SQL over the lake's tables (name@vN reads version N)")
    p.add_argument("query")
    p.add_argument("--format", choices=["table", "tsv", "csv", "json"], default="table")
    p = add("register", cmd_register, "register a continuous SPARQL query")
    p.add_argument("file", metavar="FILE.rq")
    p.add_argument("--name")
    add("queries", cmd_queries, "list registered queries")
    add("unregister", cmd_unregister, "drop a query and the state only it uses").add_argument("name")
    p = add("explain", cmd_explain, "show a query's decomposition, views and delta plan")
    p.add_argument("target", metavar="FILE.rq|NAME")
    p.add_argument("--name")
    p = add("run", cmd_run, "run micro-batches until bronze is consumed")
    p.add_argument("--max-rows", type=int, help="cap on bronze rows per batch (events are not split)")
    p.add_argument("--max-batches", type=int, help="stop after this many batches")
    p.add_argument("--engine", choices=["auto", "arrow", "spark"], default="auto",
                   help="where a batch's delta joins run: arrow (in process), spark, or auto (arrow "
                        "for batches that fit in memory on a local master, spark otherwise)")
    p = add("answers", cmd_answers, "a query's answers, now or in the past")
    p.add_argument("name")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--as-of-batch", type=int)
    when.add_argument("--as-of", metavar="TIME")
    p.add_argument("--format", choices=["tsv", "csv", "json"], default="tsv")
    p = add("changes", cmd_changes, "a query's answer changes")
    p.add_argument("name")
    p.add_argument("--since-batch", type=int)
    p.add_argument("--format", choices=["tsv", "csv", "json"], default="tsv")
    from .cli_ops import add_commands

    add_commands(add)
    return parser


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ctx = Context(args)
    try:
        args.func(ctx)
    except KeyboardInterrupt:
        print("lakegraph: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one readable line; the traceback with --debug
        if args.debug:
            raise
        known = (CliError, ValueError, LookupError, OSError)
        from .storage import StorageError

        prefix = "" if isinstance(exc, known + (StorageError,)) else f"{type(exc).__name__}: "
        print(f"lakegraph: error: {prefix}{_one_line(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
