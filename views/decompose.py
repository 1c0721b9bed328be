"""The paper's decompositions of a BGP (sections 4 and 6), on the model's triple patterns.

* **Connected-variable partition** (Def. 9): variables are connected when a triple pattern holds
  both. The paper has no predicate variables and connects a triple's subject and object; we extend
  that rule to *all variables of one triple pattern, in any position*, since a pattern binds its
  variables together (``?s ?p <o>`` ties ``?s`` and ``?p`` exactly as ``?s <p> ?o`` ties ``?s, ?o``).
* **Connected-variable decomposition** (Def. 10): one part per class of the partition (its triple
  patterns) plus, when some triples have no variable, one ground part. Parts share no variable, so
  the query's answers are the product of the parts' answers (Lemmas 2 and 3).
* **Kinds of parts**: ``ground``; ``simple var-centric star`` (one variable, at the subject or the
  object of every triple, constants everywhere else, Def. 6); ``var-connected`` otherwise. A
  one-variable part that is not a simple star (the variable as predicate, or twice in a triple) is
  run as var-connected: it needs the generic joins, not the paper's per-centre bit vector.
* **Query class**: ``ground``; ``simple var-centric star`` (one star part, nothing else);
  ``loosely-connected`` (only star parts, several, or one with a ground part; Def. 11 / Lemma 1);
  ``var-connected`` (one var-connected part, nothing else; Def. 12); ``general`` (mixes them).
* **Star decomposition** (Def. 13) of a part: one generalised star per variable holding every
  triple incident to it, so triples with two (or three) variables are replicated; stars sharing a
  triple are adjacent in the **overlapping-subqueries graph**.
* **Delta orders** (Prop. 5): for each triple pattern, a join order starting with it. Stars centred
  on its variables come first, then a breadth-first walk of the overlapping-subqueries graph; each
  star's triples are appended as it is reached. Every next triple then shares a variable with those
  already joined, so no step is a Cartesian product.
* **A backfill's order** (:func:`cheapest_order`): of the delta orders, the one whose joins are
  estimated to build the fewest rows, from the patterns' row and distinct-value counts.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Mapping, Sequence

from .model import TriplePattern

GROUND = "ground"
STAR = "simple var-centric star"
VAR_CONNECTED = "var-connected"
LOOSELY_CONNECTED = "loosely-connected"
GENERAL = "general"


@dataclass(frozen=True)
class Part:
    """One subquery of the connected-variable decomposition: indexes into the query's patterns."""

    kind: str
    variables: tuple[str, ...]
    patterns: tuple[int, ...]


