"""The parsed query: triple patterns over canonical N-Triples constants, and FILTER expression trees.

Everything is a frozen dataclass so that patterns and expressions can be compared, hashed and used
as keys (views are shared by equal canonical patterns). Constants are canonical N-Triples strings
(see :mod:`views.terms`), so a constant in a pattern is compared with data terms as a plain string.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Union

if TYPE_CHECKING:
    from .aggregates import Grouping
    from .paths import Pattern
    from .streams import StreamWindow


@dataclass(frozen=True)
class Var:
    """A query variable (blank nodes of the pattern become fresh, non-projected variables)."""

    name: str


#: A triple-pattern position: a variable, or a constant term in canonical N-Triples syntax.
Node = Union[Var, str]


@dataclass(frozen=True)
class TriplePattern:
    """A triple pattern; ``t``, a windowed query's C-SPARQL ``timestamp()`` of this very pattern,
    is the variable bound to the matched triple's event time (a fourth position, so the views and
    delta rules carry it like any other variable)."""

    s: Node
    p: Node
    o: Node
    t: Var | None = None

    def nodes(self) -> tuple[tuple[str, Node], ...]:
        """``(position, node)`` in s, p, o (then t) order."""
        spo: tuple[tuple[str, Node], ...] = (("s", self.s), ("p", self.p), ("o", self.o))
        return spo if self.t is None else (*spo, ("t", self.t))

    def variables(self) -> tuple[str, ...]:
        """Distinct variable names in order of first appearance (s, p, o, t)."""
        return tuple(dict.fromkeys(n.name for _, n in self.nodes() if isinstance(n, Var)))

    def text(self) -> str:
        """SPARQL-like spelling, e.g. ``?x <http://x/knows> ?y`` (``... TIMESTAMP ?t`` with a time)."""
        spo = " ".join(f"?{n.name}" if isinstance(n, Var) else n for n in (self.s, self.p, self.o))
        return spo if self.t is None else f"{spo} TIMESTAMP ?{self.t.name}"


# -- FILTER expressions ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Const:
    """A constant term (canonical N-Triples)."""

    term: str


@dataclass(frozen=True)
class Unbound:
    """A variable that can never be bound where the FILTER is evaluated: one no triple pattern of
    the FILTER's group binds (bound nowhere, or only outside a nested group: SPARQL scoping), or
    one of another pattern once a FILTER is pushed into a view. ``bound()`` of it is false,
    anything else an error."""

    name: str


@dataclass(frozen=True)
class Not:
    arg: "Expr"


@dataclass(frozen=True)
class And:
    args: tuple["Expr", ...]


@dataclass(frozen=True)
class Or:
    args: tuple["Expr", ...]


#: Comparison operators, as written in SPARQL.
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Compare:
    op: str
    left: "Expr"
    right: "Expr"


#: Supported built-in functions (upper case; ISURI is spelled ISIRI) and whether each returns a boolean.
FUNCTIONS: dict[str, bool] = {
    "BOUND": True, "ISIRI": True, "ISBLANK": True, "ISLITERAL": True, "ISNUMERIC": True,
    "REGEX": True, "LANGMATCHES": True, "SAMETERM": True,
    "STR": False, "LANG": False, "DATATYPE": False,
}


#: C-SPARQL's ``timestamp(s, p, o)`` as the parser reads it; it then becomes the time variable
#: (:attr:`TriplePattern.t`) of the pattern it names, so no FILTER ever compiles the call itself.
TIMESTAMP = "TIMESTAMP"


@dataclass(frozen=True)
class Call:
    """A built-in call (a :data:`FUNCTIONS` name or :data:`TIMESTAMP`). REGEX keeps its pattern and
    flags as constant simple literals; TIMESTAMP's three arguments are variables or constants."""

    name: str
    args: tuple["Expr", ...]


@dataclass(frozen=True)
class Arith:
    """Arithmetic, ``op`` one of ``+ - * /`` over two arguments, or a unary ``-`` / ``+`` over one.
    Only expressions over aggregate answers (GROUP BY keys, SELECT and HAVING of an aggregate
    query) may hold it: those are evaluated in Python (:mod:`views.expressions`), FILTERs in SQL."""

    op: str
    args: tuple["Expr", ...]


