"""SPARQL 1.1 aggregate queries: what the parser reads (:class:`Grouping`) and what a plan keeps
(:class:`Aggregation`).

An aggregate query is a BGP with FILTERs whose solutions are grouped. What the groups need of a
solution is its group variables and its aggregated variables, so the BGP's projection becomes
those (:attr:`Aggregation.inputs`): a bag kept by the very delta rules of any other projection.
Each group then gives one answer row (the group variables and one value per aggregate), HAVING
keeps some, and SELECT projects them. Without GROUP BY there is one group, which has an answer
row even when no solution matches (COUNT 0). The set functions themselves are in
:mod:`views.set_functions`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .filters import TRUE, filter_sql
from .model import And, Expr

#: The set functions, as SPARQL spells them.
FUNCTIONS = ("COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT")


@dataclass(frozen=True)
class AggregateCall:
    """One aggregate: ``function(DISTINCT? arg)`` whose value goes to column ``name`` (the SELECT's
    ``AS`` variable, or a fresh hidden ``_aN`` for one only HAVING reads). ``arg`` is None for
    ``COUNT(*)``."""

    name: str
    function: str
    arg: str | None
    distinct: bool = False
    separator: str = " "

    def text(self) -> str:
        """SPARQL spelling, e.g. ``GROUP_CONCAT(DISTINCT ?x; SEPARATOR="|")``."""
        inner = ("DISTINCT " if self.distinct else "") + ("*" if self.arg is None else f"?{self.arg}")
        if self.function == "GROUP_CONCAT":
            inner += f"; SEPARATOR={json.dumps(self.separator, ensure_ascii=False)}"
        return f"{self.function}({inner})"


@dataclass(frozen=True)
class Grouping:
    """The parser's reading: GROUP BY variables, the aggregates (those SELECT names, then hidden
    ones HAVING needs) and the HAVING conditions over the group variables and aggregate names."""

    group_by: tuple[str, ...]
    calls: tuple[AggregateCall, ...]
    having: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Aggregation:
    """A plan's aggregation: the grouping with HAVING compiled to Spark SQL over the answer rows."""

    group_by: tuple[str, ...]
    calls: tuple[AggregateCall, ...]
    having_sql: str | None = None

    @property
    def inputs(self) -> tuple[str, ...]:
        """The BGP projection the groups are computed from: group variables, then aggregated ones."""
        return tuple(dict.fromkeys([*self.group_by, *(c.arg for c in self.calls if c.arg is not None)]))

    @property
    def columns(self) -> tuple[str, ...]:
        """An answer row before SELECT projects it: group variables and every aggregate's value."""
        return (*self.group_by, *(c.name for c in self.calls))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Aggregation | None":
        """The aggregation as a plan's JSON holds it (None for a query without one)."""
        if data is None:
            return None
        return cls(group_by=tuple(data["group_by"]), calls=tuple(AggregateCall(**c) for c in data["calls"]),
                   having_sql=data["having_sql"])

    def explain(self, bag: str) -> list[str]:
        """Lines for ``lakegraph explain``: the groups, the state table and how a batch runs (HAVING
        is the plan's to show, with its other filters)."""
        by = " ".join(f"?{v}" for v in self.group_by)
        lines = ["aggregation: " + (f"GROUP BY {by}" if by else "one group (no GROUP BY)")]
        lines += [f"  ?{c.name} = {c.text()}" for c in self.calls]
        lines += [f"  value index: {bag} (group and aggregated variables, with multiplicities: the BGP's",
                  "    projected bag, kept by the delta plan above)",
                  "  a batch reads the rows of " + ("the groups its changes touch" if by else "the one group")
                  + ", computes their answers before and after",
                  "    from them, and changes gold by retracting each old answer row and inserting the new one"]
        return lines


def aggregation_plan(grouping: Grouping) -> Aggregation:
    """The plan form of a parsed grouping (HAVING compiled over the answer columns)."""
    plan = Aggregation(grouping.group_by, grouping.calls)
    if not grouping.having:
        return plan
    having = grouping.having[0] if len(grouping.having) == 1 else And(grouping.having)
    sql = filter_sql(having, set(plan.columns))
    return Aggregation(grouping.group_by, grouping.calls, None if sql == TRUE else sql)
