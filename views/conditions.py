"""A FILTER or HAVING condition as the engines take it: Spark SQL (:mod:`views.filters`), and the
form :func:`views.expressions.holds` decides in process with the same semantics.

The Spark engine runs the SQL. The Arrow engine decides rows in process and hands Spark only the
rows the form leaves undecided (:class:`views.operators.Undecided`), or every row when there is no
form (a plan stored before forms were, or an expression only the SQL compiles): so a FILTER costs
no JVM on the Arrow engine, and both engines keep the same rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

from .expressions import Form, UnsupportedExpression, compile_condition
from .filters import TRUE, filter_sql
from .model import Expr, Unbound, map_vars


@dataclass(frozen=True)
class Condition:
    """A condition over some columns: ``sql`` a Spark SQL boolean, ``form`` its in-process form."""

    sql: str
    form: Form | None = None


def compile_filter(expr: Expr, columns: Collection[str]) -> Condition | None:
    """``expr`` over ``columns`` (other variables are unbound); None when it always holds."""
    sql = filter_sql(expr, set(columns))
    if sql == TRUE:
        return None
    scoped = map_vars(expr, lambda v: v if v.name in columns else Unbound(v.name))
    try:
        form = compile_condition(scoped)
    except UnsupportedExpression:
        form = None
    return Condition(sql, form)


def condition(sql: str | None, form: Form | None) -> Condition | None:
    """The condition a plan keeps as its two parts (None: no condition)."""
    return Condition(sql, form) if sql else None

