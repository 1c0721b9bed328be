"""SPARQL's set functions over one group: a group's answer row from its rows in the value index.

A group is given as its rows: tuples of the aggregation's input variables
(:attr:`~views.aggregates.Aggregation.inputs`) with positive multiplicities, the Z-set the engine
keeps. Everything here is a function of that Z-set alone (never of the order rows arrived in), so
the answer before and after a batch can each be computed from the group's rows then.

Semantics (SPARQL 1.1 section 18.5, with Oxigraph as the reference where the text is loose):

* COUNT counts bound values (``*``: solutions), with multiplicity; DISTINCT counts distinct terms.
* SUM and AVG promote numeric types (:mod:`views.numbers`), exactly; a non-numeric value is an
  error, so the aggregate is unbound for that group. AVG of integers is a decimal; over no values
  SUM and AVG are ``"0"^^xsd:integer``.
* MIN and MAX follow :func:`views.ordering.order_key`; unbound over no values. SAMPLE is the
  minimum, so a group's sample only changes when its values do.
* GROUP_CONCAT joins the string values (simple or language-tagged) in that same order with the
  separator, keeping the language when every value has the same one; any other kind of value is
  an error (unbound), as CONCAT has it. Over no values it is ``""``.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping

from .aggregates import Aggregation
from .expressions import evaluate
from .filters import const_kind
from .numbers import Number, divide, integer, number, spell, total
from .ordering import order_key
from .terms import literal, split_literal

#: A group's rows: a tuple of input terms ('' or None when unbound) and its multiplicity.
Rows = Mapping[tuple, int]


def answer_row(aggregation: Aggregation, group: tuple, rows: Rows) -> dict[str, str | None] | None:
    """The answer row of group ``group`` (its key values) from its ``rows``: keys, aggregates, then
    the values computed from those (each may read the ones before it); None when a grouped
    query's group has no rows (a group exists only while a solution does)."""
    if aggregation.group_by and not rows:
        return None
    row: dict[str, str | None] = dict(zip(aggregation.group_by, group))
    position = {v: i for i, v in enumerate(aggregation.inputs)}
    gathered: dict[tuple[str, bool], Counter] = {}     # calls over one variable share its values
    for call in aggregation.calls:
        if call.arg is None:
            row[call.name] = integer(sum(rows.values()))
            continue
        values = gathered.get((call.arg, call.distinct))
        if values is None:
            at = position[call.arg]
            values = Counter()
            for key, mult in rows.items():
                if key[at]:
                    values[key[at]] += mult
            if call.distinct:
                values = Counter(dict.fromkeys(values, 1))
            gathered[(call.arg, call.distinct)] = values
        row[call.name] = _FUNCTIONS[call.function](values, call.separator)
    return with_computed(aggregation, row)


def with_computed(aggregation: Aggregation, row: dict[str, str | None]) -> dict[str, str | None]:
    """``row`` (keys and aggregate values) with the computed columns added, each of which may read
    the ones before it."""
    for computed in aggregation.computed:
        row[computed.name] = evaluate(computed.form, row)
    return row


def _count(values: Counter, _: str) -> str:
    return integer(sum(values.values()))


def _numbers(values: Counter) -> list[tuple[Number, int]] | None:
    """The values as numbers with their multiplicities; None if any is not a number (an error)."""
    found = [(number(term), mult) for term, mult in values.items()]
    return None if any(n is None for n, _ in found) else found


def _sum(values: Counter, _: str) -> str | None:
    found = _numbers(values)
    return None if found is None else spell(total(found))


def _avg(values: Counter, _: str) -> str | None:
    found = _numbers(values)
    if found is None:
        return None
    return spell(divide(total(found), sum(values.values()))) if found else integer(0)


def _min(values: Counter, _: str) -> str | None:
    return min(values, key=order_key, default=None)


def _max(values: Counter, _: str) -> str | None:
    return max(values, key=order_key, default=None)


def _group_concat(values: Counter, separator: str) -> str | None:
    if any(const_kind(term) not in ("str", "lang") for term in values):
        return None
    parts = [split_literal(term) for term in sorted(values, key=order_key) for _ in range(values[term])]
    langs = {lang for _, lang, _ in parts}
    lang = langs.pop() if len(langs) == 1 else None
    return literal(separator.join(lexical for lexical, _, _ in parts), lang)


_FUNCTIONS: dict[str, Callable[[Counter, str], str | None]] = {
    "COUNT": _count, "SUM": _sum, "AVG": _avg, "MIN": _min, "MAX": _max, "SAMPLE": _min,
    "GROUP_CONCAT": _group_concat,
}
