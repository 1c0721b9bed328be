"""A path step's edges: the product graph's moves, loaded only around the vertices the walks visit.

A walk round finds the edges of the vertices it reached in each edge view by subject and by object
(:class:`EdgeIndexes`), through an index of the view's column (:mod:`pipelines.engine.lookup`): a
hash lookup per vertex and a gather of their rows, so a round costs what it reads rather than a
filter of the whole graph (which every round of every path view used to pay, and which grew with
the graph however small the batch). A run keeps the indexes of the views it holds from batch to
batch (:mod:`pipelines.engine.held`), so a batch no longer indexes the views it reads either. The
edges are those of the graph *after* the step: the view's rows as the step started, without the
step's deleted edges, with its inserted ones.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.automata import BACKWARD, FORWARD
from views.path_views import ALL

from .lookup import Find

#: A path's edges as Arrow triples with their event time (a windowed query's ``t`` term, or '').
TRIPLE_SCHEMA = pa.schema([(c, pa.string()) for c in ("s", "p", "o", "t")])
#: The time of an edge without one (outside windows, or only in a background graph): never expires.
FOREVER = 2 ** 62

Triple = tuple[str, str, str, str]       # (s, p, o, t)
Move = tuple[tuple[str, str], str, int]  # (symbol, vertex moved to, edge time)


def time_of(term: str) -> int:
    """An edge's time in epoch ms from its ``t`` term (``"ms"^^xsd:integer``); :data:`FOREVER` for ''."""
    return int(term[1:term.index('"', 1)]) if term else FOREVER


def triples(predicate: str, rows: pa.Table, stamped: bool) -> pa.Table:
    """Edge view rows as (s, p, o, t): a predicate's view holds (s, o), the view of every triple
    (s, p, o), and a stamped view the time after them."""
    n = rows.num_rows
    spo = [rows["v0"], rows["v1"], rows["v2"]] if predicate == ALL else \
        [rows["v0"], pa.repeat(pa.scalar(predicate, pa.string()), n), rows["v1"]]
    time = rows["v3" if predicate == ALL else "v2"] if stamped else pa.repeat(pa.scalar("", pa.string()), n)
    return pa.Table.from_arrays([*spo, time], schema=TRIPLE_SCHEMA)


def tuples(rows: pa.Table) -> list[Triple]:
    return list(zip(*(rows[c].to_pylist() for c in TRIPLE_SCHEMA.names)))


class ViewIndex:
    """One edge view's rows as the step started, as triples, found by subject or object."""

    def __init__(self, predicate: str, view: str, read: Callable[[str], pa.Table], find: Find, stamped: bool) -> None:
        self.predicate, self.view, self.stamped = predicate, view, stamped
        self._read, self._find = read, find
        self._s, self._o = ("v0", "v2") if predicate == ALL else ("v0", "v1")

    @functools.cached_property
    def triples(self) -> pa.Table:
        """Every edge of the view (a windowed path's expiry check reads them all)."""
        return triples(self.predicate, self._read(self.view), self.stamped)

    def around(self, wanted: pa.Array, from_s: bool, from_o: bool) -> list[Triple]:
        """The triples whose subject (``from_s``) or object (``from_o``) is in ``wanted``."""
        parts = [self._find(self.view, self._s, wanted)] if from_s else []
        if from_o:
            rows = self._find(self.view, self._o, wanted)
            parts.append(rows.filter(pc.invert(pc.is_in(rows[self._s], value_set=wanted))) if from_s else rows)
        rows = [part for part in parts if part.num_rows]
        return tuples(triples(self.predicate, pa.concat_tables(rows), self.stamped)) if rows else []


def members(find: Find, view: str, change: pa.Table | None, columns: tuple[str, ...],
             candidates: set[str]) -> dict[str, tuple[bool, bool]]:
    """Whether each of ``candidates`` and each value ``change`` touches appears in ``columns`` of
    ``view`` before and after ``change``: occurrences counted, the change's multiplicities added
    (in Arrow: a batch touches thousands of nodes, each with its occurrences; the view's rows are
    looked up by those values, not scanned: the view of every triple is the whole graph)."""
    changes = [] if change is None else [(change[c], change[MULT]) for c in columns]
    touched = pc.unique(pa.chunked_array([pa.array(sorted(candidates), pa.string())]
                                         + [chunk for values, _ in changes for chunk in values.chunks], pa.string()))
    if not len(touched):
        return {}
    found = [find(view, c, touched, [c])[c] for c in columns]
    parts = [pa.table({"x": values, "b": pa.repeat(1, len(values)), "d": pa.repeat(0, len(values))})
             for values in found]
    parts += [pa.table({"x": values, "b": pa.repeat(0, len(values)), "d": pc.cast(mults, pa.int64())})
              for values, mults in changes]
    counted = pa.concat_tables([t.cast(pa.schema([("x", pa.string()), ("b", pa.int64()), ("d", pa.int64())]))
                                for t in parts]).group_by("x").aggregate([("b", "sum"), ("d", "sum")])
    counts = dict(zip(counted["x"].to_pylist(), zip(counted["b_sum"].to_pylist(), counted["d_sum"].to_pylist())))
    return {x: (counts[x][0] > 0, sum(counts[x]) > 0) if x in counts else (False, False)
            for x in touched.to_pylist()}


