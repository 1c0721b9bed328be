"""The plan of a path view: the relation of (start, end) pairs one :class:`~views.paths.PathPattern`
stands for, kept by the path operator and joined by the delta rules like any triple-pattern view.

A path view walks its automaton from **roots**: the constant end when the pattern has one (``?x
p* :c`` is walked as ``:c (^p)* ?x``, so the walk starts where the answers are few); else, when a
triple pattern of the query binds an end at its subject or object, the values of that end in the
pattern's view (sideways: the path view then holds only the pairs that can join, so
``?x a ?m . ?m b* ?y`` walks ``b*`` from the objects of ``a`` alone); else every node with a first
move (the walk covers the whole graph, quadratic in the worst case, and ``explain`` says so). Its edges come from ordinary views, one per predicate it names
(``?v0 <p> ?v1``, shared with any query's pattern of that shape), or from the view of every triple
(``?v0 ?v1 ?v2``) when a negated property set lets any predicate through. That view also gives
``nodes(G)``, which a zero-length match needs when both ends are variables: each node of the graph
(subject or object of a triple, literals included) is then its own answer.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Collection

from .automata import Automaton, compile_path
from .model import Node, Var
from .paths import Path, PathPattern, Repeat, inverse, path_text

#: The edge views of a path: ``(predicate, view id)``; predicate ``""`` is the view of every triple.
ALL = ""


@dataclass(frozen=True)
class PathDef:
    """One distinct path view (shared by equal canonical patterns, like triple-pattern views)."""

    id: str                                   # "p_" + first 16 hex of sha256(canonical)
    canonical: str                            # e.g. '?v0 (<http://x/knows>)* ?v1' (root first)
    automaton: Automaton
    root: str | None                          # the constant the walk starts from (None: a variable)
    seed: tuple[str, str] | None              # (view id, column) whose values are the roots, if any
    end: str | None                           # a constant other end (only with a constant root)
    columns: tuple[str, ...]                  # ("v0", "v1"), ("v0",) or ()
    same: bool                                # both ends are one variable: only (x, x) pairs
    edges: tuple[tuple[str, str], ...]        # (predicate or ALL, view id) the edges come from
    nodes: str | None                         # the view of every triple when nodes(G) is needed
    simple: bool = False                      # simple-path semantics (no repeated node), opt-in
    stamped: bool = False                     # edges carry their window time (max-min per reached node)
    walk: str | None = None                   # a star's: the id of its plus, whose walk it shares

    @property
    def reach(self) -> str:
        """The state table of reached (root, node, state) with each one's witness parent: a star's
        is that of its plus (the path view of ``p+`` from the same roots), which it walks."""
        return f"{self.walk or self.id}_reach"

    @property
    def nullable(self) -> bool:
        """Whether the path matches zero-length paths: its automaton's start is final, or it is a
        star walking its plus's automaton, whose start is not."""
        return self.automaton.nullable or self.walk is not None

    @classmethod
    def from_dict(cls, data: dict) -> "PathDef":
        """The path view a plan's JSON holds (lists back to tuples)."""
        return cls(**{**data, "automaton": Automaton.from_dict(data["automaton"]),
                      "seed": tuple(data["seed"]) if data.get("seed") else None,
                      "columns": tuple(data["columns"]), "edges": tuple((p, v) for p, v in data["edges"])})

    def explain(self) -> list[str]:
        """The automaton, roots and state tables, for ``lakegraph explain``."""
        if self.root is not None:
            roots = f"the constant {self.root}"
        elif self.seed is not None:
            roots = (f"the values of column {self.seed[1]} of view {self.seed[0]} (another pattern binds "
                     "this end: only pairs that can join are walked)")
        else:
            roots = ("every node with a first move (both ends are variables and no other pattern binds "
                     "them: the state can grow with the square of the graph's nodes)")
        edges = ", ".join("every triple" if p == ALL else p for p, _ in self.edges) or "none"
        lines = [f"  {self.id}  {self.canonical}", f"    roots: {roots}", f"    edges from: {edges}",
                 "    automaton (minimal DFA over (predicate, direction); ^ = followed backwards):"]
        lines += [f"      {line}" for line in self.automaton.describe()]
        lines.append(f"    state: {self.reach} (root, node, state, witness parent and its state, "
                     f"max-min event time), {self.id} (the pairs, a set)")
        if self.stamped:
            lines.append("    times: a node's time is the largest, over the paths reaching it, of the smallest "
                         "edge time; a window slide that removes every edge up to a time τ removes the "
                         "nodes of time ≤ τ (a filter, nothing re-derived)")
        if self.simple:
            lines.append("    simple paths: a pair needs a path with no repeated node; each root a batch "
                         "touches is re-enumerated (exponential in the worst case)")
        if self.walk is not None:
            lines.append(f"    walk: that of the path's plus (p+ from the same roots, state {self.reach}, shared "
                         "with a query of that path), the zero-length pairs added")
        if self.nullable:
            lines.append("    zero-length: " + ("every node of the graph is its own answer (from the view of "
                                                "every triple)" if self.nodes else "each root is its own answer"))
        return lines


