"""SPARQL expressions over an aggregate query's rows, evaluated in Python: GROUP BY expressions
(over a solution's variables) and SELECT expressions and HAVING arithmetic (over a group's answer
row: its keys and aggregate values).

Why Python and not Spark SQL, where FILTERs go (:mod:`views.filters`): these values are computed
where the set functions are, from the rows a step collects (:mod:`views.set_functions`), and
arithmetic must follow XPath's numeric typing exactly (integer division gives a decimal, float
arithmetic is single precision, an integer division by zero is an error), which SQL's numeric types
do not. What is accepted: variables, constants, ``+ - * /`` (binary and unary) and STR, LANG and
DATATYPE; an error (an unbound argument, arithmetic on a non-number, STR of a blank node) makes the
value unbound, as SPARQL's Extend does.

A plan holds an expression in a compiled form, :data:`Form`: nested tuples ``("var", name)``,
``("const", term)``, ``("unbound",)``, ``(op, arg, ...)`` for arithmetic and ``(function, arg)``,
stored in the plan's JSON as lists.

A HAVING condition is compiled to Spark SQL with the FILTERs, and also, when it is ``&& || !`` over
comparisons (``(op, left, right)``, ``op`` one of ``= != < <= > >=``), to a form :func:`holds`
decides in process wherever both sides of every comparison it reaches are integers (the usual
``HAVING (COUNT(?x) >= 100)``): a few answer rows then cost no Spark job. Elsewhere :func:`holds`
raises :class:`Undecided` and the SQL decides, so both give the same rows.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from .model import COMPARISONS, And, Arith, Call, Compare, Const, Expr, Not, Or, Unbound, Var
from .numbers import INTEGER, arithmetic, negate, number, spell
from .terms import literal, split_literal

Form = tuple


class UnsupportedExpression(ValueError):
    """An expression outside what :func:`evaluate` computes; the message names the construct."""


class Undecided(Exception):
    """A comparison :func:`holds` leaves to the FILTER semantics of :mod:`views.filters`."""


#: Integers compared in process stay below this magnitude: the SQL compares them as DECIMAL(38,18).
_INTEGER_LIMIT = 10 ** 19
_ORDER = {"=": lambda x, y: x == y, "!=": lambda x, y: x != y, "<": lambda x, y: x < y,
          "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}


def _str(term: str) -> str | None:
    if term.startswith("<"):
        return literal(term[1:-1])
    return None if term.startswith("_:") else literal(split_literal(term)[0])


def _lang(term: str) -> str | None:
    return None if term.startswith(("<", "_:")) else literal(split_literal(term)[1] or "")


def _datatype(term: str) -> str | None:
    return None if term.startswith(("<", "_:")) else f"<{split_literal(term)[2]}>"


_TERM_FUNCTIONS: dict[str, Callable[[str], str | None]] = {"STR": _str, "LANG": _lang, "DATATYPE": _datatype}


def compile_expr(expr: Expr) -> Form:
    """The evaluable form of ``expr``, or :class:`UnsupportedExpression`."""
    if isinstance(expr, Var):
        return ("var", expr.name)
    if isinstance(expr, Unbound):
        return ("unbound",)
    if isinstance(expr, Const):
        return ("const", expr.term)
    if isinstance(expr, Arith):
        return (expr.op, *(compile_expr(a) for a in expr.args))
    if isinstance(expr, Call) and expr.name in _TERM_FUNCTIONS:
        return (expr.name, compile_expr(expr.args[0]))
    raise UnsupportedExpression(_construct(expr))


def compile_condition(expr: Expr) -> Form:
    """The form :func:`holds` decides of a condition: ``&&``, ``||`` and ``!`` over comparisons of
    expressions :func:`compile_expr` takes; else :class:`UnsupportedExpression`."""
    if isinstance(expr, (And, Or)):
        return ("&&" if isinstance(expr, And) else "||", *(compile_condition(a) for a in expr.args))
    if isinstance(expr, Not):
        return ("!", compile_condition(expr.arg))
    if isinstance(expr, Compare):
        return (expr.op, compile_expr(expr.left), compile_expr(expr.right))
    raise UnsupportedExpression(_construct(expr))


def holds(form: Form, row: Mapping[str, str | None]) -> bool | None:
    """A condition's value over ``row``: True, False or None (an error), with SPARQL's
    three-valued ``&& || !``. A comparison with an unbound side is an error; one of two integers
    compares their values; any other raises :class:`Undecided`."""
    kind = form[0]
    if kind == "!":
        value = holds(form[1], row)
        return None if value is None else not value
    if kind in ("&&", "||"):
        values = [holds(arg, row) for arg in form[1:]]
        decisive = kind == "||"             # the value one argument decides the whole by
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    if kind not in COMPARISONS:
        raise ValueError(f"not a condition: {kind!r}")
    left, right = evaluate(form[1], row), evaluate(form[2], row)
    if left is None or right is None:
        return None
    a, b = number(left), number(right)
    if a is None or b is None or a.rank != INTEGER or b.rank != INTEGER \
            or abs(a.value) >= _INTEGER_LIMIT or abs(b.value) >= _INTEGER_LIMIT:
        raise Undecided(kind)
    return _ORDER[kind](a.value, b.value)


def _construct(expr: Expr) -> str:
    """How a message names an expression's top construct."""
    if isinstance(expr, Call):
        return f"{expr.name}()"
    if isinstance(expr, Compare):
        return f"the comparison {expr.op}"
    return {And: "&&", Or: "||", Not: "!", Var: "a variable's value as a condition"}.get(type(expr), "the expression")


def form_from_json(data: Any) -> Form:
    """A form as a plan's JSON holds it (lists back to tuples)."""
    return tuple(form_from_json(d) if isinstance(d, list) else d for d in data)


def form_variables(form: Form) -> tuple[str, ...]:
    """The variables a form reads, in order of first appearance."""
    if form[0] == "var":
        return (form[1],)
    if form[0] in ("const", "unbound"):
        return ()
    return tuple(dict.fromkeys(v for arg in form[1:] for v in form_variables(arg)))


def form_text(form: Form) -> str:
    """SPARQL spelling, for ``lakegraph explain``."""
    if form[0] == "var":
        return f"?{form[1]}"
    if form[0] == "const":
        return form[1]
    if form[0] == "unbound":
        return "UNBOUND"
    if form[0] in _TERM_FUNCTIONS:
        return f"{form[0]}({form_text(form[1])})"
    if len(form) == 2:
        return f"{form[0]}{form_text(form[1])}"
    return f"({form_text(form[1])} {form[0]} {form_text(form[2])})"


def evaluate(form: Form, row: Mapping[str, str | None]) -> str | None:
    """The term ``form`` gives over ``row`` (column to term, None when unbound); None on an error."""
    kind = form[0]
    if kind == "var":
        return row.get(form[1])
    if kind == "const":
        return form[1]
    if kind == "unbound":
        return None
    args = [evaluate(a, row) for a in form[1:]]
    if None in args:
        return None
    if kind in _TERM_FUNCTIONS:
        return _TERM_FUNCTIONS[kind](args[0])
    numbers = [number(a) for a in args]
    if None in numbers:
        return None
    if len(numbers) == 1:
        return spell(numbers[0] if kind == "+" else negate(numbers[0]))
    result = arithmetic(kind, numbers[0], numbers[1])
    return None if result is None else spell(result)
