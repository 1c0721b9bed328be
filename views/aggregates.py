"""SPARQL 1.1 aggregate queries: what the parser reads (:class:`Grouping`) and what a plan keeps
(:class:`Aggregation`).

An aggregate query is a BGP with FILTERs whose solutions are grouped. What the groups need of a
solution is the variables its keys read and its aggregated variables, so the BGP's projection
becomes those (:attr:`Aggregation.inputs`): a bag kept by the very delta rules of any other
projection. A GROUP BY expression is computed from a bag row when the rows are grouped, never
stored, so the bag stays one of plain variables. Each group then gives one answer row (its keys,
one value per aggregate, then the SELECT expressions and HAVING's arithmetic computed from those:
:mod:`views.expressions`), HAVING keeps some, and SELECT projects them. Without GROUP BY there is one group, which has an answer
row even when no solution matches (COUNT 0). The set functions themselves are in
:mod:`views.set_functions`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping

from .conditions import Condition, compile_filter, condition
from .expressions import Form, evaluate, form_from_json, form_text, form_variables
from .model import And, Expr

#: The set functions, as SPARQL spells them.
FUNCTIONS = ("COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT")
#: The linear ones: a group's value is a function of sums over its rows.
LINEAR = ("COUNT", "SUM", "AVG")


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
class Computed:
    """A column computed in Python (:mod:`views.expressions`): a GROUP BY expression's key from a
    solution's variables, or a value from a group's answer row (a SELECT expression, or an
    arithmetic term of HAVING, which then reads it as a column)."""

    name: str
    form: Form


@dataclass(frozen=True)
class Grouping:
    """The parser's reading: the GROUP BY keys (``group_by``, their column names: a variable, the
    ``AS`` variable of an expression, or a hidden ``_gN`` for one without), the expressions among
    them (``keys``), the aggregates (those SELECT names, then hidden ones), the columns computed
    from a group's answer row (``computed``, in SELECT order, then HAVING's arithmetic), HAVING
    over those columns, and whether a DISTINCT must merge equal rows of different groups."""

    group_by: tuple[str, ...]
    calls: tuple[AggregateCall, ...]
    having: tuple[Expr, ...] = ()
    keys: tuple[Computed, ...] = ()
    computed: tuple[Computed, ...] = ()
    distinct: bool = False


@dataclass(frozen=True)
class Aggregation:
    """A plan's aggregation: the grouping with HAVING compiled over the answer rows to Spark SQL
    and to the form :func:`views.expressions.holds` decides in process (:mod:`views.conditions`)."""

    group_by: tuple[str, ...]
    calls: tuple[AggregateCall, ...]
    having_sql: str | None = None
    keys: tuple[Computed, ...] = ()
    computed: tuple[Computed, ...] = ()
    distinct: bool = False
    running: bool = False       # kept as running sums (views.running), not recomputed from the bag
    having_form: Form | None = None

    @property
    def having(self) -> Condition | None:
        return condition(self.having_sql, self.having_form)

    @property
    def linear(self) -> bool:
        """Whether the aggregation can be kept as running sums: one group (no GROUP BY), and only
        COUNT, SUM and AVG, none with DISTINCT (:mod:`views.running`)."""
        return not self.group_by and all(c.function in LINEAR and not c.distinct for c in self.calls)

    @property
    def plain_keys(self) -> tuple[str, ...]:
        """The GROUP BY keys that are variables of the pattern."""
        expressions = {k.name for k in self.keys}
        return tuple(v for v in self.group_by if v not in expressions)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The BGP projection the groups are computed from: the variables the keys read, then the
        aggregated ones (a plain bag: expressions are computed from it, never stored)."""
        keyed = {k.name: form_variables(k.form) for k in self.keys}
        return tuple(dict.fromkeys([*(v for g in self.group_by for v in keyed.get(g, (g,))),
                                    *(c.arg for c in self.calls if c.arg is not None)]))

    @property
    def columns(self) -> tuple[str, ...]:
        """An answer row before SELECT projects it: keys, every aggregate's value, computed values."""
        return (*self.group_by, *(c.name for c in self.calls), *(c.name for c in self.computed))

    @property
    def nullable(self) -> tuple[str, ...]:
        """The answer columns that may be unbound: all but the keys that are variables."""
        return tuple(c for c in self.columns if c not in self.plain_keys)

    @property
    def touched_by(self) -> tuple[str, ...]:
        """The bag columns a step's change is semi-joined on to read the groups it touches: keys
        that are a variable or rename one (any other expression may map different values to one
        group). Empty: a step reads the whole bag (no such key, or a DISTINCT that merges groups'
        rows, whose answers depend on every group)."""
        if self.distinct:
            return ()
        renamed = [k.form[1] for k in self.keys if k.form[0] == "var"]
        return tuple(dict.fromkeys([*self.plain_keys, *renamed]))

    def group_of(self, row: Mapping[str, str | None]) -> tuple:
        """The key values of a bag row (variable to term)."""
        forms = {k.name: k.form for k in self.keys}
        return tuple(evaluate(forms[g], row) if g in forms else row[g] for g in self.group_by)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Aggregation | None":
        """The aggregation as a plan's JSON holds it (None for a query without one)."""
        if data is None:
            return None

        def computed(items: list[dict[str, Any]]) -> tuple[Computed, ...]:
            return tuple(Computed(c["name"], form_from_json(c["form"])) for c in items)

        return cls(group_by=tuple(data["group_by"]), calls=tuple(AggregateCall(**c) for c in data["calls"]),
                   having_sql=data["having_sql"], keys=computed(data.get("keys", [])),
                   computed=computed(data.get("computed", [])), distinct=data.get("distinct", False),
                   running=data.get("running", False),
                   having_form=form_from_json(data["having_form"]) if data.get("having_form") else None)

    def explain(self, bag: str, sums: str) -> list[str]:
        """Lines for ``lakegraph explain``: the groups, the state tables and how a batch runs (HAVING
        is the plan's to show, with its other filters)."""
        by = " ".join(f"?{v}" for v in self.group_by)
        lines = ["aggregation: " + (f"GROUP BY {by}" if by else "one group (no GROUP BY)")]
        lines += [f"  ?{k.name} = {form_text(k.form)} (a key, from each solution)" for k in self.keys]
        lines += [f"  ?{c.name} = {c.text()}" for c in self.calls]
        lines += [f"  ?{c.name} = {form_text(c.form)} (from the answer row)" for c in self.computed]
        if self.distinct:
            lines.append("  DISTINCT: equal answer rows of different groups merge")
        lines += [f"  value index: {bag} (the variables keys read and aggregated variables, with multiplicities:",
                  "    the BGP's projected bag, kept by the delta plan above)"]
        if self.running:
            return lines + [f"  running sums: {sums} (counts and exact sums, one row): a batch folds its change",
                            "    into them and changes gold by retracting the old answer row and inserting the new one"]
        read = ("the groups its changes touch" if self.touched_by else "the whole bag") if by else "the one group"
        return lines + [f"  a batch reads the rows of {read}, computes the answers before and after",
                        "    from them, and changes gold by retracting each old answer row and inserting the new one"]


def aggregation_plan(grouping: Grouping, windowed: bool = False) -> Aggregation:
    """The plan form of a parsed grouping (HAVING compiled over the answer columns); a linear one
    over the whole graph keeps running sums (a windowed query's group is recomputed per window)."""
    plan = Aggregation(grouping.group_by, grouping.calls, None, grouping.keys, grouping.computed, grouping.distinct)
    plan = replace(plan, running=plan.linear and not windowed)
    if not grouping.having:
        return plan
    having = compile_filter(grouping.having[0] if len(grouping.having) == 1 else And(grouping.having), plan.columns)
    return replace(plan, having_sql=having.sql, having_form=having.form) if having else plan
