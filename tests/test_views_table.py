"""Every view in one table (pipelines/engine/views_table.py): a batch's changes to all views are one
commit, appended or folded; lookups see each view's own content; a view kept in a table of its own
(an earlier layout) is moved in once, even when the move is interrupted. In process, no Spark."""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa

from pipelines.engine.arrow import consolidate
from pipelines.engine.held import HeldTables
from pipelines.engine.views import view_schema
from pipelines.engine.views_table import adopt_legacy, split, stored
from pipelines.lake import VIEWS
from pipelines.storage import Txn
from pipelines.storage.delta_rs import DeltaRsStore
from schemas import tables as S
from schemas.tables import MULT
from views.plan import ViewDef

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LANDING = ["01_initial.nt", "02_enrolments.rdfp", "03_updates.jsonl", "04_semester2.rdfp"]
QUERIES = ("classmates", "teaching")
PAIR = ViewDef(id="v_pair", canonical="?v0 <http://e/p> ?v1", s=None, p="<http://e/p>", o=None,
               columns=("v0", "v1"), positions=(("s", "v0"), ("o", "v1")), filter_sql=None)
STILL = ViewDef(id="v_still", canonical="?v0 <http://e/r> ?v1", s=None, p="<http://e/r>", o=None,
                columns=("v0", "v1"), positions=(("s", "v0"), ("o", "v1")), filter_sql=None)
ONE = ViewDef(id="v_one", canonical="?v0 <http://e/q> <http://e/c>", s=None, p="<http://e/q>", o="<http://e/c>",
              columns=("v0",), positions=(("s", "v0"),), filter_sql=None)


def _rows(view: ViewDef, keys: list[tuple[str, ...]], sign: int) -> pa.Table:
    return pa.table({c: [k[i] for k in keys] for i, c in enumerate(view.columns)} | {MULT: [sign] * len(keys)},
                    schema=view_schema(view))


def of_view(rows: pa.Table, view: ViewDef) -> pa.Table:
    """The views table's rows of ``view``, in its own shape."""
    return split(rows, [view])[0][view.id]


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
    # a view no batch changes, its rows a copy entered, left and entered again: kept through folds
    still = {(f"s{i}", f"o{i}") for i in range(5)}
    store.append(VIEWS, pa.concat_tables([stored(STILL.id, _rows(STILL, sorted(still), sign)) for sign in (1, -1, 1)]))
    held = HeldTables(store)
    held.track([PAIR, ONE, STILL])
    # another process holding the views (an executor's task): follows the appends by their rows alone
    follower = HeldTables(DeltaRsStore(str(tmp_path)))
    follower.track([PAIR, ONE, STILL])
    for view in (PAIR, ONE):
        assert _content(follower.read(view.id, {VIEWS: store.version(VIEWS)}), view) == model[view.id]
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
        parts, others = split(on_disk, [PAIR, ONE, STILL])
        content = sum(len(m) for m in model.values()) + len(still)
        # a view no batch looked at counts by its stored rows (3 copies of each row) until a fold
        assert others.num_rows == 0 and on_disk.num_rows <= 2 * (content + 2 * len(still))
        assert _content(parts[STILL.id], STILL) == still
        shapes.add("folded" if on_disk.num_rows == content else "appended")
        read = follower.store.reads.file_rows
        for view in (PAIR, ONE):
            assert _content(parts[view.id], view) == model[view.id]
            assert _content(held.read(view.id, {VIEWS: version + 1}), view) == model[view.id]
            assert _content(follower.read(view.id, {VIEWS: version + 1}), view) == model[view.id]
        folded = on_disk.num_rows == content    # a fold is read whole, an append by its rows alone
        expected = on_disk.num_rows if folded else sum(d.num_rows for d in deltas.values())
        assert follower.store.reads.file_rows - read == expected
        only_pair, rest = split(on_disk, [PAIR])
        assert only_pair[PAIR.id].equals(parts[PAIR.id]) and _content(of_view(rest, ONE), ONE) == model[ONE.id]
        found = held.finder({VIEWS: store.version(VIEWS)})(PAIR.id, {"v1": pa.array(["o1", "o2"])})
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
    adopt_legacy(store, [PAIR, ONE], {})
    store.create(PAIR.id, view_schema(PAIR))
    store.append(PAIR.id, legacy)
    assert adopt_legacy(store, [PAIR, ONE], {}) == [PAIR.id]
    assert not store.exists(PAIR.id)
    assert of_view(store.read_arrow(VIEWS), PAIR).to_pylist() == [{"v0": "a", "v1": "b", MULT: 1}]
    assert adopt_legacy(store, [PAIR, ONE], {}) == []


def test_a_view_is_moved_in_at_the_version_an_interrupted_batch_read(tmp_path):
    """A batch interrupted on the earlier layout is re-run from the versions it recorded: the view
    moved in is the view at that version, not what the interrupted batch had appended since."""
    store = DeltaRsStore(str(tmp_path))
    store.create(VIEWS, S.VIEWS)
    store.create(PAIR.id, view_schema(PAIR))
    store.append(PAIR.id, _rows(PAIR, [("a", "b"), ("a", "c")], 1))
    recorded = store.version(PAIR.id)
    store.append(PAIR.id, _rows(PAIR, [("a", "c")], -1), Txn("lakegraph-batch", 7))    # the interrupted batch's
    assert adopt_legacy(store, [PAIR], {PAIR.id: recorded}) == [PAIR.id]
    assert _content(of_view(store.read_arrow(VIEWS), PAIR), PAIR) == {("a", "b"), ("a", "c")}


def test_a_lake_of_the_earlier_layout_runs_on_as_one_that_never_had_it(tmp_path, spark):  # noqa: ARG001
    """The example's first two files run, the lake's views put back as tables of their own (the
    layout before the views table), the other two files run: the answers are those of a lake that
    ran all four on the views table, and the old tables are gone."""
    from pipelines import cli
    from pipelines.answers import answers
    from pipelines.catalog import distinct_views, registered

    def lakegraph(lake: str, *argv: str) -> None:
        assert cli.main(["--lake", lake, *argv]) == 0

    def feed(lake: str, files: list[str]) -> None:
        for name in files:
            lakegraph(lake, "ingest", str(EXAMPLES / "landing" / name))
        lakegraph(lake, "run")

    def sorted_answers(lake: str, query: str) -> pa.Table:
        rows = answers(DeltaRsStore(lake), query)
        return rows.sort_by([(c, "ascending") for c in rows.column_names])

    straight, legacy = str(tmp_path / "straight"), str(tmp_path / "legacy")
    for lake in (straight, legacy):
        lakegraph(lake, "init")
        for query in QUERIES:
            lakegraph(lake, "register", str(EXAMPLES / "queries" / f"{query}.rq"))
    feed(straight, LANDING)
    feed(legacy, LANDING[:2])
    store = DeltaRsStore(legacy)
    rows, views = store.read_arrow(VIEWS), distinct_views([q.plan for q in registered(store)])
    for view in views:
        store.create(view.id, view_schema(view))
        store.append(view.id, of_view(rows, view))
    store.delete(VIEWS)
    feed(legacy, LANDING[2:])
    assert not any(DeltaRsStore(legacy).exists(v.id) for v in views)
    for query in QUERIES:
        assert sorted_answers(legacy, query).equals(sorted_answers(straight, query))
