"""The state tables a run holds: merge-on-read on disk, indexed in memory.

Views, path views and reach tables are sets kept by batches that touch a few keys each. MERGEd at
every batch, each was rewritten whole wherever the batch's keys fell (a Delta MERGE rewrites every
file a key hits, and a batch's keys fall everywhere); read whole at every batch, each cost a scan
that grew with the graph however small the batch (at 10M triples a 1,000-update batch read 8.1M
view rows). So they are kept merge-on-read (:mod:`.merge_on_read`): a batch appends its signed
rows. And a run keeps each table as it last read or wrote it, at that version (:class:`IndexedSet`):
the content it read, indexed by the columns the delta rules and the path operator look rows up by,
with the rows changed since kept beside it. The next batch, which starts from the version the last
one wrote, finds the rows of the keys it touches by an index probe, not by reading the table.

Exactly once: an index is used only at the version the batch log says a batch reads (a run that
starts, or a batch re-run after a crash, reads the table at that version first), and a commit that
was skipped because it had already happened drops it.
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from functools import partial
from typing import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as S
from schemas.tables import MULT, VIEW, VIEW_COLUMNS
from views.plan import QueryPlan, ViewDef

from .. import catalog
from ..lake import VIEWS
from ..storage import TableStore, Txn
from . import views_table
from .arrow import consolidate, data_columns, holding
from .merge_on_read import consolidated, folds, row_keys
from .lookup import Find, Finder, Lookup, considered, counted, finder, narrowest, take_holding
from .path_graph import CodedAt, CodedGraph
from .threads import Memo

#: A held table's content becomes its new base once keeping its rows changed since the base apart
#: has cost about what rebuilding it costs: each lookup and each change goes through the rows added
#: since, a rebuild through every row of the content (its copy and its indexes), at about this
#: many times the cost per row (measured: 0.8 µs a row to rebuild a path's reach table of 1.65M
#: rows, 15 to 30 ns a row to go through the rows added since; 8, not 30, held up best in a replay
#: of 19 batches of 10,000 edges at 1M edges). A table looked up in every round of a path walk is
#: rebuilt sooner than one looked up once a batch.
REBUILD_COST = 8
#: ... and at the latest once the rows changed since the base pass this share of it.
REBASE = 1 / 4


def held_tables(plans: Iterable[QueryPlan]) -> set[str]:
    """The merge-on-read tables of the queries over the whole graph among ``plans``: their views,
    path views and reach tables (a windowed query keeps its views in its own state table)."""
    return set(catalog.shared_tables([p for p in plans if not p.windowed]))


class IndexedSet:
    """A table whose content is a set (every row's multiplicity 1) at one version, held as a base
    (rows of earlier versions, indexed on first use by any column) less the base rows gone (a
    mask of positions) plus the rows added since (``new``, not in the base) less those of them
    gone since (a mask too: dropping them copied every row added since, at every batch that
    removed one, a twentieth of a path batch's CPU).

    A batch's change updates the mask and ``new`` from its own rows: the base rows it removes are
    found through the base's index, so neither a lookup nor a change sums the rows of every batch
    since the base. The rows of ``new`` are gone through by every lookup and change, though: once
    that has cost what a rebuild costs (:data:`REBUILD_COST`), or the rows changed since pass
    :data:`REBASE` of the base, they become part of a new base (its indexes carried over; the
    base rows gone are dropped once they are that share of it). So the rebuilds cost at most
    about what keeping the rows apart cost, however often the table is looked up (rent or buy).
    How the table is kept on disk (appends, then a fold:
    :mod:`.merge_on_read`) is independent of it.
    """

    def __init__(self, content: pa.Table, stored: int, version: int) -> None:
        self.base = content.combine_chunks()     # one chunk: a lookup takes rows by position
        self.alive: np.ndarray | None = None     # base rows still in the content (None: all)
        self.gone = 0                            # base rows not alive
        self.new = content.slice(0, 0)
        self.new_keys = pa.chunked_array([row_keys(self.new)])
        self.new_alive: np.ndarray | None = None     # rows of ``new`` still in the content (None: all)
        self.new_gone = 0                            # rows of ``new`` not alive
        self.stored = stored            # rows the table holds on disk at ``version``
        self.size = content.num_rows    # rows of its content (a set: the sum of the multiplicities)
        self.version = version
        self.passed = 0                 # rows of ``new`` gone through since the base (lookups, changes)
        self._lookups: Memo[str, Lookup] = Memo()     # shared by the holders after it (copies)
        self._content: pa.Table | None = content

    def find(self, keys: Mapping[str, pa.Array], columns: list[str] | None = None) -> pa.Table:
        """The content's rows holding, in each column of ``keys``, one of its values (only
        ``columns``, if given): the base's through the index that finds the fewest
        (:func:`.lookup.narrowest`), the others filtering them."""
        column, codes = narrowest(keys, self._lookup, self._lookups)
        positions = self._lookup(column).positions_of(codes)
        if self.alive is not None:
            positions = positions[self.alive[positions]]
        rows = take_holding(self.base, positions, {c: v for c, v in keys.items() if c != column}, columns)
        if not self.new.num_rows:
            return rows
        self.passed += self.new.num_rows      # (threads may lose a count: it only delays a rebuild)
        hold = holding(self.new, keys)
        new = self.new.filter(hold if self.new_alive is None else hold & self.new_alive)
        return pa.concat_tables([rows, new if columns is None else new.select(columns)])

    def count(self, column: str, values: pa.Array) -> np.ndarray:
        """How many of the content's rows hold each of ``values`` (distinct) in ``column``: the
        base's alive ones counted through the column's index, the new ones filtered."""
        counts = self._lookup(column).counts(values, self.alive)
        if self.new.num_rows:
            self.passed += self.new.num_rows
            counts += counted(self.new[column], values, self.new_alive)
        return counts

    def content(self) -> pa.Table:
        """The whole content: the base's rows alive, and the new ones."""
        if self._content is None:
            self._content = pa.concat_tables([_alive(self.base, self.alive), _alive(self.new, self.new_alive)])
        return self._content

    def after(self, delta: pa.Table) -> "IndexedSet":
        """The table once ``delta`` is appended (at this version until the commit says which): a
        new holder sharing the base and its indexes, or the content as a new base."""
        later = copy.copy(self)
        later.stored += delta.num_rows
        delta, keys = consolidated(delta.select(self.base.column_names).cast(self.base.schema))
        later.size += int(pc.sum(delta[MULT]).as_py() or 0)
        later._content = None
        leaving = pc.less(delta[MULT], 0).combine_chunks()
        entering = pc.invert(leaving)
        removed, removed_keys = delta.filter(leaving), keys.filter(leaving)
        added, added_keys = delta.filter(entering), keys.filter(entering)
        # a removed row is a new one alive or a base row alive; an added row a base row gone or none of the base's
        newly = pc.is_in(self.new_keys, value_set=removed_keys).to_numpy() if removed.num_rows else \
            np.zeros(self.new.num_rows, bool)       # (a view's change without deletions removes nothing)
        if self.new_alive is not None:
            newly &= self.new_alive
        if newly.any():
            later.new_alive = ~newly if self.new_alive is None else self.new_alive & ~newly
            later.new_gone = self.new_gone + int(newly.sum())
        from_base = pc.invert(pc.is_in(removed_keys, value_set=self.new_keys.filter(pa.array(newly))))
        gone, _ = self._positions(removed.filter(from_base), removed_keys.filter(from_base), alive=True)
        back, back_keys = self._positions(added, added_keys, alive=False)
        if len(gone) or len(back):
            alive = np.ones(self.base.num_rows, dtype=bool) if self.alive is None else self.alive.copy()
            alive[gone], alive[back] = False, True
            later.alive, later.gone = alive, self.base.num_rows - int(alive.sum())
        fresh = pc.invert(pc.is_in(added_keys, value_set=back_keys))
        entered = added.filter(fresh)
        later.new = pa.concat_tables([self.new, entered])
        later.new_keys = pa.chunked_array([*self.new_keys.chunks, added_keys.filter(fresh)])
        if later.new_alive is not None:
            later.new_alive = np.concatenate([later.new_alive, np.ones(entered.num_rows, bool)])
        later.passed += self.new.num_rows
        if later.passed > REBUILD_COST * later.base.num_rows or \
                later.gone + later.new.num_rows > REBASE * later.base.num_rows:
            return later._rebased()
        return later

    def followed(self, rows: pa.Table, version: int) -> "IndexedSet":
        """The table at ``version``, once another writer appended ``rows`` to it."""
        later = self.after(rows) if rows.num_rows else copy.copy(self)
        later.version = version
        return later

    def _rebased(self) -> "IndexedSet":
        """This set with the rows added since its base made part of a new base, each column's
        index carried over (:meth:`.Lookup.extended`). The rows gone (of the base or added since)
        stay in it, masked, until they pass :data:`REBASE` of the base: dropping them at every
        rebase cost a second copy of every row (the new base is one chunk, as a lookup takes rows
        by position) and renumbered the rows of every index."""
        gone = self.gone + self.new_gone
        compact = gone > REBASE * self.base.num_rows
        content = self.content() if compact else pa.concat_tables([self.base, self.new])
        rebased = IndexedSet(content, self.stored, self.version)
        kept, added = (self.alive, _alive(self.new, self.new_alive)) if compact else (None, self.new)
        rebased._lookups = Memo({column: lookup.extended(kept, added[column])
                                 for column, lookup in self._lookups.items()})
        if not compact and gone:
            rebased.alive = np.concatenate([np.ones(self.base.num_rows, bool) if self.alive is None else self.alive,
                                            np.ones(self.new.num_rows, bool) if self.new_alive is None else self.new_alive])
            rebased.gone, rebased.size, rebased._content = gone, self.size, self._content
        return rebased

    def _lookup(self, column: str) -> Lookup:
        # a held table is looked up by the same columns at every batch of the run: hashed at once
        return self._lookups.get(column, lambda: Lookup(self.base[column], buy=0))

    def _positions(self, rows: pa.Table, keys: pa.Array, alive: bool) -> tuple[np.ndarray, pa.Array]:
        """The base positions of ``rows`` (of the base's columns, their :func:`row_keys` ``keys``)
        that the base holds ``alive`` (a removed row is one of those alive, an added one can only
        be one gone: the content is a set), and those rows' keys. The candidates are the base rows
        in that state sharing a column's value with ``rows``, kept where their whole key is one of
        ``keys``. The column is the one whose values lead to the fewest base rows, of the first and
        those indexed already (a path's reach rows share their roots with whole trees, and often
        their nodes with few rows); an added row's candidates are the rows gone when they are
        fewer (most batches add far more rows than the base has lost, and a rebase keeps the rows
        gone: then no index is even probed)."""
        columns = data_columns(rows)
        none = np.zeros(0, dtype=np.int64), keys[:0]
        if not rows.num_rows or not (alive or self.gone):
            return none
        if not columns:     # a table of the empty tuple holds at most that one row
            found = np.flatnonzero(np.ones(self.base.num_rows, bool) if self.alive is None else self.alive == alive)
            return found[:1], keys[:len(found[:1])]
        if not alive and self.gone <= rows.num_rows:
            candidates = np.flatnonzero(~self.alive)    # fewer than the rows: no index is probed
        else:
            wanted = {c: pc.unique(rows[c]) for c in considered(columns, self._lookups)}
            column, codes = narrowest(wanted, self._lookup, self._lookups)
            lookup = self._lookup(column)
            if not alive and self.gone < lookup.count_of(codes):
                candidates = np.flatnonzero(~self.alive)
            else:
                candidates = lookup.positions_of(codes)
                if self.alive is not None:
                    candidates = candidates[self.alive[candidates] == alive]
        found = row_keys(self.base.select(columns).take(candidates))
        hit = pc.is_in(found, value_set=keys)
        return candidates[hit.to_numpy(zero_copy_only=False)], found.filter(hit)


def indexed(folded: pa.Table, rest: pa.Table, version: int) -> IndexedSet:
    """A set table at ``version`` as :meth:`TableStore.read_folded` gives it (the rows of its last
    fold, and the others), indexed: the fold's rows, every one of multiplicity 1, are the base as
    they are, and the others its change (:meth:`IndexedSet.after`), so only those are summed;
    without such a fold, every row is."""
    if folded.num_rows and pc.all(pc.equal(folded[MULT], 1)).as_py():
        held = IndexedSet(folded, folded.num_rows, version)
        return held.after(rest) if rest.num_rows else held
    rows = pa.concat_tables([folded, rest])
    return IndexedSet(consolidate(rows, data_columns(rows)).cast(rows.schema), rows.num_rows, version)


def _alive(rows: pa.Table, alive: np.ndarray | None) -> pa.Table:
    """The ``rows`` a mask marks ``alive`` (None: all of them)."""
    return rows if alive is None else rows.filter(pa.array(alive))


@dataclass
class _HeldViews:
    """The views table (:mod:`.views_table`) at one version, split by view: each view a batch has
    looked at indexed as an :class:`IndexedSet`, the others as their stored rows until one does
    (consolidating and indexing every view at a run's first batch cost more than reading them),
    and the rows of views no query of the run uses (kept through a fold)."""

    version: int
    stored: int                     # rows the table holds on disk at ``version``
    sets: dict[str, IndexedSet]
    parts: dict[str, tuple[pa.Table, pa.Table]]     # a view's stored rows, not yet indexed: its last fold's, the others
    others: pa.Table

    def get(self, name: str) -> IndexedSet:
        if name not in self.sets:
            self.sets[name] = indexed(*self.parts.pop(name), self.version)
        return self.sets[name]

    def plus(self, parts: Mapping[str, pa.Table], others: pa.Table, version: int) -> "_HeldViews":
        """The table at ``version``, once another writer appended the rows of each view of
        ``parts`` (in its own shape) and ``others`` (of the views held as stored rows)."""
        sets = {name: held.followed(parts[name], version) for name, held in self.sets.items()}
        kept = {name: (folded, pa.concat_tables([rest, parts[name]])) for name, (folded, rest) in self.parts.items()}
        rows = sum(t.num_rows for t in parts.values()) + others.num_rows
        return _HeldViews(version, self.stored + rows, sets, kept, pa.concat_tables([self.others, others]))

    def size(self) -> int:
        """The content's rows, counting a view not indexed by its stored rows (at least its
        content: a fold comes no earlier than the rule says)."""
        return (sum(s.size for s in self.sets.values())
                + sum(f.num_rows + r.num_rows for f, r in self.parts.values()) + self.others.num_rows)


class HeldTables:
    """The merge-on-read tables of a run (:func:`held_tables`), each indexed at the
    version it was last read or written at (see the module text). The views are parts of one
    table (:mod:`.views_table`), held and written together: a batch's view changes are one commit."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self._sets: dict[str, IndexedSet] = {}
        self._views: dict[str, ViewDef] = {}
        self._held_views: _HeldViews | None = None
        # a step's threads (path walks, queries) ask for tables at once: each table is read and
        # indexed once, under a lock of its own, while other threads read other tables
        self._locks: Memo[str, threading.Lock] = Memo()
        # rows served from what the run holds (reads of the tables themselves count in the store's
        # own figures): how the bench shows a batch's reads following its change
        self.served = 0
        self._counting = threading.Lock()
        # each table's id when it was last read whole: rows appended since by another writer are
        # followed only while it is the same table (not one dropped and created again at its path)
        self._ids: dict[str, str | None] = {}
        # the edge views coded for the path walks (:mod:`.path_graph`), moved with the views' commits
        self.graph = CodedGraph(lambda view, version: self._at(view, {VIEWS: version}).content())

    def track(self, views: Iterable[ViewDef]) -> None:
        """The views of the run's queries: the parts of the views table held as tables of their own."""
        views = {v.id: v for v in views}
        if views != self._views:
            self._views, self._held_views = views, None

    def views(self) -> list[ViewDef]:
        """The views tracked."""
        return list(self._views.values())

    def _at(self, name: str, versions: Mapping[str, int]) -> IndexedSet:
        """Table ``name`` at its version in ``versions`` (the newest when absent), read and indexed
        unless it is the version held."""
        if name in self._views:
            with self._locks.get(VIEWS, threading.Lock):
                held_views = self._views_at(versions.get(VIEWS))
            with self._locks.get(name, threading.Lock):
                return held_views.get(name)
        with self._locks.get(name, threading.Lock):
            version = versions.get(name)
            version = self.store.version(name) if version is None else version
            held = self._sets.get(name)
            if held is not None and held.version < version and (rows := self._appended(name, held.version, version)) \
                    is not None:
                held = self._sets[name] = held.followed(rows, version)
            if held is None or held.version != version:
                self._ids[name] = self.store.table_id(name)
                held = self._sets[name] = indexed(*self.store.read_folded(name, version), version)
            return held

    def _views_at(self, version: int | None) -> _HeldViews:
        """The views table at ``version`` (the newest when None): read once, split by view."""
        version = self.store.version(VIEWS) if version is None else version
        held = self._held_views
        if held is not None and held.version < version and (rows := self._appended(VIEWS, held.version, version)) \
                is not None:
            parts, others = views_table.split(rows, self._views.values())
            before, held = held.version, held.plus(parts, others, version)
            self._held_views = held
            self.graph.committed(before, version, {name: rows for name, rows in parts.items() if rows.num_rows})
        if held is None or held.version != version:
            self._ids[VIEWS] = self.store.table_id(VIEWS)
            folded, rest = self.store.read_folded(VIEWS, version)
            (folded_parts, folded_others), (parts, others) = (views_table.split(rows, self._views.values())
                                                              for rows in (folded, rest))
            held = self._held_views = _HeldViews(
                version, folded.num_rows + rest.num_rows, {}, {v: (folded_parts[v], parts[v]) for v in parts},
                pa.concat_tables([folded_others, others]))
        return held

    def read(self, name: str, versions: Mapping[str, int]) -> pa.Table:
        """Table ``name``'s content at its version in ``versions``."""
        return self._served(self._at(name, versions).content())

    def finder(self, versions: Mapping[str, int]) -> Find:
        """Rows of the tables at ``versions`` (a batch's) by their columns' values (:class:`.lookup.Find`)."""
        return Finder(lambda name, keys, columns: self._served(self._at(name, versions).find(keys, columns)),
                      lambda name, column, values: self._at(name, versions).count(column, values))

    def coded(self, versions: Mapping[str, int]) -> CodedAt:
        """The views tracked, coded for the path walks at the views table's version in ``versions``."""
        return self.graph.at(versions.get(VIEWS), self._views)

    def changed_rows(self) -> int:
        """Rows the held tables keep beside their indexed bases (gone from them or added since)."""
        sets = [*self._sets.values(), *(self._held_views.sets.values() if self._held_views else ())]   # indexed ones
        return sum(held.gone + held.new.num_rows for held in sets)

    def _appended(self, name: str, since: int, version: int) -> pa.Table | None:
        """The rows another writer appended to table ``name`` after version ``since`` up to
        ``version`` (:meth:`TableStore.appended`), if it is the table held: a process that does
        not write the tables (an executor's task, :mod:`.tasks`) follows them by what they gained
        instead of reading them again at every batch. None when it cannot."""
        table = self._ids.get(name)
        if table is None or self.store.table_id(name) != table:
            return None
        return self.store.appended(name, since, version)

    def _served(self, rows: pa.Table) -> pa.Table:
        with self._counting:
            self.served += rows.num_rows
        return rows

    def writes(self, deltas: Mapping[str, pa.Table], versions: Mapping[str, int],
               txn: Txn) -> list[Callable[[], None]]:
        """The commits of a batch's changes to the tables (``deltas``, from the ``versions`` the
        batch read), for :meth:`TableStore.concurrently`: each appends its change, or rewrites the
        table consolidated when its rows would pass :data:`~.merge_on_read.FOLD` times its content,
        and then holds the table at the version it wrote. The views' changes are one commit."""
        views = {name: delta for name, delta in deltas.items() if name in self._views}
        writes = [partial(self._write, name, delta, versions.get(name), txn)
                  for name, delta in deltas.items() if name not in views]
        if views:
            writes.append(partial(self._write_views, views, versions.get(VIEWS), txn))
        return writes

    def _write(self, name: str, delta: pa.Table, version: int | None, txn: Txn) -> None:
        held = self._at(name, {} if version is None else {name: version})
        after = held.after(delta)
        del self._sets[name]        # held again only once the commit is known to have been made now
        if folds(held.stored, delta.num_rows, after.size):
            content = after.content()
            if self.store.fold(name, content, txn):     # the rows on disk change, not what is held
                after.stored, after.version = content.num_rows, self.store.version(name)
                self._sets[name] = after
        elif self.store.append(name, delta, txn):
            after.version = self.store.version(name)
            self._sets[name] = after

    def _write_views(self, deltas: Mapping[str, pa.Table], version: int | None, txn: Txn) -> None:
        """One commit of every view's change: appended together, or the views table rewritten
        consolidated when its rows would pass :data:`~.merge_on_read.FOLD` times its content."""
        held = self._views_at(version)
        changed = {name: held.get(name).after(delta) for name, delta in deltas.items()}
        rows = sum(delta.num_rows for delta in deltas.values())
        self._held_views = None     # held again only once the commit is known to have been made now
        after = _HeldViews(held.version, held.stored + rows, {**held.sets, **changed}, dict(held.parts), held.others)
        if folds(held.stored, rows, after.size()):
            for name in list(after.parts):
                after.get(name)
            after.others = consolidate(after.others, [VIEW, *VIEW_COLUMNS]).cast(S.VIEWS)
            content = pa.concat_tables([after.others]
                                       + [views_table.stored(name, s.content()) for name, s in after.sets.items()])
            if self.store.fold(VIEWS, content, txn):
                after.stored, after.version = content.num_rows, self.store.version(VIEWS)
                self._held_views = after
        elif self.store.append(VIEWS, pa.concat_tables([views_table.stored(n, d) for n, d in deltas.items()]), txn):
            after.version = self.store.version(VIEWS)
            self._held_views = after
        if self._held_views is after:
            self.graph.committed(held.version, after.version, deltas)
        else:
            self.graph.forget()


def batch_reads(store: TableStore, held: HeldTables, versions: Mapping[str, int],
                names: set[str]) -> tuple[Callable[[str], pa.Table], Find]:
    """How the Arrow engine reads a batch's state tables at the versions it started from (the
    merge-on-read tables ``names`` consolidated, as ``held`` holds them) and finds their rows by
    key (an index probe for those; for a table the store holds in memory at that version, its
    lookup by the first key column; otherwise a filter of the table read whole)."""
    def arrow(table: str) -> pa.Table:
        if table in names:
            return held.read(table, versions)
        return store.read_arrow(table, versions.get(table))

    indexed, filtered = held.finder(versions), finder(arrow)

    def found(table: str, keys: Mapping[str, pa.Array], columns: list[str] | None) -> pa.Table:
        if table in names:
            return indexed(table, keys, columns)
        version = versions.get(table)
        column, *others = keys
        rows = None if version is None else store.find_held(table, column, keys[column], version)
        if rows is None:
            return filtered(table, keys, columns)
        if others:      # the store finds the rows by the first column
            rows = rows.filter(holding(rows, {c: keys[c] for c in others}))
        return rows if columns is None else rows.select(columns)

    def counts(table: str, column: str, values: pa.Array) -> np.ndarray:
        return (indexed if table in names else filtered).count(table, column, values)
    return arrow, Finder(found, counts)