class EdgeIndexes:
    """What the path views of a batch share: the :class:`ViewIndex` of each edge view it reads
    (the eleven paths of a benchmark share four views), and the membership of the nodes its change
    touches (:meth:`members`); ``find`` gives a view's rows by a column's values (a run's index of
    the views it holds, :mod:`pipelines.engine.held`)."""

    def __init__(self, read: Callable[[str], pa.Table], find: Find) -> None:
        self.read, self.find = read, find
        self._built: dict[tuple[str, str, bool], ViewIndex] = {}
        self._members: dict[tuple, dict[str, tuple[bool, bool]]] = {}

    def members(self, view: str, change: pa.Table | None, columns: tuple[str, ...],
                candidates: set[str]) -> dict[str, tuple[bool, bool]]:
        """:func:`members`, found once for the batch: every path view with a zero-length match
        asks it of the view of every triple, for the same nodes (a popular node's many triples
        were looked up once per path view: 0.4 s of a 3.6 s batch of 10,000 edges at 1M edges)."""
        key = (view, columns, frozenset(candidates))
        if key not in self._members:
            self._members[key] = members(self.find, view, change, columns, candidates)
        return self._members[key]

    def get(self, predicate: str, view: str, stamped: bool) -> ViewIndex:
        key = (predicate, view, stamped)
        if key not in self._built:
            self._built[key] = ViewIndex(predicate, view, self.read, self.find, stamped)
        return self._built[key]


@dataclass
class Edges:
    """A path's edges after the step, as product-graph adjacency over automaton symbols. ``out[x]``
    is complete for every vertex ``x`` loaded so far (for the automaton's directions: a walk skips
    the others), in the order the edges were read (view rows, then inserted edges). ``first[x]``
    holds only the moves from ``x`` that a step's walk must start with (semi-naively): those of
    the inserted edges, and those into the vertices of removed nodes once :meth:`enter` found them;
    every other edge from a tree node already led into the tree before the step."""

    views: list[ViewIndex]
    inserted: list[Triple]
    deleted: set[Triple]
    symbol: Callable[[str], str | None]
    directions: set[str]                                # the directions the automaton moves in
    out: dict[str, list[Move]] = field(default_factory=lambda: defaultdict(list))
    loaded: set[str] = field(default_factory=set)
    first: dict[str, list[Move]] = field(default_factory=lambda: defaultdict(list))
    _inserted_at: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def __post_init__(self) -> None:
        for i, (s, _, o, _) in enumerate(self.inserted):
            self._inserted_at[s].append(i)
            if o != s:
                self._inserted_at[o].append(i)
        self._add_moves(self.first, self.inserted)

    def _add_moves(self, moves: dict[str, list[Move]], edges: list[Triple],
                   out_of: set[str] | None = None, into: set[str] | None = None) -> None:
        """Add to ``moves`` the moves of ``edges`` in the automaton's directions (only those out
        of a vertex of ``out_of``, or into one of ``into``, when given)."""
        forward, backward = FORWARD in self.directions, BACKWARD in self.directions
        # each predicate's two symbols made once: a round adds hundreds of thousands of moves
        symbols: dict[str, tuple[tuple[str, str], tuple[str, str]] | None] = {}
        for s, p, o, t in edges:
            if p not in symbols:
                key = self.symbol(p)
                symbols[p] = None if key is None else ((key, FORWARD), (key, BACKWARD))
            pair = symbols[p]
            if pair is None:
                continue
            ts = time_of(t)
            if forward and (out_of is None or s in out_of) and (into is None or o in into):
                moves[s].append((pair[0], o, ts))
            if backward and (out_of is None or o in out_of) and (into is None or s in into):
                moves[o].append((pair[1], s, ts))

    def _around(self, vertices: set[str], from_s: bool, from_o: bool, inserted: bool = True) -> list[Triple]:
        """The edges after the step with an end in ``vertices`` (subject, object or either),
        without the inserted ones unless ``inserted``."""
        wanted = pa.array(sorted(vertices), pa.string())
        rows = [e for view in self.views for e in view.around(wanted, from_s, from_o)
                if not self.deleted or e not in self.deleted]
        if not inserted:
            return rows
        positions = sorted({i for v in vertices for i in self._inserted_at.get(v, ())})
        return rows + [self.inserted[i] for i in positions
                       if (from_s and self.inserted[i][0] in vertices) or (from_o and self.inserted[i][2] in vertices)]

    def load(self, vertices: set[str]) -> set[str]:
        """Complete the adjacency of ``vertices``; returns those it loaded (the others were)."""
        new = vertices - self.loaded
        if new:
            self.loaded |= new
            self._add_moves(self.out, self._around(new, FORWARD in self.directions, BACKWARD in self.directions),
                            out_of=new)
        return new

    def load_reachable(self, vertices: set[str]) -> None:
        """Load ``vertices`` and everything their moves reach, a breadth-first round at a time
        (one lookup in the indexes per round)."""
        while vertices:
            vertices = {target for vertex in self.load(vertices) for _, target, _ in self.out.get(vertex, ())}

    def enter(self, vertices: set[str]) -> dict[str, set[str]]:
        """Add to :attr:`first` the moves of the graph after the step into ``vertices`` (the
        vertices of removed nodes, where a walk may re-enter them), and return, for each of them,
        the vertices those moves come from (itself through a self-loop). Read on demand, for the
        removed nodes only, all in one lookup (a popular node's many edges stay unread
        otherwise). The inserted edges are left out: their moves are in :attr:`first` already, and
        a walk starts from their sources anyway."""
        sources: dict[str, set[str]] = {v: set() for v in vertices}
        if not vertices:
            return sources
        entering: dict[str, list[Move]] = defaultdict(list)
        self._add_moves(entering, self._around(vertices, True, True, inserted=False), into=vertices)
        for vertex, moves in entering.items():
            for _, target, _ in moves:
                sources[target].add(vertex)
            self.first[vertex] += moves
        return sources
