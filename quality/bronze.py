"""The bronze expectation suite: what every row of the bronze table must satisfy.

The format parsers check term syntax; this suite checks what a parser cannot see line by line
(a literal in subject position, a blank node predicate) and the invariants ingest must keep (an
event time, a unique seq, an event id). It is stated once, as :data:`EXPECTATIONS`, and run two ways:
ingest applies the expectations in Arrow to each file's batch (:func:`row_failures`; importing Great
Expectations alone takes seconds), quarantining failing rows with the reasons GX would give, and
the GX suite (:func:`bronze_suite`) runs in ``lakegraph validate`` and in the DAG's
``validate_ingest`` task over the landed rows, as a Spark DataFrame.

The regular expressions are written for Python's ``re`` (GX on pandas), Java's (Spark) and RE2
(Arrow): anchored, non-capturing groups, no engine-specific syntax, and loops unrolled so that Java
does not recurse once per character. One difference remains: ``$`` also matches before a final
newline in Python and Java, not in RE2; no reader produces a term ending in one (terms are canonical
N-Triples). GX itself is reached only through :mod:`quality.gx`, imported when a GX function runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from schemas.terms import IRI_BODY as _IRI_BODY

from . import expectation_reason

if TYPE_CHECKING:
    from .gx import ExpectationSuite, ValidationResult

_BNODE = r"_:[^\x00-\x20<>\"{}|^`\\:]+"
_CHARS = r"[^\"\\\x00-\x1f\x7f]*"
_LITERAL = (rf"\"{_CHARS}(?:\\(?:[\\\"nrt]|u[0-9A-F]{{4}}|U[0-9A-F]{{8}}){_CHARS})*\""
            rf"(?:@[a-z]+(?:-[a-z0-9]+)*|\^\^<{_IRI_BODY}>)?")
IRI = rf"^<{_IRI_BODY}>$"
IRI_OR_BNODE = rf"^(?:<{_IRI_BODY}>|{_BNODE})$"
TERM = rf"^(?:<{_IRI_BODY}>|{_BNODE}|{_LITERAL})$"

SUITE_NAME = "bronze"


# -- the kinds of expectation, in GX and in Arrow -----------------------------------------------
def _not_in(column: pa.ChunkedArray, values: tuple[str, ...]) -> pa.ChunkedArray:
    return pc.invert(pc.is_in(column, value_set=pa.array(values, column.type)))


def _no_match(column: pa.ChunkedArray, regex: str) -> pa.ChunkedArray:
    return pc.invert(pc.match_substring_regex(column, regex))


def _repeated(column: pa.ChunkedArray, _: None) -> pa.ChunkedArray:
    counts = pc.value_counts(column)
    return pc.is_in(column, value_set=counts.field("values").filter(pc.greater(counts.field("counts"), 1)))


@dataclass(frozen=True)
class _Kind:
    """How GX names a kind of expectation (``type``, and the keyword its argument goes in) and which
    non-null values break it in Arrow (every row of a repeated value fails ``unique``); ``not_null``,
    the one kind GX applies to nulls, has no ``breaks``."""

    type: str
    keyword: str | None
    breaks: Callable[[pa.ChunkedArray, Any], pa.ChunkedArray] | None


_KINDS: dict[str, _Kind] = {
    "in_set": _Kind("expect_column_values_to_be_in_set", "value_set", _not_in),
    "match_regex": _Kind("expect_column_values_to_match_regex", "regex", _no_match),
    "not_null": _Kind("expect_column_values_to_not_be_null", None, None),
    "unique": _Kind("expect_column_values_to_be_unique", None, _repeated),
}


@dataclass(frozen=True)
class Expectation:
    """One expectation on one bronze column; ``argument`` is the value set or the regex."""

    column: str
    kind: str
    argument: tuple[str, ...] | str | None
    description: str

    @property
    def reason(self) -> str:
        """What a failing row is quarantined with, as GX names the expectation."""
        return expectation_reason(_KINDS[self.kind].type, self.column, self.description)

    def fails(self, column: pa.ChunkedArray) -> pa.ChunkedArray:
        """A mask of the rows of ``column`` this expectation rejects (no nulls)."""
        breaks = _KINDS[self.kind].breaks
        if breaks is None:
            return pc.is_null(column)
        return pc.and_kleene(pc.is_valid(column), breaks(column, self.argument))

    def to_gx(self) -> Any:
        """This expectation as a GX expectation object."""
        from .gx import expectations

        kind = _KINDS[self.kind]
        name = "".join(word.capitalize() for word in kind.type.split("_"))
        value = list(self.argument) if isinstance(self.argument, tuple) else self.argument
        extra = {kind.keyword: value} if kind.keyword else {}
        return getattr(expectations, name)(column=self.column, description=self.description, **extra)


EXPECTATIONS: tuple[Expectation, ...] = (
    Expectation("op", "in_set", ("insert", "delete"), "op must be insert or delete"),
    Expectation("s", "match_regex", IRI_OR_BNODE, "subject must be an IRI or a blank node"),
    Expectation("p", "match_regex", IRI, "predicate must be an IRI"),
    Expectation("o", "match_regex", TERM, "object must be an IRI, a blank node or a literal"),
    Expectation("event_time", "not_null", None, "event time must be set"),
    Expectation("seq", "unique", None, "seq must be unique"),
    Expectation("event_id", "not_null", None, "event id must be set"),
)


def row_failures(batch: pa.Table) -> dict[int, list[str]]:
    """``{row position: reasons}`` for every row of ``batch`` (BRONZE columns) that breaks an
    expectation, in row order, each row's reasons in suite order: the rows and reasons GX's
    COMPLETE result gives for the same batch, without GX."""
    found: dict[int, list[str]] = {}
    for expectation in EXPECTATIONS:
        for index in pc.indices_nonzero(expectation.fails(batch[expectation.column])).to_pylist():
            found.setdefault(index, []).append(expectation.reason)
    return dict(sorted(found.items()))


# -- the GX suite -------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def bronze_suite() -> ExpectationSuite:
    """The bronze suite, registered in the process's GX context."""
    from .gx import ExpectationSuite, register

    return register(ExpectationSuite(name=SUITE_NAME, expectations=[e.to_gx() for e in EXPECTATIONS]))


def run_suite(suite: ExpectationSuite, data: Any, result_format: str = "SUMMARY") -> ValidationResult:
    """Validate a pandas or Spark DataFrame (for example the whole bronze table) against ``suite``."""
    from .gx import run

    return run(suite, data, result_format)
