"""The edge views a run holds, kept as integer-coded edges between batches: what a path walk
loads around its frontier without looking strings up.

A walk round loads the edges of the vertices it reached (:class:`.path_edges.Edges`). Through
the views' string indexes, that is a hash of each vertex's string, a gather of the view's rows,
and every end of those rows hashed again to number it for the step: at 1M edges a fifth of a
10,000-edge batch's path steps, paid again by every walk that loads the same vertices and at
every batch. A run therefore numbers the terms of the edge views it holds once, in a numbering of
its own (a :class:`.path_edges.Terms` that only grows), keeps each view's edges as arrays of those
numbers, indexed by subject and by object (CSR), and moves them to each new version with the
batch's change to the view (:meth:`CodedView.advanced`). A step maps the numbers of the edges it
loads to its own (:meth:`.path_edges.Terms.adopt`): integers only.

Only the views of a run's queries over the whole graph without event times are kept so (a
windowed path's views are its own state; a timed edge's time would need a column more); a step
without them loads through the string indexes as before. A coded view is used only at the version
of the views table the batch reads, and built from the held rows at that version otherwise (a run's
first batch, or after a commit the run did not make).
"""
from __future__ import annotations

import threading
from typing import Callable, Container, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from ..sorted_sets import distinct, isin
from .merge_on_read import consolidated
from .path_edges import Terms, grown, view_columns

#: The coded edges added since a view was indexed are gone through by every lookup; once they pass
#: this share of the indexed ones, or the dead edges half of all, the view is indexed afresh.
REINDEX = 1 / 4


class CodedView:
    """One edge view's rows at one version of the views table, as the run's numbers of their terms
    (``s``, ``o``, and ``p`` for the view of every triple): the edges indexed by subject and by
    object (each vertex's edges a range of an order), those added since after them, unindexed,
    and a mask of the edges still in the view."""

    def __init__(self, terms: Terms, predicate: str, rows: pa.Table, version: int) -> None:
        self.terms, self.predicate, self.version = terms, predicate, version
        s, o, p = view_columns(predicate)
        self.s, self.o = terms.encode(rows[s]), terms.encode(rows[o])
        self.p = None if p is None else terms.encode(rows[p])
        terms.settle()
        self.n = len(self.s)                    # the edges (the arrays have room for more)
        self.live = np.ones(self.n, bool)
        self.dead = 0
        self._index()

    def _index(self) -> None:
        """Index every edge (the dead ones dropped first, once they are half of them)."""
        if 2 * self.dead > self.n:
            keep = np.flatnonzero(self.live[:self.n])
            self.s, self.o = self.s[keep], self.o[keep]
            self.p = None if self.p is None else self.p[keep]
            self.n, self.dead = len(keep), 0
            self.live = np.ones(self.n, bool)
        self.indexed = self.n
        self._by = {column: _ranges(ends[:self.n], len(self.terms)) for column, ends in (("s", self.s), ("o", self.o))}

    def __len__(self) -> int:
        return self.n

    def around(self, codes: np.ndarray, by_subject: bool) -> tuple[np.ndarray, np.ndarray]:
        """The live edges whose subject (``by_subject``) or object is one of ``codes`` (distinct
        run numbers): for each, the position in ``codes`` of its end, and the edge."""
        order, starts = self._by["s" if by_subject else "o"]
        inside = codes < len(starts) - 1
        first = np.zeros(len(codes), np.int64)
        size = np.zeros(len(codes), np.int64)
        first[inside] = starts[codes[inside]]
        size[inside] = starts[codes[inside] + 1] - first[inside]
        which = np.repeat(np.arange(len(codes)), size)
        edges = order[np.repeat(first - np.cumsum(size) + size, size) + np.arange(int(size.sum()))]
        if self.indexed < self.n:               # the edges added since: gone through
            ends = (self.s if by_subject else self.o)[self.indexed:self.n]
            by_code = np.argsort(codes)
            sorted_codes = codes[by_code]
            at = np.minimum(np.searchsorted(sorted_codes, ends), len(codes) - 1)
            hit = np.flatnonzero(sorted_codes[at] == ends) if len(codes) else np.zeros(0, np.int64)
            position = by_code[at[hit]]
            which, edges = np.concatenate([which, position]), np.concatenate([edges, self.indexed + hit])
        alive = self.live[edges]
        return which[alive], edges[alive]

    def degrees(self, codes: np.ndarray) -> np.ndarray:
        """How many live edges have each of ``codes`` (distinct run numbers) as subject, plus how
        many as object (an integer gather: what counting a popular node's rows costs here)."""
        return sum((np.bincount(self.around(codes, by_subject)[0], minlength=len(codes)) for by_subject in (True, False)),
                   np.zeros(len(codes), np.int64))

    def advanced(self, delta: pa.Table, version: int) -> "CodedView":
        """This view once ``delta`` (its change, signed rows) is committed as ``version``: the
        removed edges dead, the added ones appended (indexed afresh once they pass
        :data:`REINDEX` of the indexed ones). In place: no step reads it while a batch commits."""
        delta, _ = consolidated(delta)
        s, o, p = view_columns(self.predicate)
        leaving = pc.less(delta[MULT], 0).to_numpy(zero_copy_only=False)
        codes = {c: self.terms.encode(delta[c]) for c in (s, o, p) if c is not None}
        if leaving.any():
            gone = self._edges(*(codes[c][leaving] if c else None for c in (s, o, p)))
            self.live[gone] = False
            self.dead += len(gone)
        entering = ~leaving
        end = self.n + int(entering.sum())
        # appended in place: the arrays double when full, so a batch copies what it adds, not the view
        for name, column in (("s", s), ("o", o), ("p", p)):
            if column is not None:
                array = grown(getattr(self, name), end, -1)
                array[self.n:end] = codes[column][entering]
                setattr(self, name, array)
        self.live = grown(self.live, end, False)
        self.live[self.n:end] = True
        self.n = end
        self.terms.settle()
        self.version = version
        if self.n - self.indexed > REINDEX * self.indexed or 2 * self.dead > self.n:
            self._index()
        return self

    def _edges(self, s: np.ndarray, o: np.ndarray, p: np.ndarray | None) -> np.ndarray:
        """The live edges (s, o, p) (run numbers, each an edge of the view): found among the edges
        of their subjects by (subject, object) and predicate."""
        subjects = distinct(s)
        which, edges = self.around(subjects, by_subject=True)
        span = len(self.terms) + 1
        wanted = np.searchsorted(subjects, s) * span + o
        found = which * span + self.o[edges]
        if p is None:
            return edges[isin(found, distinct(wanted))]
        hit = np.zeros(len(edges), bool)
        for predicate in distinct(p):
            hit |= (self.p[edges] == predicate) & isin(found, distinct(wanted[p == predicate]))
        return edges[hit]


