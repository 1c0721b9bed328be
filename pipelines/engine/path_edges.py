"""A path step's edges: the product graph's moves, as integer-coded arrays, loaded only around the
vertices the walks visit.

A walk round finds the edges of the vertices it reached in each edge view by subject and by object
(:class:`EdgeIndexes`), through an index of the view's column (:mod:`pipelines.engine.lookup`): a
hash lookup per vertex and a gather of their rows, so a round costs what it reads rather than a
filter of the whole graph (which every round of every path view used to pay, and which grew with
the graph however small the batch). A run keeps the indexes of the views it holds from batch to
batch (:mod:`pipelines.engine.held`), so a batch no longer indexes the views it reads either. The
edges are those of the graph *after* the step: the view's rows as the step started, without the
step's deleted edges, with its inserted ones.

The step numbers the vertices it meets (:class:`Terms`) and keeps each vertex's moves as arrays of
(symbol, target, time) (:class:`Adjacency`): a walk round is then a gather of the moves of its
whole frontier and a few array operations (:mod:`.path_forest`), where a Python tuple per edge and
per move cost about a microsecond each (most of the path operator's time at 1M edges).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.automata import BACKWARD, FORWARD, Symbol
from views.path_views import ALL

from ..sorted_sets import distinct, isin
from ..string_index import HashTable, same_values, string_hashes
from .lookup import Find, counted
from .threads import Memo

if TYPE_CHECKING:
    from .path_graph import CodedView

#: A path's edges as Arrow triples with their event time (a windowed query's ``t`` term, or '').
TRIPLE_SCHEMA = pa.schema([(c, pa.string()) for c in ("s", "p", "o", "t")])
#: The time of an edge without one (outside windows, or only in a background graph): never expires.
FOREVER = 2 ** 62


def triples(predicate: str, rows: pa.Table, stamped: bool) -> pa.Table:
    """Edge view rows as (s, p, o, t): a predicate's view holds (s, o), the view of every triple
    (s, p, o), and a stamped view the time after them."""
    n = rows.num_rows
    spo = [rows["v0"], rows["v1"], rows["v2"]] if predicate == ALL else \
        [rows["v0"], pa.repeat(pa.scalar(predicate, pa.string()), n), rows["v1"]]
    time = rows["v3" if predicate == ALL else "v2"] if stamped else pa.repeat(pa.scalar("", pa.string()), n)
    return pa.Table.from_arrays([*spo, time], schema=TRIPLE_SCHEMA)


def view_columns(predicate: str) -> tuple[str, str, str | None]:
    """A view's (subject, object, predicate) columns: a predicate's view holds (s, o), the view of
    every triple (s, p, o)."""
    return ("v0", "v2", "v1") if predicate == ALL else ("v0", "v1", None)


class CodedViews(Protocol):
    """The edge views a run keeps coded (:mod:`.path_graph`), at the version a batch reads: the
    run's numbering of their terms, and a view's coded edges (None when it is not kept so)."""

    numbering: "Terms"

    def view(self, view: str, predicate: str) -> "CodedView | None": ...

    def number(self, view: str, predicate: str, change: pa.Table) -> None:
        """Number the terms of the batch's ``change`` of ``view`` (before the walks start)."""
        ...

    def change(self, view: str) -> dict[str, np.ndarray] | None:
        """The run's numbers of the terms of the batch's change of ``view``, by column."""
        ...


