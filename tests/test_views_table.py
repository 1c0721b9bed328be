"""Every view in one table (pipelines/engine/views_table.py): a batch's changes to all views are one
commit, appended or folded; lookups see each view's own content; a view kept in a table of its own
(an earlier layout) is moved in once, even when the move is interrupted. In process, no Spark."""
from __future__ import annotations

import random

import pyarrow as pa

from pipelines.engine.arrow import consolidate
from pipelines.engine.held import HeldTables
from pipelines.engine.views import view_schema
from pipelines.engine.views_table import adopt_legacy, of_view, split, stored
from pipelines.lake import VIEWS
from pipelines.storage import Txn
from pipelines.storage.delta_rs import DeltaRsStore
from schemas import tables as S
from schemas.tables import MULT
from views.plan import ViewDef

PAIR = ViewDef(id="v_pair", canonical="?v0 <http://e/p> ?v1", s=None, p="<http://e/p>", o=None,
               columns=("v0", "v1"), positions=(("s", "v0"), ("o", "v1")), filter_sql=None)
ONE = ViewDef(id="v_one", canonical="?v0 <http://e/q> <http://e/c>", s=None, p="<http://e/q>", o="<http://e/c>",
              columns=("v0",), positions=(("s", "v0"),), filter_sql=None)


def _rows(view: ViewDef, keys: list[tuple[str, ...]], sign: int) -> pa.Table:
    return pa.table({c: [k[i] for k in keys] for i, c in enumerate(view.columns)} | {MULT: [sign] * len(keys)},
                    schema=view_schema(view))


def _content(rows: pa.Table, view: ViewDef) -> set[tuple[str, ...]]:
    summed = consolidate(rows, list(view.columns)).to_pylist()
    assert all(r[MULT] == 1 for r in summed), "a view is a set"
    return {tuple(r[c] for c in view.columns) for r in summed}


def test_a_batch_changes_every_view_in_one_commit_appended_or_folded(tmp_path):
    store = DeltaRsStore(str(tmp_path))
    store.create(VIEWS, S.VIEWS)
    rng = random.Random(3)
    model = {PAIR.id: {(f"s{i}", f"o{i % 7}") for i in range(30)}, ONE.id: {(f"s{i}",) for i in range(10)}}
    store.append(VIEWS, pa.concat_tables([stored(v.id, _rows(v, sorted(model[v.id]), 1)) for v in (PAIR, ONE)]))
    held = HeldTables(store)
    held.track([PAIR, ONE])
    shapes = set()
    for batch in range(1, 12):
        deltas = {}
        for view in (PAIR, ONE):
            gone = rng.sample(sorted(model[view.id]), 2)
            new = [tuple(f"{c}{batch}_{j}" for c in view.columns) for j in range(2)]
            deltas[view.id] = pa.concat_tables([_rows(view, gone, -1), _rows(view, new, 1)])
            model[view.id] = (model[view.id] - set(gone)) | set(new)
        version = store.version(VIEWS)
        store.concurrently(held.writes(deltas, {VIEWS: version}, Txn("test", batch)))
        assert store.version(VIEWS) == version + 1, "one commit for every view"
        on_disk = store.read_arrow(VIEWS)
        parts, others = split(on_disk, [PAIR, ONE])
        assert others.num_rows == 0 and on_disk.num_rows <= 2 * sum(len(m) for m in model.values())
        shapes.add("folded" if on_disk.num_rows == sum(len(m) for m in model.values()) else "appended")
        for view in (PAIR, ONE):
            assert _content(parts[view.id], view) == model[view.id] == _content(of_view(on_disk, view), view)
            assert _content(held.read(view.id, {VIEWS: version + 1}), view) == model[view.id]
        only_pair, rest = split(on_disk, [PAIR])
        assert only_pair[PAIR.id].equals(parts[PAIR.id]) and _content(of_view(rest, ONE), ONE) == model[ONE.id]
        found = held.finder({VIEWS: store.version(VIEWS)})(PAIR.id, "v1", pa.array(["o1", "o2"]))
        assert _content(found, PAIR) == {k for k in model[PAIR.id] if k[1] in ("o1", "o2")}
    assert shapes == {"folded", "appended"}


def test_a_view_in_a_table_of_its_own_is_moved_in_once(tmp_path):
    store = DeltaRsStore(str(tmp_path))
    store.create(VIEWS, S.VIEWS)
    store.create(PAIR.id, view_schema(PAIR))
    # merge-on-read copies: (a, b) entered, left and entered again; (a, c) entered and left
    store.append(PAIR.id, _rows(PAIR, [("a", "b"), ("a", "c")], 1))
    store.append(PAIR.id, _rows(PAIR, [("a", "b"), ("a", "c")], -1))
    store.append(PAIR.id, _rows(PAIR, [("a", "b")], 1))
    legacy = store.read_arrow(PAIR.id)
    # a move interrupted after its append, before the old table was dropped: the next one only drops it
    adopt_legacy(store, [PAIR, ONE])
    store.create(PAIR.id, view_schema(PAIR))
    store.append(PAIR.id, legacy)
    assert adopt_legacy(store, [PAIR, ONE]) == [PAIR.id]
    assert not store.exists(PAIR.id)
    assert of_view(store.read_arrow(VIEWS), PAIR).to_pylist() == [{"v0": "a", "v1": "b", MULT: 1}]
    assert adopt_legacy(store, [PAIR, ONE]) == []
