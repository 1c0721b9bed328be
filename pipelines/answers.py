"""Reading answers and answer changes, at a batch or a moment, in SPARQL 1.1 result formats."""
from __future__ import annotations

import csv
import io
import json
from bisect import bisect_right
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S
from schemas.terms import parse_term, term_to_sparql_json

from . import catalog
from .engine import answer_changes
from .engine.arrow import consolidate
from .lake import ANSWER_CHANGES, WINDOW_LOG, BatchLog, gold_table
from .storage import StorageError, TableStore

FORMATS = ("tsv", "csv", "json")


class AnswerError(ValueError):
    """A batch or time that has no answers for the query."""


def gold_version(store: TableStore, name: str, batch: int | None = None, when: datetime | None = None) -> int:
    """The version of the query's gold table holding its answers after ``batch`` (by default the
    last completed one), or at ``when``."""
    query = catalog.lookup(store, name)
    table = gold_table(name)
    if when is not None:
        try:
            return store.version_at(table, when)
        except StorageError as exc:
            raise AnswerError(f"query {name!r} has no answers at {when.isoformat()}: it did not exist yet") from exc
    return batch_version(store, query, table, batch)


def batch_version(store: TableStore, query: catalog.Registered, table: str, batch: int | None = None) -> int:
    """The version of ``table``, one of the query's, after ``batch`` (by default the last
    completed one).

    After batch N nothing changes until batch N+1 is planned, and the plan records every table's
    version at that point; for the newest batch that is the current version. Reading the last
    completed batch rather than the newest commit keeps a reader to whole batches: a batch under
    way (or interrupted by a crash) commits gold and its changes before its done record.
    """
    log = BatchLog(store)
    last = log.last_done()
    name = query.plan.name
    if batch is None:
        if last is None:
            return store.version(table)
        batch = last.batch
    if batch < query.registered_batch:
        raise AnswerError(f"query {name!r} was registered at batch {query.registered_batch}; "
                          f"batch {batch} is before it")
    if last is None or batch > last.batch:
        raise AnswerError(f"batch {batch} has not run yet (last completed batch: {last.batch if last else 'none'})")
    following = [r for r in log.records("planned") if r.batch == batch + 1]
    if following and table in following[0].versions:
        return following[0].versions[table]
    return store.version(table)


def windows(store: TableStore, name: str) -> list[dict]:
    """The emitted windows of a query with stream windows, in order (the window log's rows)."""
    query = catalog.lookup(store, name)
    if not query.plan.streams:
        raise AnswerError(f"query {name!r} has no stream windows (FROM STREAM)")
    log = store.read_arrow(WINDOW_LOG)
    return sorted(S.rows(log.filter(pc.equal(log["query"], name)).drop_columns(["query"])), key=lambda r: r["window"])


def late_messages(store: TableStore, name: str) -> int:
    """How many messages came too late for the query's windows."""
    from .engine.window_state import last_progress

    return last_progress(store, name).late


def window_row(store: TableStore, name: str, window: int | None = None, close_ms: int | None = None) -> dict:
    """The log row of window number ``window``, of the window closing at ``close_ms``, or of the
    latest emitted window."""
    rows = windows(store, name)
    if window is not None:
        found = [r for r in rows if r["window"] == window]
        what = f"window {window}"
    elif close_ms is not None:
        found = [r for r in rows if r["close_ms"] == close_ms]
        what = f"a window closing at {close_ms} ms"
    else:
        found, what = rows[-1:], "a window"
    if not found:
        last = f"the last is window {rows[-1]['window']}, closing at {rows[-1]['close_ms']} ms" if rows else "none yet"
        raise AnswerError(f"query {name!r} has not emitted {what} ({last}; see lakegraph windows {name})")
    return found[0]


def window_answers(store: TableStore, name: str, row: dict) -> pa.Table:
    """The RStream of the window whose log row is ``row``: the gold table at the version its batch
    left (the log's ``gold_version``) minus the answer changes of the later windows of that batch
    (a batch commits gold once, with the RStream of its last window)."""
    gold = store.read_arrow(gold_table(name), row["gold_version"])
    changes = answer_changes.of_query(store.read_arrow(ANSWER_CHANGES), catalog.lookup(store, name).plan)
    later = changes.filter(pc.and_(pc.equal(changes[S.BATCH], pa.scalar(row["batch"], pa.int64())),
                                   pc.greater(changes[S.WINDOW], pa.scalar(row["window"], pa.int64()))))
    if later.num_rows == 0:
        return gold
    undone = pc.if_else(pc.equal(later[S.SIGN], "+"), pc.negate(later[S.COUNT]), later[S.COUNT])
    variables = [c for c in gold.column_names if c != S.MULT]
    rows = pa.concat_tables([gold, later.select(variables).append_column(S.MULT, undone)],
                           promote_options="permissive")
    return consolidate(rows, variables).cast(gold.schema)


def answers(store: TableStore, name: str, batch: int | None = None, when: datetime | None = None,
            window: int | None = None, close_ms: int | None = None) -> pa.Table:
    """The query's answers as a bag: variable columns and ``_mult``; for a windowed query, those
    of a window (its RStream) when ``window`` or ``close_ms`` names one."""
    if window is not None or close_ms is not None:
        return window_answers(store, name, window_row(store, name, window, close_ms))
    return store.read_arrow(gold_table(name), gold_version(store, name, batch, when))