class ViewIndex:
    """One edge view's rows as the step started, as triples, found by subject or object; and as
    the run's coded edges, when it keeps the view so (``coded``)."""

    def __init__(self, predicate: str, view: str, read: Callable[[str], pa.Table], find: Find, stamped: bool,
                 coded: "CodedView | None" = None) -> None:
        self.predicate, self.view, self.stamped, self.coded = predicate, view, stamped, coded
        self._read, self._find = read, find
        self._s, self._o, _ = view_columns(predicate)

    @functools.cached_property
    def triples(self) -> pa.Table:
        """Every edge of the view (a windowed path's expiry check reads them all)."""
        return triples(self.predicate, self._read(self.view), self.stamped)

    def around(self, wanted: pa.Array, from_s: bool, from_o: bool) -> pa.Table:
        """The triples whose subject (``from_s``) or object (``from_o``) is in ``wanted``."""
        parts = [self._find(self.view, {self._s: wanted})] if from_s else []
        if from_o:
            rows = self._find(self.view, {self._o: wanted})
            parts.append(rows.filter(pc.invert(pc.is_in(rows[self._s], value_set=wanted))) if from_s else rows)
        rows = [part for part in parts if part.num_rows]
        if not rows:
            return TRIPLE_SCHEMA.empty_table()
        return triples(self.predicate, pa.concat_tables(rows), self.stamped)