def _ranges(ends: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The edges ordered by ``ends`` (stable), and where each number's range starts (``size + 1``
    entries: a number at or beyond ``size`` has none)."""
    size = max(size, int(ends.max(initial=-1)) + 1)
    order = np.argsort(ends, kind="stable")
    return order, np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=size))])


class CodedGraph:
    """The edge views a run keeps coded, in one numbering of their terms (see the module text).
    ``content(view, version)`` gives a view's rows at a version of the views table."""

    def __init__(self, content: Callable[[str, int], pa.Table]) -> None:
        self._content = content
        self.numbering = Terms()
        self._views: dict[str, CodedView] = {}
        self._lock = threading.Lock()

    def at(self, version: int | None, kept: Container[str]) -> "CodedAt":
        """The coded views at ``version`` of the views table, of the views ``kept`` (those the run
        holds: others, and all when the table has no version yet, load as before)."""
        return CodedAt(self, version, kept)

    def view(self, view: str, predicate: str, version: int) -> CodedView:
        """View ``view`` coded at ``version``: the one kept, or built from its rows. A build numbers
        terms, so the steps build their views before their walks start (:func:`.paths.path_changes`)."""
        with self._lock:
            coded = self._views.get(view)
            if coded is None or coded.version != version or coded.predicate != predicate:
                coded = self._views[view] = CodedView(self.numbering, predicate, self._content(view, version), version)
            return coded

    def committed(self, before: int, after: int, deltas: Mapping[str, pa.Table]) -> None:
        """This run committed the views table's version ``after`` on ``before``, changing the views
        of ``deltas``: the views kept at ``before`` move to ``after`` (others are dropped). Once the
        numbering holds more than twice the terms the kept views can hold (two per edge: terms of
        edges gone since stay numbered), it starts afresh and the views are coded again."""
        for name, coded in list(self._views.items()):
            if coded.version != before:
                del self._views[name]
            elif name in deltas:
                coded.advanced(deltas[name], after)
            else:
                coded.version = after
        if len(self.numbering) > 4 * sum(len(coded) for coded in self._views.values()) + 1024:
            self.forget()
            self.numbering = Terms()

    def forget(self) -> None:
        """Drop every coded view (a commit this run did not make: the next batch codes them again)."""
        self._views.clear()


class CodedAt:
    """The coded views of a :class:`CodedGraph` at one version of the views table
    (:class:`.path_edges.CodedViews`)."""

    def __init__(self, graph: CodedGraph, version: int | None, kept: Container[str]) -> None:
        self.numbering = graph.numbering
        self._graph, self._version, self._kept = graph, version, kept
        self._changes: dict[str, dict[str, np.ndarray]] = {}

    def view(self, view: str, predicate: str) -> CodedView | None:
        if self._version is None or view not in self._kept:
            return None
        return self._graph.view(view, predicate, self._version)

    def number(self, view: str, predicate: str, change: pa.Table) -> None:
        """Number the terms of the batch's ``change`` of a coded view, once for every walk that
        starts from its edges (before the walks: numbering is not for threads)."""
        coded = self.view(view, predicate)
        if coded is not None and change.num_rows and view not in self._changes:
            self._changes[view] = {c: self.numbering.encode(change[c]) for c in view_columns(predicate) if c}
            self.numbering.settle()

    def change(self, view: str) -> dict[str, np.ndarray] | None:
        """The run's numbers of the terms of the batch's change of ``view``, by column, row by
        row (:meth:`number`)."""
        return self._changes.get(view)
