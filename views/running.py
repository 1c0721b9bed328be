"""Running sums: the state of an aggregation without GROUP BY whose aggregates are all linear
(COUNT, SUM, AVG, none with DISTINCT), which a step updates from its change alone.

Why: such a query's one group holds every solution, so recomputing its answer from its rows
(:mod:`views.set_functions`) reads the whole bag each step. COUNT is a sum of multiplicities, and
SPARQL's SUM, though not a plain sum (its type is the promotion of the types present, an INF or NaN
takes over, one non-number makes it an error), is a function of counts and one exact sum: per
aggregated variable, how many values are bound, how many are of each numeric type rank, how many are
NaN, INF and -INF, how many are not numbers, and the sum of the finite values as a Fraction. Each is
the sum of its rows' contributions times their multiplicities, so a deletion subtracts exactly what
its insertion added, in any order, with no drift (never a float). The answer computed from them is
the one :func:`views.set_functions.answer_row` computes from the rows.

The state is one JSON text, kept as the single row of a Z-set table: a step retracts the old text
and inserts the new one.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

from .aggregates import Aggregation
from .numbers import DOUBLE, INTEGER, Number, divide, integer, number, spell
from .set_functions import with_computed

@dataclass
class Tally:
    """One aggregated variable's counts and exact sum (see the module text)."""

    bound: int = 0
    ranks: list[int] = field(default_factory=lambda: [0] * (DOUBLE + 1))
    nan: int = 0
    inf: int = 0
    ninf: int = 0
    other: int = 0
    finite: Fraction = Fraction(0)

    def add(self, term: str, mult: int) -> None:
        self.bound += mult
        n = number(term)
        if n is None:
            self.other += mult
            return
        self.ranks[n.rank] += mult
        if isinstance(n.value, Fraction):
            self.finite += n.value * mult
        elif math.isnan(n.value):
            self.nan += mult
        elif n.value > 0:
            self.inf += mult
        else:
            self.ninf += mult

    def total(self) -> Number | None:
        """SUM of the values (what :func:`views.numbers.total` gives for them), None for an error."""
        if self.other:
            return None
        rank = max((r for r in range(DOUBLE + 1) if self.ranks[r]), default=INTEGER)
        if self.nan or (self.inf and self.ninf):
            return Number(rank, math.nan)
        if self.inf or self.ninf:
            return Number(rank, math.inf if self.inf else -math.inf)
        return Number(rank, self.finite)


@dataclass
class Running:
    """The running state: solutions (COUNT(*)) and a tally per aggregated variable."""

    rows: int = 0
    tallies: dict[str, Tally] = field(default_factory=dict)

    @classmethod
    def from_text(cls, text: str | None) -> "Running":
        """The state a table row holds (None: nothing yet)."""
        if text is None:
            return cls()
        data = json.loads(text)
        tallies = {v: Tally(t["bound"], t["ranks"], t["nan"], t["inf"], t["ninf"], t["other"], Fraction(t["finite"]))
                   for v, t in data["tallies"].items()}
        return cls(data["rows"], tallies)

    def text(self) -> str:
        """The state as one deterministic JSON text."""
        tallies = {v: {"bound": t.bound, "ranks": t.ranks, "nan": t.nan, "inf": t.inf, "ninf": t.ninf,
                       "other": t.other, "finite": str(t.finite)} for v, t in sorted(self.tallies.items())}
        return json.dumps({"rows": self.rows, "tallies": tallies}, sort_keys=True)

    def add(self, aggregation: Aggregation, rows: Mapping[tuple, int]) -> None:
        """Fold bag rows (tuples of the aggregation's inputs, signed multiplicities) in."""
        inputs = aggregation.inputs
        for key, mult in rows.items():
            self.rows += mult
            for variable, term in zip(inputs, key):
                if term:
                    self.tallies.setdefault(variable, Tally()).add(term, mult)

    def answer_row(self, aggregation: Aggregation) -> dict[str, str | None]:
        """The one group's answer row, as :func:`views.set_functions.answer_row` gives it."""
        row: dict[str, str | None] = {}
        for call in aggregation.calls:
            tally = self.tallies.get(call.arg, Tally()) if call.arg is not None else None
            if tally is None:
                row[call.name] = integer(self.rows)
            elif call.function == "COUNT":
                row[call.name] = integer(tally.bound)
            else:
                total = tally.total()
                if total is None:
                    row[call.name] = None
                elif call.function == "SUM":
                    row[call.name] = spell(total)
                else:
                    row[call.name] = spell(divide(total, tally.bound)) if tally.bound else integer(0)
        return with_computed(aggregation, row)


def running_of(aggregation: Aggregation, rows: Mapping[tuple, int], text: str | None = None) -> Running:
    """The state ``text`` (None: empty) with ``rows`` folded in."""
    state = Running.from_text(text)
    state.add(aggregation, rows)
    return state
