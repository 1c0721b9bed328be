"""The state tables a run holds: merge-on-read on disk, indexed in memory.

Views, path views and reach tables are sets kept by batches that touch a few keys each. MERGEd at
every batch, each was rewritten whole wherever the batch's keys fell (a Delta MERGE rewrites every
file a key hits, and a batch's keys fall everywhere); read whole at every batch, each cost a scan
that grew with the graph however small the batch (at 10M triples a 1,000-update batch read 8.1M
view rows). So they are kept merge-on-read (:mod:`.merge_on_read`): a batch appends its signed
rows. And a run keeps each table as it last read or wrote it, at that version (:class:`IndexedSet`):
the content it read, indexed by the columns the delta rules and the path operator look rows up by,
plus the signed rows appended since. The next batch, which starts from the version the last one
wrote, finds the rows of the keys it touches by an index probe and a filter of the rows appended
since, not by reading the table.

Exactly once: an index is used only at the version the batch log says a batch reads (a run that
starts, or a batch re-run after a crash, reads the table at that version first), and a commit that
was skipped because it had already happened drops it.
"""
from __future__ import annotations

import copy
from functools import partial
from typing import Callable, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.plan import QueryPlan

from .. import catalog
from ..storage import TableStore, Txn
from .arrow import consolidate, data_columns
from .merge_on_read import folds
from .lookup import Find, Lookup


def held_tables(plans: Iterable[QueryPlan]) -> set[str]:
    """The merge-on-read tables of the queries over the whole graph among ``plans``: their views,
    path views and reach tables (a windowed query keeps its views in its own state table)."""
    return set(catalog.shared_tables([p for p in plans if not p.windowed]))


def row_keys(rows: pa.Table) -> pa.Array:
    """One string per row of data columns (terms never hold a newline: N-Triples escapes it)."""
    columns = [rows[c] for c in data_columns(rows)]
    if not columns:
        return pa.repeat(pa.scalar("", pa.string()), rows.num_rows)
    keys = columns[0] if len(columns) == 1 else pc.binary_join_element_wise(*columns, "\n")
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


class IndexedSet:
    """A table whose content is a set (every row's multiplicity 1) at one version: the content as
    last consolidated (``base``), indexed on first use by any column, and the signed rows appended
    since (``added``, few next to it: the table is folded when they pass its content)."""

    def __init__(self, content: pa.Table, stored: int, version: int) -> None:
        self.base = content.combine_chunks()     # one chunk: a lookup takes rows by position
        self.added = content.slice(0, 0)
        self.stored = stored            # rows the table holds on disk at ``version``
        self.size = content.num_rows    # rows of its content (a set: the sum of the multiplicities)
        self.version = version
        self._lookups: dict[str, Lookup] = {}
        self._base_keys: pa.Array | None = None
        self._content: pa.Table | None = content
        self._summed: tuple[pa.Array, pa.Table] | None = None

    def find(self, column: str, values: pa.Array) -> pa.Table:
        """The content's rows whose ``column`` is one of ``values``."""
        if column not in self._lookups:
            self._lookups[column] = Lookup(self.base[column])
        rows = self.base.take(self._lookups[column].positions(values))
        if not self.added.num_rows:
            return rows
        gone, new = self._change()
        if len(gone):
            rows = rows.filter(pc.invert(pc.is_in(row_keys(rows), value_set=gone)))
        return pa.concat_tables([rows, new.filter(pc.is_in(new[column], value_set=values))])

    def content(self) -> pa.Table:
        """The whole content: the base without the rows the appended ones removed, with those they
        added (a filter of the base on a key column kept with it, not a group-by of it all)."""
        if self._content is None:
            gone, new = self._change()
            if self._base_keys is None:
                self._base_keys = row_keys(self.base)
            kept = self.base.filter(pc.invert(pc.is_in(self._base_keys, value_set=gone)))
            self._content = pa.concat_tables([kept, new])
        return self._content

    def _change(self) -> tuple[pa.Array, pa.Table]:
        """The appended rows summed: the keys (:func:`row_keys`) of the base's rows they remove, and
        the rows they add (a set's row is removed or added at most once: every sum is -1, 0 or 1)."""
        if self._summed is None:
            change = consolidate(self.added, data_columns(self.added)).cast(self.base.schema)
            gone = row_keys(change.filter(pc.less(change[MULT], 0)))
            self._summed = (gone, change.filter(pc.greater(change[MULT], 0)))
        return self._summed

    def after(self, delta: pa.Table) -> "IndexedSet":
        """The table once ``delta`` is appended (at this version until the commit says which):
        a new holder sharing the base and its indexes."""
        later = copy.copy(self)
        later.added = pa.concat_tables([self.added, delta.select(self.base.column_names).cast(self.base.schema)])
        later.stored += delta.num_rows
        later.size += int(pc.sum(delta[MULT]).as_py() or 0)
        later._content = later._summed = None
        return later


class HeldTables:
    """The merge-on-read tables of a run (:func:`held_tables`), each indexed at the
    version it was last read or written at (see the module text)."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self._sets: dict[str, IndexedSet] = {}
        # rows served from what the run holds (reads of the tables themselves count in the store's
        # own figures): how the bench shows a batch's reads following its change
        self.served = 0

    def _at(self, name: str, version: int | None) -> IndexedSet:
        """Table ``name`` at ``version`` (the newest when None), read and indexed unless it is the
        version held."""
        version = self.store.version(name) if version is None else version
        held = self._sets.get(name)
        if held is None or held.version != version:
            rows = self.store.read_arrow(name, version)
            content = consolidate(rows, data_columns(rows)).cast(rows.schema)
            held = self._sets[name] = IndexedSet(content, rows.num_rows, version)
        return held

    def read(self, name: str, version: int | None) -> pa.Table:
        """Table ``name``'s content at ``version``."""
        return self._served(self._at(name, version).content())

    def finder(self, versions: Mapping[str, int]) -> Find:
        """Rows of the tables at ``versions`` (a batch's) by a column's values."""
        return lambda name, column, values: self._served(self._at(name, versions.get(name)).find(column, values))

    def _served(self, rows: pa.Table) -> pa.Table:
        self.served += rows.num_rows
        return rows

    def writes(self, deltas: Mapping[str, pa.Table], versions: Mapping[str, int],
               txn: Txn) -> list[Callable[[], None]]:
        """The commits of a batch's changes to the tables (``deltas``, from the ``versions`` the
        batch read), for :meth:`TableStore.concurrently`: each appends its change, or rewrites the
        table consolidated when its rows would pass :data:`~.merge_on_read.FOLD` times its content,
        and then holds the table at the version it wrote."""
        return [partial(self._write, name, delta, versions.get(name), txn) for name, delta in deltas.items()]

    def _write(self, name: str, delta: pa.Table, version: int | None, txn: Txn) -> None:
        held = self._at(name, version)
        after = held.after(delta)
        del self._sets[name]        # held again only once the commit is known to have been made now
        if folds(held.stored, delta.num_rows, after.size):
            content = after.content()
            if self.store.overwrite(name, content, txn):
                self._sets[name] = IndexedSet(content, content.num_rows, self.store.version(name))
        elif self.store.append(name, delta, txn):
            after.version = self.store.version(name)
            self._sets[name] = after