def path_def(pattern: PathPattern, scope: str | None, edge_view: Callable[[str, bool], str],
             bound: Callable[[str], tuple[str, str] | None], simple: bool = False,
             stamped: bool = False, shared: Collection[str] = ()) -> tuple[PathDef, tuple[tuple[str, str], ...]]:
    """The path view of ``pattern`` (over the whole graph, or query ``scope``'s own graph) and how
    its columns bind query variables; ``edge_view(predicate, timed)`` gives the id of the view its
    edges of that predicate come from (:data:`ALL`: every triple), with their event time when
    ``timed``; ``bound(variable)`` the (view id, column) of a triple pattern binding the variable
    at its subject or object, if any; ``simple`` asks for simple-path semantics; ``stamped`` for
    max-min event times (a query over stream windows); ``shared`` the ids of the path views the
    lake keeps already (for other queries).

    A path with two variable ends that the lake keeps from every node already (in either
    direction) is that view: even where another pattern binds an end, whose values would be the
    roots, the join with that pattern narrows the shared pairs to the same answers, and a batch
    walks the path once rather than a second time from a subset of its roots."""
    s, path, o = pattern.s, pattern.path, pattern.o
    seed = None
    if isinstance(s, Var) and isinstance(o, Var) and s != o:
        kept = [(a, p, b) for a, p, b in ((s, path, o), (o, inverse(path), s))
                if _view_id("?v0", p, "?v1", None, simple, scope) in shared]
        if kept:
            s, path, o = kept[0]
        else:
            seed = bound(s.name)
            if seed is None and bound(o.name) is not None:
                s, path, o, seed = o, inverse(path), s, bound(o.name)      # walk from the bound end
    elif isinstance(s, Var) and not isinstance(o, Var):
        s, path, o = o, inverse(path), s          # walk from the constant
    # a star is walked as its plus (p* is p+ and the zero-length pairs): one forest for both
    plus = _plus_of(path, simple)
    automaton = compile_path(plus or path)
    names: dict[str, str] = {}

    def end(node: Node) -> str:
        if isinstance(node, Var):
            return "?" + names.setdefault(node.name, f"v{len(names)}")
        return node

    canonical = _canonical(end(s), path, end(o), seed, simple)
    root = None if isinstance(s, Var) else s
    needs_all = automaton.uses_other or (root is None and seed is None and (plus is not None or automaton.nullable))
    predicates = sorted({sym[0] for _, sym, _ in automaton.moves})
    edges = ((ALL, edge_view(ALL, stamped)),) if automaton.uses_other else \
        tuple((p, edge_view(p, stamped)) for p in predicates)
    definition = PathDef(
        id=_view_id(end(s), path, end(o), seed, simple, scope),
        canonical=canonical, automaton=automaton, root=root, seed=seed, end=None if isinstance(o, Var) else o,
        columns=tuple(names.values()), same=isinstance(s, Var) and s == o, edges=edges,
        nodes=edge_view(ALL, False) if needs_all else None, simple=simple, stamped=stamped,
        walk=_view_id(end(s), plus, end(o), seed, simple, scope) if plus else None)
    return definition, tuple((col, var) for var, col in names.items())


def _view_id(start: str, path: Path, end: str, seed: tuple[str, str] | None, simple: bool,
             scope: str | None) -> str:
    """The id of the path view of ``path`` from ``start`` to ``end``: shared by equal canonical
    text, but a windowed query's are its own (``scope``), and a star walked as its plus is not the
    star of a lake made before stars were (its plan walks the star's own automaton, with a reach
    table of its own)."""
    text = _canonical(start, path, end, seed, simple) + (" WALKED AS PLUS" if _plus_of(path, simple) else "")
    return "p_" + hashlib.sha256((text + (f" @{scope}" if scope else "")).encode("utf-8")).hexdigest()[:16]


def _plus_of(path: Path, simple: bool) -> Repeat | None:
    """``p+`` when ``path`` is ``p*``, whose walk it is; None for any other path, and under simple
    paths (enumerated, not walked)."""
    star = isinstance(path, Repeat) and (path.min, path.max) == (0, None) and not simple
    return Repeat(path.path, 1, None) if star else None


def _canonical(start: str, path: Path, end: str, seed: tuple[str, str] | None, simple: bool) -> str:
    """A path view's text, its root end first: what makes two path views one."""
    return f"{start} {path_text(path)} {end}" + (f" ROOTS {seed[0]}.{seed[1]}" if seed else "") + \
        (" SIMPLE" if simple else "")
