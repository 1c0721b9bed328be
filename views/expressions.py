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

A condition (a FILTER's or HAVING's) has a form too: ``&& || !``, comparisons ``(op, left,
right)`` (``op`` one of ``= != < <= > >=``), the built-in tests ``(NAME, arg, ...)`` (BOUND, ISIRI,
ISBLANK, ISLITERAL, ISNUMERIC, SAMETERM, LANGMATCHES, REGEX), and any term, taken by its effective
boolean value. :func:`holds` decides it over a row with :mod:`views.filters`' semantics (the
operators are in :mod:`views.operators`), so the Arrow engine keeps a FILTER's or HAVING's rows
without a Spark job; the few values those operators leave undecided (:class:`Undecided`) go to the
compiled SQL, so both give the same rows.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from .model import COMPARISONS, And, Arith, Call, Compare, Const, Expr, Not, Or, Unbound, Var
from .numbers import arithmetic, negate, number, spell
from .filters import LITERAL_KINDS
from .operators import (Undecided, boolean_term, compare, ebv, is_kind, lang_matches, lexical,
                        regex, same_term)
from .terms import literal, split_literal

Form = tuple


class UnsupportedExpression(ValueError):
    """An expression outside what :func:`evaluate` computes; the message names the construct."""


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


#: The built-in tests a condition's form may call, and for the kind tests the kinds each accepts.
_KIND_TESTS = {"ISIRI": frozenset({"iri"}), "ISBLANK": frozenset({"bnode"}), "ISLITERAL": LITERAL_KINDS,
               "ISNUMERIC": frozenset({"num"})}
_TESTS = frozenset({"BOUND", "SAMETERM", "LANGMATCHES", "REGEX", *_KIND_TESTS})


def compile_condition(expr: Expr) -> Form:
    """The form :func:`holds` decides of a condition: ``&&``, ``||``, ``!``, comparisons, the
    built-in tests, and any term :func:`compile_expr` takes (by its effective boolean value); else
    :class:`UnsupportedExpression`."""
    if isinstance(expr, (And, Or)):
        return ("&&" if isinstance(expr, And) else "||", *(compile_condition(a) for a in expr.args))
    if isinstance(expr, Not):
        return ("!", compile_condition(expr.arg))
    if isinstance(expr, Compare):
        return (expr.op, _operand(expr.left), _operand(expr.right))
    if isinstance(expr, Call) and expr.name in _TESTS:
        return (expr.name, *(_operand(a) for a in expr.args))
    return compile_expr(expr)


def _operand(expr: Expr) -> Form:
    """A comparison's or test's argument: a term, or a condition used as one (a boolean)."""
    if isinstance(expr, (And, Or, Not, Compare)) or (isinstance(expr, Call) and expr.name in _TESTS):
        return compile_condition(expr)
    return compile_expr(expr)


def _is_condition(kind: str) -> bool:
    return kind in ("!", "&&", "||") or kind in COMPARISONS or kind in _TESTS


def holds(form: Form, row: Mapping[str, str | None]) -> bool | None:
    """A condition's value over ``row``: True, False or None (an error), with SPARQL's
    three-valued ``&& || !``; :class:`Undecided` where :mod:`views.operators` leaves the value to
    the compiled SQL (unless another argument of ``&&`` or ``||`` decides it)."""
    kind = form[0]
    if kind == "!":
        value = holds(form[1], row)
        return None if value is None else not value
    if kind in ("&&", "||"):
        decisive = kind == "||"             # the value one argument decides the whole by
        values, undecided = [], None
        for arg in form[1:]:
            try:
                values.append(holds(arg, row))
            except Undecided as e:
                undecided = e
        if decisive in values:
            return decisive
        if undecided is not None:
            raise undecided
        return None if None in values else not decisive
    if kind in COMPARISONS:
        return compare(kind, evaluate(form[1], row), evaluate(form[2], row))
    if kind == "BOUND":
        return evaluate(form[1], row) is not None
    if kind in _KIND_TESTS:
        return is_kind(evaluate(form[1], row), _KIND_TESTS[kind])
    if kind == "SAMETERM":
        return same_term(evaluate(form[1], row), evaluate(form[2], row))
    if kind == "LANGMATCHES":
        return lang_matches(evaluate(form[1], row), evaluate(form[2], row))
    if kind == "REGEX":
        flags = lexical(form[3][1]) if len(form) > 3 else ""
        return regex(evaluate(form[1], row), lexical(form[2][1]), flags)
    return ebv(evaluate(form, row))


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
    if form[0] in _TERM_FUNCTIONS or form[0] in _TESTS:
        return f"{form[0]}({', '.join(form_text(a) for a in form[1:])})"
    if form[0] in ("&&", "||"):
        return "(" + f" {form[0]} ".join(form_text(a) for a in form[1:]) + ")"
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
    if _is_condition(kind):
        return boolean_term(holds(form, row))
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