Expr = Union[Var, Const, Unbound, Not, And, Or, Compare, Call, Arith]


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``expr``."""
    if isinstance(expr, Not):
        return (expr.arg,)
    if isinstance(expr, (And, Or, Call, Arith)):
        return expr.args
    if isinstance(expr, Compare):
        return (expr.left, expr.right)
    return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """``expr`` and all its sub-expressions, pre-order."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def expr_variables(expr: Expr) -> tuple[str, ...]:
    """Names of the (possibly bound) variables ``expr`` mentions, in order of first appearance."""
    return tuple(dict.fromkeys(e.name for e in walk(expr) if isinstance(e, Var)))


def rebuild(expr: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """``expr`` with each direct sub-expression replaced by ``fn(sub)`` (leaves unchanged)."""
    if isinstance(expr, Not):
        return Not(fn(expr.arg))
    if isinstance(expr, (And, Or)):
        return type(expr)(tuple(fn(a) for a in expr.args))
    if isinstance(expr, Compare):
        return Compare(expr.op, fn(expr.left), fn(expr.right))
    if isinstance(expr, Call):
        return Call(expr.name, tuple(fn(a) for a in expr.args))
    if isinstance(expr, Arith):
        return Arith(expr.op, tuple(fn(a) for a in expr.args))
    return expr


def map_vars(expr: Expr, fn: Callable[[Var], Expr]) -> Expr:
    """``expr`` with every :class:`Var` replaced by ``fn(var)`` (renaming, or unbinding)."""
    if isinstance(expr, Var):
        return fn(expr)
    return rebuild(expr, lambda sub: map_vars(sub, fn))


def conjuncts(expr: Expr) -> tuple[Expr, ...]:
    """The top-level ``&&`` operands: FILTER(A && B) keeps exactly the rows FILTER(A) FILTER(B) keeps,
    so each conjunct can be placed (pushed down) on its own."""
    if isinstance(expr, And):
        return tuple(c for a in expr.args for c in conjuncts(a))
    return (expr,)


def expr_text(expr: Expr) -> str:
    """A deterministic, fully parenthesised SPARQL-like spelling (part of a view's canonical form,
    so it must tell apart every two different expressions)."""
    if isinstance(expr, Var):
        return f"?{expr.name}"
    if isinstance(expr, Const):
        return expr.term
    if isinstance(expr, Unbound):
        return "UNBOUND"
    if isinstance(expr, Not):
        return f"!{expr_text(expr.arg)}"
    if isinstance(expr, (And, Or)):
        sep = " && " if isinstance(expr, And) else " || "
        return "(" + sep.join(expr_text(a) for a in expr.args) + ")"
    if isinstance(expr, Compare):
        return f"({expr_text(expr.left)} {expr.op} {expr_text(expr.right)})"
    if isinstance(expr, Arith):
        return f"({expr.op}{expr_text(expr.args[0])})" if len(expr.args) == 1 else \
            "(" + f" {expr.op} ".join(expr_text(a) for a in expr.args) + ")"
    return f"{expr.name}(" + ", ".join(expr_text(a) for a in expr.args) + ")"


# -- the query ------------------------------------------------------------------------------------
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


def validate_name(name: str) -> str:
    """``name`` if it can name a query (it becomes part of table names), else ValueError."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"invalid query name {name!r}: use a letter, then up to 63 letters, digits or _")
    return name


@dataclass(frozen=True)
class Query:
    """A SELECT, ASK or CONSTRUCT query whose WHERE is one basic graph pattern with FILTERs.

    ``patterns`` are distinct, in source order; ``filters`` are the FILTER expressions (scoping of
    nested groups already applied); ``variables`` are all pattern variables in order of first
    appearance, including the fresh ones standing for blank nodes; ``projection`` the output
    variables in order (empty for ASK).

    What a C-SPARQL text adds (:mod:`views.streams`) defaults to nothing, so a plain SPARQL query
    is modelled as it always was: ``streams``, the ``FROM STREAM`` windows in source order;
    ``graphs``, the background graphs (``FROM <g>``), distinct, in source order; and the header
    ``REGISTER QUERY|STREAM name AS`` as ``register_name`` and ``register_kind``
    (``'query'`` | ``'stream'``).
    """

    text: str
    form: str
    patterns: tuple[Pattern, ...]          # triple patterns, and property paths kept as path views
    filters: tuple[Expr, ...]
    projection: tuple[str, ...]
    distinct: bool
    variables: tuple[str, ...]
    streams: tuple[StreamWindow, ...] = ()
    graphs: tuple[str, ...] = ()
    register_name: str | None = None
    register_kind: str | None = None
    template: tuple[TriplePattern, ...] = ()     # a CONSTRUCT's template (its projection: the variables)
    grouping: Grouping | None = None            # GROUP BY / aggregates / HAVING (projection: the answer columns)
