"""The plan of a path view: the relation of (start, end) pairs one :class:`~views.paths.PathPattern`
stands for, kept by the path operator and joined by the delta rules like any triple-pattern view.

A path view walks its automaton from **roots**: the constant end when the pattern has one (``?x
p* :c`` is walked as ``:c (^p)* ?x``, so the walk starts where the answers are few), else every node
with a first move (both ends variables: the walk covers the whole graph, quadratic in the worst
case, and ``explain`` says so). Its edges come from ordinary views, one per predicate it names
(``?v0 <p> ?v1``, shared with any query's pattern of that shape), or from the view of every triple
(``?v0 ?v1 ?v2``) when a negated property set lets any predicate through. That view also gives
``nodes(G)``, which a zero-length match needs when both ends are variables: each node of the graph
(subject or object of a triple, literals included) is then its own answer.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

from .automata import Automaton, compile_path
from .model import Node, Var
from .paths import PathPattern, inverse, path_text

#: The edge views of a path: ``(predicate, view id)``; predicate ``""`` is the view of every triple.
ALL = ""


@dataclass(frozen=True)
class PathDef:
    """One distinct path view (shared by equal canonical patterns, like triple-pattern views)."""

    id: str                                   # "p_" + first 16 hex of sha256(canonical)
    canonical: str                            # e.g. '?v0 (<http://x/knows>)* ?v1' (root first)
    automaton: Automaton
    root: str | None                          # the constant the walk starts from (None: every node)
    end: str | None                           # a constant other end (only with a constant root)
    columns: tuple[str, ...]                  # ("v0", "v1"), ("v0",) or ()
    same: bool                                # both ends are one variable: only (x, x) pairs
    edges: tuple[tuple[str, str], ...]        # (predicate or ALL, view id) the edges come from
    nodes: str | None                         # the view of every triple when nodes(G) is needed

    @property
    def reach(self) -> str:
        """The state table of reached (root, node, state) with each one's witness parent."""
        return f"{self.id}_reach"

    @classmethod
    def from_dict(cls, data: dict) -> "PathDef":
        """The path view a plan's JSON holds (lists back to tuples)."""
        return cls(**{**data, "automaton": Automaton.from_dict(data["automaton"]),
                      "columns": tuple(data["columns"]), "edges": tuple((p, v) for p, v in data["edges"])})

    def explain(self) -> list[str]:
        """The automaton, roots and state tables, for ``lakegraph explain``."""
        roots = (f"the constant {self.root}" if self.root is not None else
                 "every node with a first move (both ends are variables: the state can grow with the "
                 "square of the graph's nodes)")
        edges = ", ".join("every triple" if p == ALL else p for p, _ in self.edges) or "none"
        lines = [f"  {self.id}  {self.canonical}", f"    roots: {roots}", f"    edges from: {edges}",
                 "    automaton (minimal DFA over (predicate, direction); ^ = followed backwards):"]
        lines += [f"      {line}" for line in self.automaton.describe()]
        lines.append(f"    state: {self.reach} (root, node, state, witness parent and its state), "
                     f"{self.id} (the pairs, a set)")
        if self.automaton.nullable:
            lines.append("    zero-length: " + ("the root is its own answer" if self.root is not None else
                                                "every node of the graph is its own answer (from the view "
                                                "of every triple)"))
        return lines


def path_def(pattern: PathPattern, scope: str | None,
             edge_view: Callable[[str], str]) -> tuple[PathDef, tuple[tuple[str, str], ...]]:
    """The path view of ``pattern`` (over the whole graph, or query ``scope``'s own graph) and how
    its columns bind query variables; ``edge_view(predicate)`` gives the id of the view its edges of
    that predicate come from (:data:`ALL`: every triple)."""
    s, path, o = pattern.s, pattern.path, pattern.o
    if isinstance(s, Var) and not isinstance(o, Var):
        s, path, o = o, inverse(path), s          # walk from the constant
    automaton = compile_path(path)
    names: dict[str, str] = {}

    def end(node: Node) -> str:
        if isinstance(node, Var):
            return "?" + names.setdefault(node.name, f"v{len(names)}")
        return node

    canonical = f"{end(s)} {path_text(path)} {end(o)}"
    root = None if isinstance(s, Var) else s
    needs_all = automaton.uses_other or (root is None and automaton.nullable)
    predicates = sorted({sym[0] for _, sym, _ in automaton.moves})
    edges = ((ALL, edge_view(ALL)),) if automaton.uses_other else tuple((p, edge_view(p)) for p in predicates)
    definition = PathDef(
        id="p_" + hashlib.sha256((canonical + (f" @{scope}" if scope else "")).encode("utf-8")).hexdigest()[:16],
        canonical=canonical, automaton=automaton, root=root, end=None if isinstance(o, Var) else o,
        columns=tuple(names.values()), same=isinstance(s, Var) and s == o, edges=edges,
        nodes=edge_view(ALL) if needs_all else None)
    return definition, tuple((col, var) for var, col in names.items())

