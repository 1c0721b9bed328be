"""The bronze expectation suite: what every row of the bronze table must satisfy.

The format parsers check term syntax; this suite checks what a parser cannot see line by line
(a literal in subject position, a blank node predicate) and the invariants ingest must keep (an
event time, a unique seq, an event id). Ingest runs it on each file's batch as pandas, so failing
rows are known by index and quarantined with the expectation's name; ``lakegraph validate`` runs
the same suite on the whole table as a Spark DataFrame.

The regular expressions are written for both Python's ``re`` (pandas) and Java's (Spark): anchored,
non-capturing groups, no Python-only syntax, and loops unrolled so that Java does not recurse once
per character. GX itself is reached through :mod:`quality.gx`, which imports it safely.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import pandas as pd

from schemas.terms import IRI_BODY as _IRI_BODY

from .gx import ExpectationSuite, ValidationResult, expectations, failures, register, run

_BNODE = r"_:[^\x00-\x20<>\"{}|^`\\:]+"
_CHARS = r"[^\"\\\x00-\x1f\x7f]*"
_LITERAL = (rf"\"{_CHARS}(?:\\(?:[\\\"nrt]|u[0-9A-F]{{4}}|U[0-9A-F]{{8}}){_CHARS})*\""
            rf"(?:@[a-z]+(?:-[a-z0-9]+)*|\^\^<{_IRI_BODY}>)?")
IRI = rf"^<{_IRI_BODY}>$"
IRI_OR_BNODE = rf"^(?:<{_IRI_BODY}>|{_BNODE})$"
TERM = rf"^(?:<{_IRI_BODY}>|{_BNODE}|{_LITERAL})$"

SUITE_NAME = "bronze"


def _expectations() -> list[Any]:
    E = expectations
    return [
        E.ExpectColumnValuesToBeInSet(column="op", value_set=["insert", "delete"],
                                      description="op must be insert or delete"),
        E.ExpectColumnValuesToMatchRegex(column="s", regex=IRI_OR_BNODE,
                                         description="subject must be an IRI or a blank node"),
        E.ExpectColumnValuesToMatchRegex(column="p", regex=IRI, description="predicate must be an IRI"),
        E.ExpectColumnValuesToMatchRegex(column="o", regex=TERM,
                                         description="object must be an IRI, a blank node or a literal"),
        E.ExpectColumnValuesToNotBeNull(column="event_time", description="event time must be set"),
        E.ExpectColumnValuesToBeUnique(column="seq", description="seq must be unique"),
        E.ExpectColumnValuesToNotBeNull(column="event_id", description="event id must be set"),
    ]


@lru_cache(maxsize=1)
def bronze_suite() -> ExpectationSuite:
    """The bronze suite, registered in the process's GX context."""
    return register(ExpectationSuite(name=SUITE_NAME, expectations=_expectations()))


def run_suite(suite: ExpectationSuite, data: Any, result_format: str = "SUMMARY") -> ValidationResult:
    """Validate a pandas or Spark DataFrame (for example the whole bronze table) against ``suite``."""
    return run(suite, data, result_format)


def validate_bronze_batch(frame: pd.DataFrame) -> tuple[pd.Series, list[tuple[Any, str]], ValidationResult]:
    """Validate one ingest batch in the BRONZE schema.

    Returns a boolean mask of the rows that passed every expectation (aligned with ``frame.index``),
    ``(row index, reason)`` for each failure (a row failing two expectations appears twice), and
    the GX result itself."""
    result = run(bronze_suite(), frame, "COMPLETE")
    found = failures(result)
    bad = {index for index, _ in found}
    return pd.Series(~frame.index.isin(list(bad)), index=frame.index), found, result