def changes(store: TableStore, name: str, since_batch: int | None = None) -> pa.Table:
    """The query's answer changes (after ``since_batch`` when given), in batch order."""
    query = catalog.lookup(store, name)
    table = answer_changes.of_query(store.read_arrow(ANSWER_CHANGES), query.plan)
    last = BatchLog(store).last_done()
    if last is not None:    # whole batches: one under way (or interrupted) appends before its done record
        table = table.filter(pc.less_equal(table[S.BATCH], pa.scalar(last.batch, pa.int64())))
    order = [S.BATCH] + ([S.WINDOW] if S.WINDOW in table.column_names else []) + [S.SIGN]
    table = table.sort_by([(c, "ascending") for c in order])
    if since_batch is not None:  # sliced, not filtered: a Python value in pc.greater imports pandas
        table = table.slice(bisect_right(table[S.BATCH].to_pylist(), since_batch))
    return table


def _solutions(table: pa.Table, variables: tuple[str, ...]) -> list[list[str]]:
    """One row of terms per solution: a binding of multiplicity n appears n times."""
    rows = []
    for row in table.sort_by([(v, "ascending") for v in variables] or [(S.MULT, "ascending")]).to_pylist():
        rows.extend([[row[v] for v in variables]] * row[S.MULT])
    return rows


def _csv_value(term: str | None) -> str:
    """SPARQL 1.1 CSV: IRIs and literals by their lexical value, blank nodes as _:label, unbound
    (None) as an empty field."""
    if term is None:
        return ""
    parsed = parse_term(term)
    return f"_:{parsed.value}" if parsed.kind == "bnode" else parsed.value


def format_answers(table: pa.Table, variables: tuple[str, ...], fmt: str, ask: bool = False,
                   template: tuple[tuple[str, str, str], ...] = ()) -> str:
    """Answers in the SPARQL 1.1 TSV, CSV or JSON results format; a CONSTRUCT's (``template``) as
    the N-Triples of the graph it builds, whatever the format."""
    if fmt not in FORMATS:
        raise AnswerError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if template:
        from views.plan import construct

        return "\n".join(f"{s} {p} {o} ." for s, p, o in construct(template, table.select(list(variables)).to_pylist()))
    if ask:
        value = table.num_rows > 0
        return json.dumps({"head": {}, "boolean": value}) if fmt == "json" else ("true" if value else "false")
    solutions = _solutions(table, variables)
    if fmt == "json":
        bindings = [{v: term_to_sparql_json(t) for v, t in zip(variables, row) if t is not None}
                    for row in solutions]
        return json.dumps({"head": {"vars": list(variables)}, "results": {"bindings": bindings}}, indent=1)
    if fmt == "tsv":
        lines = ["\t".join(f"?{v}" for v in variables)]
        lines += ["\t".join(t or "" for t in row) for row in solutions]
        return "\n".join(lines)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(variables)
    writer.writerows([[_csv_value(t) for t in row] for row in solutions])
    return out.getvalue().rstrip("\r\n")


def format_changes(table: pa.Table, variables: tuple[str, ...], fmt: str) -> str:
    """Answer changes: batch, bronze versions, (window and its close,) sign, count and the binding."""
    if fmt not in FORMATS:
        raise AnswerError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    meta = [S.BATCH, S.BRONZE_FROM, S.BRONZE_TO] + [m for m in (S.WINDOW, S.CLOSE_MS) if m in table.column_names]
    meta += [S.SIGN, S.COUNT]
    names = [m.lstrip("_") for m in meta]
    rows = table.to_pylist()
    if fmt == "json":
        return json.dumps([{**{n: r[m] for n, m in zip(names, meta)},
                            "binding": {v: term_to_sparql_json(r[v]) for v in variables if r[v] is not None}}
                           for r in rows], indent=1)
    if fmt == "tsv":
        lines = ["\t".join(names + [f"?{v}" for v in variables])]
        lines += ["\t".join([str(r[m]) for m in meta] + [r[v] or "" for v in variables]) for r in rows]
        return "\n".join(lines)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(names + list(variables))
    writer.writerows([[r[m] for m in meta] + [_csv_value(r[v]) for v in variables] for r in rows])
    return out.getvalue().rstrip("\r\n")


def format_windows(name: str, rows: list[dict], late: int, fmt: str) -> str:
    """The window log: number, open and close (ISO and epoch ms), answer rows; then the late count."""
    if fmt not in FORMATS:
        raise AnswerError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    names = ["window", "open", "close", "open_ms", "close_ms", "answers"]

    def iso(when: datetime) -> str:
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    records = [{**{n: r[n] for n in names}, "open": iso(r["open"]), "close": iso(r["close"])} for r in rows]
    if fmt == "json":
        return json.dumps({"query": name, "late": late, "windows": records}, indent=1)
    if fmt == "tsv":
        lines = ["\t".join(names)] + ["\t".join(str(r[n]) for n in names) for r in records]
        return "\n".join(lines + [f"late messages: {late}"])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(names)
    writer.writerows([[r[n] for n in names] for r in records])
    return out.getvalue() + f"late messages: {late}"
