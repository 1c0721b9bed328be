"""Reading answers and answer changes, at a batch or a moment, in SPARQL 1.1 result formats."""
from __future__ import annotations

import csv
import io
import json
from bisect import bisect_right
from datetime import datetime

import pyarrow as pa

from schemas import tables as S
from schemas.terms import parse_term, term_to_sparql_json

from . import catalog
from .lake import BatchLog, changes_table, gold_table
from .storage import StorageError, TableStore

FORMATS = ("tsv", "csv", "json")


class AnswerError(ValueError):
    """A batch or time that has no answers for the query."""


def gold_version(store: TableStore, name: str, batch: int | None = None, when: datetime | None = None) -> int:
    """The version of the query's gold table holding its answers after ``batch`` (or at ``when``).

    After batch N nothing changes until batch N+1 is planned, and the plan records every table's
    version at that point; for the newest batch that is the current version.
    """
    query = catalog.lookup(store, name)
    table = gold_table(name)
    if when is not None:
        try:
            return store.version_at(table, when)
        except StorageError as exc:
            raise AnswerError(f"query {name!r} has no answers at {when.isoformat()}: it did not exist yet") from exc
    if batch is None:
        return store.version(table)
    log = BatchLog(store)
    if batch < query.registered_batch:
        raise AnswerError(f"query {name!r} was registered at batch {query.registered_batch}; "
                          f"batch {batch} is before it")
    last = log.last_done()
    if last is None or batch > last.batch:
        raise AnswerError(f"batch {batch} has not run yet (last completed batch: {last.batch if last else 'none'})")
    following = [r for r in log.records("planned") if r.batch == batch + 1]
    if following and table in following[0].versions:
        return following[0].versions[table]
    return store.version(table)


def answers(store: TableStore, name: str, batch: int | None = None, when: datetime | None = None) -> pa.Table:
    """The query's answers as a bag: variable columns and ``_mult``."""
    return store.read_arrow(gold_table(name), gold_version(store, name, batch, when))


def changes(store: TableStore, name: str, since_batch: int | None = None) -> pa.Table:
    """The query's answer changes (after ``since_batch`` when given), in batch order."""
    catalog.lookup(store, name)
    table = store.read_arrow(changes_table(name)).sort_by([(S.BATCH, "ascending"), (S.SIGN, "ascending")])
    if since_batch is not None:  # sliced, not filtered: a Python value in pc.greater imports pandas
        table = table.slice(bisect_right(table[S.BATCH].to_pylist(), since_batch))
    return table


def _solutions(table: pa.Table, variables: tuple[str, ...]) -> list[list[str]]:
    """One row of terms per solution: a binding of multiplicity n appears n times."""
    rows = []
    for row in table.sort_by([(v, "ascending") for v in variables] or [(S.MULT, "ascending")]).to_pylist():
        rows.extend([[row[v] for v in variables]] * row[S.MULT])
    return rows


def _csv_value(term: str) -> str:
    """SPARQL 1.1 CSV: IRIs and literals by their lexical value, blank nodes as _:label."""
    parsed = parse_term(term)
    return f"_:{parsed.value}" if parsed.kind == "bnode" else parsed.value


def format_answers(table: pa.Table, variables: tuple[str, ...], fmt: str, ask: bool = False) -> str:
    """Answers in the SPARQL 1.1 TSV, CSV or JSON results format."""
    if fmt not in FORMATS:
        raise AnswerError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if ask:
        value = table.num_rows > 0
        return json.dumps({"head": {}, "boolean": value}) if fmt == "json" else ("true" if value else "false")
    solutions = _solutions(table, variables)
    if fmt == "json":
        bindings = [{v: term_to_sparql_json(t) for v, t in zip(variables, row)} for row in solutions]
        return json.dumps({"head": {"vars": list(variables)}, "results": {"bindings": bindings}}, indent=1)
    if fmt == "tsv":
        lines = ["\t".join(f"?{v}" for v in variables)]
        lines += ["\t".join(row) for row in solutions]
        return "\n".join(lines)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(variables)
    writer.writerows([[_csv_value(t) for t in row] for row in solutions])
    return out.getvalue().rstrip("\r\n")


def format_changes(table: pa.Table, variables: tuple[str, ...], fmt: str) -> str:
    """Answer changes: batch, bronze versions, sign, count and the binding."""
    if fmt not in FORMATS:
        raise AnswerError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    meta = [S.BATCH, S.BRONZE_FROM, S.BRONZE_TO, S.SIGN, S.COUNT]
    names = [m.lstrip("_") for m in meta]
    rows = table.to_pylist()
    if fmt == "json":
        return json.dumps([{**{n: r[m] for n, m in zip(names, meta)},
                            "binding": {v: term_to_sparql_json(r[v]) for v in variables}} for r in rows], indent=1)
    if fmt == "tsv":
        lines = ["\t".join(names + [f"?{v}" for v in variables])]
        lines += ["\t".join([str(r[m]) for m in meta] + [r[v] for v in variables]) for r in rows]
        return "\n".join(lines)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(names + list(variables))
    writer.writerows([[r[m] for m in meta] + [_csv_value(r[v]) for v in variables] for r in rows])
    return out.getvalue().rstrip("\r\n")