def connected_variable_partition(patterns: Sequence[TriplePattern]) -> tuple[tuple[str, ...], ...]:
    """The classes of variables connected through shared triple patterns, each in order of first
    appearance, classes ordered by their first variable's appearance."""
    parent: dict[str, str] = {}

    def root(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for pattern in patterns:
        names = pattern.variables()
        for v in names:
            parent.setdefault(v, v)
        for v in names[1:]:
            parent[root(v)] = root(names[0])
    classes: dict[str, list[str]] = {}
    for v in parent:                     # dict order = order of first appearance
        classes.setdefault(root(v), []).append(v)
    return tuple(tuple(c) for c in classes.values())


def part_kind(patterns: Sequence[TriplePattern], variables: Sequence[str]) -> str:
    """The kind of a part given its patterns and variables."""
    if not variables:
        return GROUND
    if len(variables) == 1 and all(_star_edge(p) for p in patterns):
        return STAR
    return VAR_CONNECTED


def _star_edge(pattern: TriplePattern) -> bool:
    """A triple of a simple var-centric star: its one variable is the subject or the object, and
    the predicate and the other end are constants."""
    ends = [isinstance(n, str) for n in (pattern.s, pattern.o)]
    return isinstance(pattern.p, str) and sorted(ends) == [False, True]


def decompose(patterns: Sequence[TriplePattern]) -> tuple[Part, ...]:
    """The connected-variable decomposition: the ground part (if any) first, then one part per
    class of the partition, in order of first appearance."""
    parts: list[Part] = []
    ground = tuple(i for i, p in enumerate(patterns) if not p.variables())
    if ground:
        parts.append(Part(GROUND, (), ground))
    for variables in connected_variable_partition(patterns):
        members = tuple(i for i, p in enumerate(patterns) if p.variables() and p.variables()[0] in variables)
        parts.append(Part(part_kind([patterns[i] for i in members], variables), variables, members))
    return tuple(parts)


def query_class(parts: Sequence[Part]) -> str:
    """The class of the whole query from the kinds of its parts."""
    kinds = [p.kind for p in parts]
    others = [k for k in kinds if k != GROUND]
    if not others:
        return GROUND
    if all(k == STAR for k in others):
        return STAR if len(kinds) == 1 else LOOSELY_CONNECTED
    return VAR_CONNECTED if len(kinds) == 1 else GENERAL


def star_decomposition(patterns: Sequence[TriplePattern]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """One generalised star per variable: ``(centre, indexes of the patterns incident to it)``,
    centres in order of first appearance (a ground part has no star)."""
    centres = dict.fromkeys(v for p in patterns for v in p.variables())
    return tuple((v, tuple(i for i, p in enumerate(patterns) if v in p.variables())) for v in centres)


def overlap_edges(stars: Sequence[tuple[str, tuple[int, ...]]]) -> tuple[tuple[int, int], ...]:
    """Edges ``(i, j)``, ``i < j``, of the overlapping-subqueries graph: stars sharing a pattern."""
    return tuple((i, j) for i in range(len(stars)) for j in range(i + 1, len(stars))
                 if set(stars[i][1]) & set(stars[j][1]))


def delta_orders(patterns: Sequence[TriplePattern]) -> tuple[tuple[int, ...], ...]:
    """For each pattern ``i``, a join order of all patterns starting with ``i`` (Prop. 5)."""
    stars = star_decomposition(patterns)
    centre = {v: k for k, (v, _) in enumerate(stars)}
    neighbours: dict[int, list[int]] = {k: [] for k in range(len(stars))}
    for a, b in overlap_edges(stars):
        neighbours[a].append(b)
        neighbours[b].append(a)
    orders = []
    for i, pattern in enumerate(patterns):
        order = dict.fromkeys([i])
        start = [centre[v] for v in pattern.variables()]
        seen, queue = set(start), deque(start)
        while queue:
            star = queue.popleft()
            order.update(dict.fromkeys(stars[star][1]))
            for nxt in neighbours[star]:
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        order.update(dict.fromkeys(range(len(patterns))))      # a ground part: the rest, in order
        orders.append(tuple(order))
    return tuple(orders)


#: A pattern's rows and the distinct values of each of its variables, as a backfill reads them.
PatternSize = tuple[int, Mapping[str, int]]


def cheapest_order(orders: Sequence[tuple[int, ...]], sizes: Sequence[PatternSize]) -> tuple[int, ...]:
    """Of ``orders`` (each joining every pattern), the one whose joins build the fewest rows in all,
    as estimated from ``sizes`` (per pattern): a join of ``R`` and ``S`` on variables ``X`` gives
    ``|R| |S| / prod(max(V(R, x), V(S, x)))`` rows, a variable keeping the fewer distinct values of
    the two. The first order wins a tie. A backfill joins whole views, where a bad order costs: the
    4-cycle's first order joined 212,815 (student, department, course) rows with a department's
    professors, 7.6M rows, before the courses they teach cut them back to 220,000."""
    def cost(order: tuple[int, ...]) -> float:
        rows, distinct = float(sizes[order[0]][0]), dict(sizes[order[0]][1])
        built = 0.0
        for j in order[1:]:
            more, values = sizes[j]
            shared = [x for x in values if x in distinct]
            divisor = 1.0
            for x in shared:
                divisor *= max(distinct[x], values[x], 1)
            rows = rows * more / divisor
            for x, n in values.items():
                distinct[x] = min(distinct[x], n) if x in distinct else n
            distinct = {x: min(n, max(rows, 1.0)) for x, n in distinct.items()}
            built += rows
        return built
    return min(orders, key=cost)
