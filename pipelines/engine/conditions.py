"""FILTER and HAVING conditions decided in process, for the Arrow engine: no Spark job, no JVM.

A condition's form (:mod:`views.conditions`) is decided once per distinct combination of the
columns it reads, not per row: a pushed FILTER reads one column, whose few distinct values a
batch's rows repeat. Rows whose value the in-process operators leave to the SQL
(:class:`views.operators.Undecided`: values whose reading by Spark or Java Python cannot promise
to match) go, alone, to ``by_sql``; so do all rows of a condition without a form.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from views.conditions import Condition
from views.expressions import Form, Undecided, form_variables, holds

#: A row's verdict: kept, dropped, or left to the SQL.
KEEP, DROP, UNDECIDED = 1, 0, 2


def where_in_process(rows: pa.Table, condition: Condition,
                     by_sql: Callable[[pa.Table, str], pa.Table]) -> pa.Table:
    """The rows of ``rows`` that ``condition`` keeps (its value is true)."""
    if condition.form is None:
        return by_sql(rows, condition.sql)
    verdicts = _verdicts(rows, condition.form)
    kept = rows.filter(pa.array(verdicts == KEEP))
    undecided = verdicts == UNDECIDED
    if not undecided.any():
        return kept
    return pa.concat_tables([kept, by_sql(rows.filter(pa.array(undecided)), condition.sql)])


def _verdict(form: Form, row: dict[str, str | None]) -> int:
    try:
        return KEEP if holds(form, row) is True else DROP
    except Undecided:
        return UNDECIDED


def _verdicts(rows: pa.Table, form: Form) -> np.ndarray:
    """Each row's verdict, computed once per distinct value of the columns the form reads (those
    absent from ``rows`` are unbound)."""
    read = [c for c in form_variables(form) if c in rows.column_names]
    if not read:
        return np.full(rows.num_rows, _verdict(form, {}), np.int8)
    if len(read) == 1:
        encoded = pc.dictionary_encode(rows[read[0]].combine_chunks())
        values = [_verdict(form, {read[0]: v}) for v in encoded.dictionary.to_pylist()]
        indices = encoded.indices.fill_null(len(values)).to_numpy(zero_copy_only=False)
        return np.array(values + [_verdict(form, {})], np.int8)[indices]
    memo: dict[tuple, int] = {}
    out = np.empty(rows.num_rows, np.int8)
    for i, key in enumerate(zip(*(rows[c].to_pylist() for c in read))):
        verdict = memo.get(key)
        if verdict is None:
            verdict = memo[key] = _verdict(form, dict(zip(read, key)))
        out[i] = verdict
    return out