class Membership:
    """Whether each of some values (``touched``, distinct) was and is in a view's columns, before
    and after a step; a value not touched is in both (it has a tree). Made once for a batch and
    asked by every path view with a zero-length match, so what they ask is worked out once and
    in arrays: a Python loop over the batch's 21,000 touched nodes per path view cost a tenth of
    the path steps at 1M edges."""

    def __init__(self, touched: pa.Array, was: np.ndarray, now: np.ndarray) -> None:
        self.touched, self.was, self.now = touched, was, now

    @functools.cached_property
    def flipped(self) -> pa.Array:
        """The touched values that came or went, in the order touched."""
        return self.touched.filter(pa.array(self.was != self.now))

    @functools.cached_property
    def changed(self) -> frozenset[str]:
        """:attr:`flipped` as a set."""
        return frozenset(self.flipped.to_pylist())

    @functools.cached_property
    def present(self) -> frozenset[str]:
        """The touched values in the view before or after."""
        return frozenset(self.touched.filter(pa.array(self.was | self.now)).to_pylist())

    def of(self, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Whether each of ``values`` was, and is, in the view."""
        at = pc.index_in(values, value_set=self.touched)
        known = np.asarray(at.is_valid())
        where = np.asarray(at.fill_null(0))
        out = []
        for side in (self.was, self.now):
            member = np.ones(len(values), bool)
            member[known] = side[where[known]]
            out.append(member)
        return out[0], out[1]


#: The membership of no value: every value is in the view before and after.
NO_MEMBERS = Membership(pa.array([], pa.string()), np.zeros(0, bool), np.zeros(0, bool))


def members(find: Find, view: str, change: pa.Table | None, columns: tuple[str, ...],
            candidates: set[str]) -> Membership:
    """Whether each of ``candidates`` and each value ``change`` touches appears in ``columns`` of
    ``view`` before and after ``change``: the view's rows holding each value counted through its
    index (:meth:`.lookup.Find.count`: the view of every triple is the whole graph, and gathering a
    popular node's rows to count them cost most of this), the change's multiplicities added."""
    changes = [] if change is None else [(change[c], change[MULT]) for c in columns]
    touched = pc.unique(pa.chunked_array([pa.array(sorted(candidates), pa.string())]
                                         + [chunk for values, _ in changes for chunk in values.chunks], pa.string()))
    touched = touched.combine_chunks() if isinstance(touched, pa.ChunkedArray) else touched
    if not len(touched):
        return Membership(touched, np.zeros(0, bool), np.zeros(0, bool))
    before = sum(find.count(view, c, touched) for c in columns)
    moved = sum((counted(values, touched, mults) for values, mults in changes), np.zeros(len(touched), np.int64))
    return Membership(touched, before > 0, before + moved > 0)


def coded_members(coded: "CodedView", change: pa.Table, numbered: dict[str, np.ndarray]) -> Membership:
    """:func:`members` of the nodes a change of the view of every triple touches, from the run's
    coded view (``numbered``: the run's numbers of the change's terms): the nodes' edges counted
    by an integer gather, no string looked up."""
    ends = [numbered["v0"], numbered["v2"]]
    touched = distinct(np.concatenate(ends))
    before = coded.degrees(touched)
    mults = change[MULT].to_numpy(zero_copy_only=False)
    moved = sum((np.bincount(np.searchsorted(touched, end), weights=mults, minlength=len(touched)) for end in ends),
                np.zeros(len(touched))).astype(np.int64)
    return Membership(coded.terms.decode(touched), before > 0, before + moved > 0)


class EdgeIndexes:
    """What the path views of a batch share: the :class:`ViewIndex` of each edge view it reads
    (the eleven paths of a benchmark share four views), and the membership of the nodes its change
    touches (:meth:`members`); ``find`` gives a view's rows by a column's values (a run's index of
    the views it holds, :mod:`pipelines.engine.held`)."""

    def __init__(self, read: Callable[[str], pa.Table], find: Find, coded: CodedViews | None = None) -> None:
        self.read, self.find, self.coded = read, find, coded
        self._built: Memo[tuple[str, str, bool], ViewIndex] = Memo()
        self._members: Memo[tuple, Membership] = Memo()     # (the walks run on threads)

    def members(self, view: str, change: pa.Table | None, columns: tuple[str, ...],
                candidates: set[str]) -> Membership:
        """:func:`members`, found once for the batch: every path view with a zero-length match
        asks it of the view of every triple, for the same nodes (a popular node's many triples
        were looked up once per path view: 0.4 s of a 3.6 s batch of 10,000 edges at 1M edges).
        From the run's coded view of every triple when it keeps it (:meth:`coded_members`)."""
        def found() -> Membership:
            # (a view numbered for the batch was coded before the walks: nothing is built here)
            numbered = None if self.coded is None else self.coded.change(view)
            if columns == ("v0", "v2") and not candidates and numbered is not None and change is not None:
                return coded_members(self.coded.view(view, ALL), change, numbered)
            return members(self.find, view, change, columns, candidates)
        return self._members.get((view, columns, frozenset(candidates)), found)

    def get(self, predicate: str, view: str, stamped: bool) -> ViewIndex:
        def built() -> ViewIndex:
            coded = None if stamped or self.coded is None else self.coded.view(view, predicate)
            return ViewIndex(predicate, view, self.read, self.find, stamped, coded)
        return self._built.get((predicate, view, stamped), built)

    def terms(self, views: list[ViewIndex]) -> "Terms":
        """A step's numbering of its vertices: beside the run's, when the run keeps every one of
        the step's edge ``views`` coded."""
        coded = bool(views) and all(v.coded is not None for v in views)
        return Terms(self.coded.numbering if coded else None)


def triple_keys(rows: pa.Table) -> pa.ChunkedArray:
    """One string per timed triple (terms never hold a newline: N-Triples escapes it)."""
    return pc.binary_join_element_wise(rows["s"], rows["p"], rows["o"], rows["t"], "\n")


def times(terms: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The time in epoch ms of each ``t`` term (``"ms"^^xsd:integer``), :data:`FOREVER` for '', in
    Arrow (split at its quotes: a regular expression is compiled at every call, which small steps
    make many of)."""
    if not len(terms) or not pc.max(pc.utf8_length(terms)).as_py():
        return np.full(len(terms), FOREVER, np.int64)
    digits = pc.list_element(pc.split_pattern(pc.binary_join_element_wise(terms, '""', ""), '"', max_splits=2), 1)
    digits = pc.if_else(pc.equal(digits, ""), pa.scalar(None, pa.string()), digits)
    return pc.fill_null(pc.cast(digits, pa.int64()), FOREVER).to_numpy(zero_copy_only=False)


class Terms:
    """The vertices a step meets, numbered in the order it meets them: its walks, trees and moves
    are arrays of these numbers, and strings come back only for the rows it writes. The numbered
    strings are found by hash (:class:`~pipelines.string_index.HashTable`, probed in C), not in a
    ``dict``: a Python lookup per value held the GIL, which the batch's other walks and writes
    wait on (a sixth of a 10,000-edge batch's path steps at 1M edges).

    A step of a run that holds its edge views coded (:mod:`.path_graph`) numbers its vertices
    beside the run's own numbering, ``graph``: each number keeps the run's number of its string
    (:meth:`graph_codes`), and the run's numbers of the edges it loads are numbered here without
    their strings being hashed or compared (:meth:`adopt`)."""

    def __init__(self, graph: "Terms | None" = None) -> None:
        self._strings: pa.Array = pa.array([], pa.string())     # by number, up to those in _new
        self._new: list[pa.Array] = []                          # the strings numbered since, in order
        self._count = 0
        self._hashes = np.zeros(0, np.uint64)                   # by number
        self._table = HashTable(np.zeros(0, np.uint64), np.zeros(0, np.int64))    # number by hash
        self._graph = graph
        self._in_graph = np.zeros(0, np.int64)      # by number, the graph's number of its string (-1: none)
        self._of_graph = np.zeros(0, np.int64)      # by the graph's number, this one's (-1: not numbered)

    def __len__(self) -> int:
        return self._count

    @property
    def graph(self) -> "Terms | None":
        """The run's numbering this one maps to (:meth:`adopt`), if any."""
        return self._graph

    def encode(self, values: pa.Array | pa.ChunkedArray | list[str]) -> np.ndarray:
        """The numbers of ``values``, new ones numbered from the next free one (in the order of
        their first occurrence). Each distinct value is hashed and looked up once."""
        if isinstance(values, list):
            values = pa.array(values, pa.string())
        values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if not len(values):
            return np.zeros(0, np.int64)
        encoded = pc.dictionary_encode(values, null_encoding="encode")     # a null numbered as before
        return self._numbers(encoded.dictionary.cast(pa.string()))[encoded.indices.to_numpy(zero_copy_only=False)]

    def _numbers(self, values: pa.Array) -> np.ndarray:
        """The numbers of ``values`` (distinct), those not numbered yet numbered in their order."""
        hashes = string_hashes(values)
        numbers = self.find(values, hashes)
        fresh = np.flatnonzero(numbers < 0)
        if len(fresh):
            in_graph = None if self._graph is None else self._graph.find(values.take(pa.array(fresh)), hashes[fresh])
            numbers[fresh] = self._number(values.take(pa.array(fresh)), hashes[fresh], in_graph)
        return numbers

    def find(self, values: pa.Array, hashes: np.ndarray) -> np.ndarray:
        """The numbers of ``values`` (distinct, their ``hashes`` given), -1 for those not numbered;
        nothing is numbered (a run's numbering is read by a step's threads at once)."""
        numbers = np.full(len(values), -1, np.int64)
        if self._count:
            rows, owners, _ = self._table.find(hashes)
            same = self._holds(rows, values.take(pa.array(owners)))
            numbers[owners[same]] = rows[same]
        return numbers

    def _number(self, values: pa.Array, hashes: np.ndarray, in_graph: np.ndarray | None) -> np.ndarray:
        """Number ``values`` (distinct, none numbered yet) in their order; ``in_graph`` their
        numbers in the graph's numbering, when there is one."""
        numbers = self._count + np.arange(len(values))
        self._table = self._table.rebuilt(None, len(values))
        self._table.insert(hashes, numbers)
        self._new.append(values)
        end = self._count + len(values)
        self._hashes = grown(self._hashes, end, 0)
        self._hashes[self._count:end] = hashes
        if in_graph is not None:
            self._in_graph = grown(self._in_graph, end, -1)
            self._in_graph[self._count:end] = in_graph
            known = in_graph >= 0
            self._of_graph = grown(self._of_graph, len(self._graph), -1)
            self._of_graph[in_graph[known]] = numbers[known]
        self._count += len(values)
        return numbers

    def adopt(self, codes: np.ndarray) -> np.ndarray:
        """The numbers here of the graph's numbers ``codes``, those not numbered yet numbered in
        the order they first occur: their strings are the graph's, never hashed or compared again
        (a string numbered here is one the graph numbered, or not in it at all)."""
        graph = self._graph
        self._of_graph = grown(self._of_graph, len(graph), -1)
        numbers = self._of_graph[codes]
        missing = numbers < 0
        if missing.any():
            new, first = np.unique(codes[missing], return_index=True)
            new = new[np.argsort(first, kind="stable")]
            self._number(graph.decode(new), graph._hashes[new], new)
            numbers = self._of_graph[codes]
        return numbers

    def graph_codes(self, numbers: np.ndarray) -> np.ndarray:
        """The graph's number of the string of each of ``numbers`` (-1: not in the graph)."""
        return self._in_graph[numbers]

    def _holds(self, numbers: np.ndarray, wanted: pa.Array) -> np.ndarray:
        """Whether the string numbered each of ``numbers`` is the one beside it in ``wanted``,
        read from the arrays the strings were kept in as they were numbered: joining every
        string numbered so far at each call (:meth:`decode` does, for a walk round) cost more
        than the dict did."""
        chunks = [self._strings, *self._new]
        starts = np.cumsum([0, *map(len, chunks)])
        which = np.searchsorted(starts, numbers, side="right") - 1
        order = np.argsort(which, kind="stable")
        bounds = np.searchsorted(which[order], np.arange(len(chunks) + 1))
        same = np.zeros(len(numbers), bool)
        for c in np.flatnonzero(np.diff(bounds)):
            at = order[bounds[c]:bounds[c + 1]]
            same[at] = same_values(chunks[c].take(pa.array(numbers[at] - starts[c])), wanted.take(pa.array(at)))
        return same

    def settle(self) -> None:
        """Join the strings numbered so far into one array, so that :meth:`decode` only reads
        (a run's numbering is decoded by a step's threads at once)."""
        if self._new:
            self._strings = pa.concat_arrays([self._strings, *self._new])
            self._new = []

    def decode(self, codes: np.ndarray) -> pa.Array:
        """The strings numbered ``codes``."""
        if not len(codes):
            return pa.array([], pa.string())
        self.settle()
        return self._strings.take(pa.array(codes, pa.int64()))

    def decode_list(self, codes: Iterable[int]) -> list[str]:
        return self.decode(np.fromiter(codes, np.int64)).to_pylist()


def grown(array: np.ndarray, size: int, fill: int) -> np.ndarray:
    """``array`` extended with ``fill`` to at least ``size`` entries (doubling, so that growing
    one vertex at a time stays linear)."""
    if len(array) >= size:
        return array
    out = np.full(max(size, 2 * len(array), 64), fill, array.dtype)
    out[:len(array)] = array
    return out


class Adjacency:
    """Moves by the vertex they leave: each vertex's moves (symbol, target, time) contiguous in
    arrays (CSR), added a set of vertices at a time; a vertex never added has none."""

    def __init__(self) -> None:
        self.begin = np.zeros(0, np.int64)
        self.size = np.zeros(0, np.int64)
        self.added = np.zeros(0, bool)
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._total = 0
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, vertices: np.ndarray, src: np.ndarray, sym: np.ndarray, dst: np.ndarray, ts: np.ndarray) -> None:
        """Add every move of ``vertices`` (distinct, none added before): those of ``src``."""
        top = int(max(vertices.max(initial=-1), src.max(initial=-1))) + 1
        self.begin, self.size = grown(self.begin, top, 0), grown(self.size, top, 0)
        self.added = grown(self.added, top, False)
        order = np.argsort(src, kind="stable")
        src = src[order]
        uniq, first, counts = np.unique(src, return_index=True, return_counts=True)
        self.begin[uniq], self.size[uniq] = self._total + first, counts
        self.added[vertices] = True
        self._parts.append((sym[order], dst[order], ts[order]))
        self._total += len(src)
        self._arrays = None

    def sources(self) -> np.ndarray:
        """The vertices with a move, in order."""
        return np.flatnonzero(self.size)

    def loaded(self, vertices: np.ndarray) -> np.ndarray:
        """Which of ``vertices`` were added."""
        inside = vertices < len(self.added)
        out = np.zeros(len(vertices), bool)
        out[inside] = self.added[vertices[inside]]
        return out

    def gather(self, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The moves of each of ``vertices``: (which vertex, by position in ``vertices``; symbol;
        target; time)."""
        if self._arrays is None:
            parts = self._parts or [(np.zeros(0, np.int64),) * 3]
            self._arrays = tuple(np.concatenate(c) for c in zip(*parts))     # type: ignore[assignment]
            self._parts = [self._arrays]                                        # type: ignore[list-item]
        inside = vertices < len(self.size)
        n = np.zeros(len(vertices), np.int64)
        n[inside] = self.size[vertices[inside]]
        start = np.zeros(len(vertices), np.int64)
        start[inside] = self.begin[vertices[inside]]
        which = np.repeat(np.arange(len(vertices)), n)
        at = np.repeat(start - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
        sym, dst, ts = self._arrays
        return which, sym[at], dst[at], ts[at]


class Edges:
    """A path's edges after the step, as product-graph moves over the automaton's ``symbols``
    (indexes into it), between vertices numbered by ``terms``. :attr:`out` holds every move of
    each vertex loaded so far (in the automaton's directions: a walk skips the others);
    :attr:`first` only the moves a step's walk must start with (semi-naively): those of the
    inserted edges, and those into the vertices of removed nodes once :meth:`enter` found them;
    every other edge from a tree node already led into the tree before the step."""

    def __init__(self, views: list[ViewIndex], inserted: pa.Table, deleted: pa.Table,
                 symbol: Callable[[str], str | None], symbols: Iterable[Symbol], terms: Terms,
                 inserted_ends: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.views, self.symbol, self.terms = views, symbol, terms
        self.symbols = list(symbols)
        self._index = {sym: i for i, sym in enumerate(self.symbols)}
        self.directions = {d for _, d in self.symbols}
        self.inserted, self.deleted = inserted, deleted
        self._deleted_keys = triple_keys(deleted) if deleted.num_rows else None
        # the run's coded edges, when it keeps every one of these views so (and the step's
        # numbering is beside the run's): loads are then integer gathers (:meth:`_coded_moves`)
        self.coded = terms.graph is not None and all(v.coded is not None for v in views)
        self._gone: dict[str, np.ndarray] | None = None
        self.out = Adjacency()
        # (source, symbol, target, time), as :meth:`moves`; the ends numbered already, if given
        self.inserted_moves = self.moves(inserted, ends=inserted_ends)
        self._first = self.inserted_moves
        self.first = self._adjacency(self._first)

    def moves(self, rows: pa.Table, out_of: np.ndarray | None = None, into: np.ndarray | None = None,
              ends: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
        """The moves of the edges ``rows`` in the automaton's directions, as arrays (source,
        symbol, target, time): only those out of a vertex of ``out_of``, or into one of ``into``
        (masks by vertex number), when given; ``ends`` the step's numbers of the rows' subjects
        and objects, when numbered already."""
        if not rows.num_rows:
            return (np.zeros(0, np.int64),) * 4
        s, o = ends if ends is not None else (self.terms.encode(rows["s"]), self.terms.encode(rows["o"]))
        ts = times(rows["t"])
        encoded = pc.dictionary_encode(rows["p"]).combine_chunks()
        predicates = encoded.dictionary.to_pylist()
        which = encoded.indices.to_numpy(zero_copy_only=False)
        parts = []
        for direction, src, dst in ((FORWARD, s, o), (BACKWARD, o, s)):
            if direction not in self.directions:
                continue
            named = np.array([self._symbol_index(p, direction) for p in predicates] or [-1], np.int64)
            sym = named[which] if len(which) else np.zeros(0, np.int64)
            keep = sym >= 0
            if out_of is not None:
                keep &= _member(src, out_of)
            if into is not None:
                keep &= _member(dst, into)
            parts.append((src[keep], sym[keep], dst[keep], ts[keep]))
        if not parts:
            return (np.zeros(0, np.int64),) * 4
        return tuple(np.concatenate(c) for c in zip(*parts))

    def _symbol_index(self, predicate: str, direction: str) -> int:
        """The index among the automaton's symbols of ``predicate`` taken in ``direction`` (-1: none)."""
        key = self.symbol(predicate)
        return -1 if key is None else self._index.get((key, direction), -1)

    def _adjacency(self, moves: tuple[np.ndarray, ...]) -> Adjacency:
        adjacency = Adjacency()
        src = moves[0]
        adjacency.add(distinct(src), *moves)
        return adjacency

    def _around(self, vertices: np.ndarray, from_s: bool, from_o: bool, inserted: bool = True) -> pa.Table:
        """The edges after the step with an end among ``vertices`` (subject, object or either),
        without the inserted ones unless ``inserted``."""
        wanted = self.terms.decode(vertices)
        parts = [view.around(wanted, from_s, from_o) for view in self.views]
        rows = pa.concat_tables([TRIPLE_SCHEMA.empty_table(), *parts])
        if self._deleted_keys is not None and rows.num_rows:
            rows = rows.filter(pc.invert(pc.is_in(triple_keys(rows), value_set=self._deleted_keys)))
        if inserted and self.inserted.num_rows:
            ins = self.inserted
            ends = [pc.is_in(ins[c], value_set=wanted) for c, on in (("s", from_s), ("o", from_o)) if on]
            mask = ends[0] if len(ends) == 1 else pc.or_(*ends)
            rows = pa.concat_tables([rows, ins.filter(mask)])
        return rows

    def load(self, vertices: np.ndarray) -> np.ndarray:
        """Complete the moves of ``vertices``; returns those it loaded (the others were)."""
        if not len(vertices):
            return vertices
        new = distinct(vertices)
        new = new[~self.out.loaded(new)]
        if len(new) and self.coded:
            inserted = self.inserted_moves
            mine = isin(inserted[0], new)
            moves = [self._coded_moves(new, leaving=True), tuple(column[mine] for column in inserted)]
            self.out.add(new, *(np.concatenate(c) for c in zip(*moves)))
        elif len(new):
            rows = self._around(new, FORWARD in self.directions, BACKWARD in self.directions)
            self.out.add(new, *self.moves(rows, out_of=_mask(new, len(self.terms))))
        return new

    def _coded_moves(self, vertices: np.ndarray, leaving: bool) -> tuple[np.ndarray, ...]:
        """The moves, in the automaton's directions, of the graph before the step less its deleted
        edges, that leave ``vertices`` (or enter them), from the run's coded views: each view's
        edges of those vertices gathered by subject or object, their other ends numbered for the
        step from the run's numbers (:meth:`Terms.adopt`). As :meth:`moves` gives them."""
        codes = self.terms.graph_codes(vertices)
        known = codes >= 0                      # (a vertex the run never numbered has no edge)
        vertices, codes = vertices[known], codes[known]
        parts = []
        for direction in (FORWARD, BACKWARD):
            if direction not in self.directions:
                continue
            by_subject = (direction == FORWARD) == leaving
            for view in self.views:
                coded = view.coded
                which, edges = coded.around(codes, by_subject)
                here, other = vertices[which], self.terms.adopt((coded.o if by_subject else coded.s)[edges])
                s, o = (here, other) if by_subject else (other, here)
                sym = self._coded_symbols(view, direction, edges)
                keep = (sym >= 0) & ~self._deleted(view, s, o, edges)
                src, dst = (s, o) if direction == FORWARD else (o, s)
                parts.append((src[keep], sym[keep], dst[keep], np.full(int(keep.sum()), FOREVER, np.int64)))
        if not parts:
            return (np.zeros(0, np.int64),) * 4
        return tuple(np.concatenate(c) for c in zip(*parts))

    def _coded_symbols(self, view: ViewIndex, direction: str, edges: np.ndarray) -> np.ndarray:
        """The automaton symbol of each of a coded view's ``edges`` in ``direction`` (-1: none)."""
        if view.coded.p is None:
            return np.full(len(edges), self._symbol_index(view.predicate, direction), np.int64)
        predicates = view.coded.p[edges]
        kinds = distinct(predicates)
        named = np.array([self._symbol_index(p, direction) for p in self.terms.graph.decode(kinds).to_pylist()],
                         np.int64)
        return named[np.searchsorted(kinds, predicates)] if len(kinds) else np.zeros(0, np.int64)

    def _deleted(self, view: ViewIndex, s: np.ndarray, o: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """Which of a coded view's ``edges`` (s, o: step numbers) the step deletes."""
        if self._deleted_keys is None:
            return np.zeros(len(s), bool)
        if self._gone is None:              # the deleted edges' (s, o) keys by predicate
            d = self.deleted
            keys = _end_keys(self.terms.encode(d["s"]), self.terms.encode(d["o"]))
            predicates = d["p"].to_numpy(zero_copy_only=False)
            self._gone = {p: distinct(keys[predicates == p]) for p in set(predicates.tolist())}
        keys = _end_keys(s, o)
        if view.coded.p is None:
            gone = self._gone.get(view.predicate)
            return np.zeros(len(s), bool) if gone is None else isin(keys, gone)
        out = np.zeros(len(s), bool)
        predicates = view.coded.p[edges]
        kinds = distinct(predicates)
        for code, name in zip(kinds.tolist(), self.terms.graph.decode(kinds).to_pylist()):
            if name in self._gone:
                out |= (predicates == code) & isin(keys, self._gone[name])
        return out

    def load_reachable(self, vertices: np.ndarray) -> None:
        """Load ``vertices`` and everything their moves reach, a breadth-first round at a time
        (one lookup in the indexes per round)."""
        while len(vertices):
            loaded = self.load(vertices)
            vertices = self.out.gather(loaded)[2]

    def moves_of(self, vertex: int) -> list[tuple[int, int, int]]:
        """The (symbol, target, time) moves of a loaded ``vertex``, for the Python walks."""
        _, sym, dst, ts = self.out.gather(np.array([vertex], np.int64))
        return list(zip(sym.tolist(), dst.tolist(), ts.tolist()))

    def enter(self, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add to :attr:`first` the moves of the graph after the step into ``vertices`` (the
        vertices of removed nodes, where a walk may re-enter them), and return them as pairs
        (vertex entered, vertex the move comes from; itself through a self-loop). Read on
        demand, for the removed nodes only, all in one lookup (a popular node's many edges stay
        unread otherwise). The inserted edges are left out: their moves are in :attr:`first`
        already, and a walk starts from their sources anyway."""
        vertices = distinct(vertices)
        if not len(vertices):
            return vertices, vertices
        if self.coded:
            moves = self._coded_moves(vertices, leaving=False)
        else:
            rows = self._around(vertices, True, True, inserted=False)
            moves = self.moves(rows, into=_mask(vertices, len(self.terms)))
        self._first = tuple(np.concatenate(pair) for pair in zip(self._first, moves))
        self.first = self._adjacency(self._first)
        return moves[2], moves[0]


def _end_keys(s: np.ndarray, o: np.ndarray) -> np.ndarray:
    """One integer per (subject, object) pair of step numbers (below 2**27: ``check_bounds``)."""
    return (s << 32) | o


def _mask(vertices: np.ndarray, size: int) -> np.ndarray:
    """A mask over vertex numbers ``0..size-1`` of ``vertices``."""
    mask = np.zeros(size, bool)
    mask[vertices] = True
    return mask


def _member(codes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Which of ``codes`` ``mask`` holds (numbers beyond it are not)."""
    out = np.zeros(len(codes), bool)
    inside = codes < len(mask)
    out[inside] = mask[codes[inside]]
    return out
