"""The consolidated tables a run holds: written whole from memory rather than MERGEd.

A query's gold table is its answer bag, one row per distinct answer with its multiplicity, kept
consolidated so that a SQL reader needs no ``GROUP BY``; its partial embeddings and bags are kept
the same way, for the delta rules to read as they stand. A Delta MERGE of a batch's change costs a
scan of the table, a join and a rewrite of every file the change's keys fall in, and they fall in
all of them (delta-rs's MERGE writes no deletion vectors): some 40 ms for a table of a few rows, 130 ms for
one of 216,000 (the LUBM 4-cycle's gold at 1M triples), and a ten-query batch made some twenty. A
run holds each such table's content at the version it last read or wrote, with a key per row; a
batch's change then touches only the rows with its keys (a hash lookup of the keys), and the new
content is written as a plain overwrite: 8 ms and 45 ms for those two. Each table stays what it
was, consolidated and versioned for time travel; only the write is cheaper. A table of more than
:data:`REWRITE_MAX_ROWS` rows is MERGEd instead, by deletion vectors
(:mod:`pipelines.storage.vector_merge`): encoding it whole at every batch costs more.

Exactly once as for :mod:`.held`: the held content is used only at the version the batch log says
the batch reads (anything else is read from the table), and an overwrite skipped because the
batch's transaction already made it drops what was held.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT

from ..storage import TableStore, Txn
from .arrow import CHUNKS, data_columns, sum_touched
from .merge_on_read import row_keys


#: Tables of more rows are MERGEd instead (by the store: by deletion vectors on delta-rs, whose
#: store then holds their keys and counts for the next batch's reads): rewriting the 4-cycle's gold
#: at 10M triples (2.2M rows) whole at every batch took 1.6-2.4 s, and the courses aggregate's bag
#: (162,650 rows) 23 ms of a batch's commits where its merge takes 7 ms.
REWRITE_MAX_ROWS = 50_000


@dataclass(frozen=True)
class _Bag:
    """A table's content at one version, and each row's key (:func:`.merge_on_read.row_keys`), both in
    chunks (a batch's new content shares the old one's buffers but for the rows it changes)."""

    version: int
    content: pa.Table
    keys: pa.ChunkedArray

    @classmethod
    def of(cls, version: int, content: pa.Table) -> "_Bag":
        return cls(version, content, pa.chunked_array([row_keys(content)]))

    def plus(self, delta: pa.Table) -> tuple[pa.Table, pa.ChunkedArray]:
        """The content once ``delta`` (signed rows) is added, and its keys: the rows sharing a
        key with the delta are summed with it (a key whose columns hold an unbound value may stand
        for several rows: they are summed too, which changes nothing), the others kept as they are."""
        delta = delta.select(self.content.column_names).cast(self.content.schema)
        touched = pc.is_in(self.keys, value_set=row_keys(delta))
        kept, summed = sum_touched(self.content, delta, data_columns(delta), touched)
        content = pa.concat_tables([kept, summed])
        keys = pa.chunked_array([*self.keys.filter(pc.invert(touched)).chunks, row_keys(summed)], pa.string())
        if keys.num_chunks > CHUNKS:
            content, keys = content.combine_chunks(), pa.chunked_array([keys.combine_chunks()])
        return content, keys


class HeldBags:
    """The consolidated tables of a run, each held at the version it was last read or written at."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self._bags: dict[str, _Bag] = {}

    def _at(self, name: str, version: int | None) -> _Bag:
        version = self.store.version(name) if version is None else version
        held = self._bags.get(name)
        if held is None or held.version != version:
            held = self._bags[name] = _Bag.of(version, self.store.read_arrow(name, version))
        return held

    def writes(self, deltas: Mapping[str, pa.Table], versions: Mapping[str, int],
               txn: Txn) -> list[Callable[[], None]]:
        """The commits of a batch's changes (``deltas``, signed rows by table, from the
        ``versions`` the batch read), for :meth:`TableStore.concurrently`: each rewrites its table
        whole and then holds it at the version it wrote, or MERGEs into a table of more than
        :data:`REWRITE_MAX_ROWS` rows."""
        return [partial(self._write, name, delta, versions.get(name), txn) for name, delta in deltas.items()]

    def _write(self, name: str, delta: pa.Table, version: int | None, txn: Txn) -> None:
        held = self._bags.get(name)
        rows = held.content.num_rows if held and held.version == version else self.store.row_count(name, version)
        if rows > REWRITE_MAX_ROWS:
            self._bags.pop(name, None)
            self.store.merge_counts(name, delta, data_columns(delta), MULT, txn)
            return
        content, keys = self._at(name, version).plus(delta)
        del self._bags[name]        # held again only once the commit is known to have been made now
        if self.store.overwrite(name, content, txn):
            self._bags[name] = _Bag(self.store.version(name), content, keys)
