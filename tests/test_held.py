"""The merge-on-read tables a run holds, views and path tables (pipelines/engine/held.py): appends
until the rows pass twice the content, then one consolidated rewrite; lookups by a column see the content
at the version held; a commit already made (a re-run) leaves nothing held. In process, no Spark."""
from __future__ import annotations

import pyarrow as pa

from pipelines.engine.arrow import consolidate
from pipelines.engine.held import HeldTables
from pipelines.storage import Txn
from pipelines.engine.zsets import binding_schema
from pipelines.storage.delta_rs import DeltaRsStore
from schemas.tables import MULT

SCHEMA = binding_schema(("v0", "v1"))
NAME = "p_test"


def _rows(pairs: list[tuple[str, str]], sign: int) -> pa.Table:
    return pa.table({"v0": [a for a, _ in pairs], "v1": [b for _, b in pairs], MULT: [sign] * len(pairs)},
                    schema=SCHEMA)


def _content(table: pa.Table) -> set[tuple[str, str]]:
    rows = consolidate(table, ["v0", "v1"]).to_pylist()
    assert all(r[MULT] == 1 for r in rows)
    return {(r["v0"], r["v1"]) for r in rows}


def _commit(store: DeltaRsStore, state: HeldTables, delta: pa.Table, batch: int) -> None:
    store.concurrently(state.writes({NAME: delta}, {NAME: store.version(NAME)}, Txn("test", batch)))


def _started(tmp_path) -> tuple[DeltaRsStore, set[tuple[str, str]]]:
    """A store whose table holds every pair (r0..r3, n0..n4), appended, and those pairs."""
    store = DeltaRsStore(str(tmp_path))
    store.create(NAME, SCHEMA)
    pairs = {(f"r{i}", f"n{j}") for i in range(4) for j in range(5)}
    store.append(NAME, _rows(sorted(pairs), 1))
    return store, pairs


def test_appends_then_folds_and_lookups_follow_the_content(tmp_path):
    store, pairs = _started(tmp_path)
    state = HeldTables(store)
    shapes = set()
    for batch in range(1, 8):
        gone = sorted(p for p in pairs if p[1] == f"n{batch % 5}" and p[0] != "r0")
        new = [(f"r{batch % 4}", f"m{batch}")]
        _commit(store, state, pa.concat_tables([_rows(gone, -1), _rows(new, 1)]), batch)
        pairs = (pairs - set(gone)) | set(new)
        stored = store.read_arrow(NAME)
        assert _content(stored) == pairs and stored.num_rows <= 2 * len(pairs)
        shapes.add("folded" if stored.num_rows == len(pairs) else "appended")
        found = state.finder({NAME: store.version(NAME)})(NAME, {"v0": pa.array(["r1", "r2"])})
        assert _content(found) == {p for p in pairs if p[0] in ("r1", "r2")}
        assert _content(state.read(NAME, {NAME: store.version(NAME)})) == pairs
    assert shapes == {"folded", "appended"}


def test_a_run_starting_after_a_fold_takes_its_rows_as_they_are_and_sums_only_the_appends(tmp_path, monkeypatch):
    """A new run (a new process) reads a table whose last fold left its rows apart from those
    appended since: the fold's rows become the held set's base as they are (nothing sums them),
    the appended ones its change, removals of the fold's rows and re-additions among them. After
    every batch such a run holds the content the batches made, and finds and counts rows by it."""
    import pipelines.engine.held as held_module

    summed = []
    monkeypatch.setattr(held_module, "consolidate", lambda rows, columns: summed.append(rows.num_rows) or
                        consolidate(rows, columns))
    store, pairs = _started(tmp_path)
    state = HeldTables(store)
    shapes = set()
    for batch in range(1, 12):
        gone = sorted(p for p in pairs if p[1] == f"n{batch % 5}" and p[0] != "r0")
        # and rows removed two batches before come back
        new = sorted({(f"r{batch % 4}", f"m{batch}")} | {(r, f"n{(batch + 2) % 5}") for r in ("r1", "r2", "r3")} - pairs)
        _commit(store, state, pa.concat_tables([_rows(gone, -1), _rows(new, 1)]), batch)
        pairs = (pairs - set(gone)) | set(new)
        version = store.version(NAME)
        other = DeltaRsStore(str(tmp_path))      # the new run's store: it holds no rows of its own writes
        folded, rest = other.read_folded(NAME, version)
        fresh = HeldTables(other)
        summed.clear()
        fresh._at(NAME, {NAME: version})
        if folded.num_rows:
            assert max(summed, default=0) <= rest.num_rows      # the fold's rows taken as they are
            shapes.add("folded, then appended" if rest.num_rows else "folded")
        assert _content(fresh.read(NAME, {NAME: version})) == pairs
        find = fresh.finder({NAME: version})
        assert _content(find(NAME, {"v0": pa.array(["r1", "r2"])})) == {p for p in pairs if p[0] in ("r1", "r2")}
        values = pa.array(sorted({b for _, b in pairs}))
        assert find.count(NAME, "v1", values).tolist() == [sum(b == v for _, b in pairs) for v in values.to_pylist()]
    assert shapes == {"folded", "folded, then appended"}


def test_threads_asking_for_tables_at_once_read_each_once_and_different_ones_side_by_side(tmp_path):
    """A step's threads ask for tables at the same moment: each table is read once, whoever asks
    first, and two different tables are read at the same time (the first batch of a run reads
    every path table; one lock for all of them made the walks wait for each other's reads)."""
    import threading
    import time
    from collections import Counter
    from concurrent.futures import ThreadPoolExecutor

    store = DeltaRsStore(str(tmp_path))
    tables = {"p_a": [("a", "x"), ("b", "y")], "p_b": [("a", "z")]}
    for name, pairs in tables.items():
        store.create(name, SCHEMA)
        store.append(name, _rows(pairs, 1))
    versions = {name: store.version(name) for name in tables}
    reads, reading, most = Counter(), [0], [0]
    count = threading.Lock()
    read = store.read_folded

    def slow_read(name, version=None):
        with count:
            reads[name] += 1
            reading[0] += 1
            most[0] = max(most[0], reading[0])
        time.sleep(0.2)
        try:
            return read(name, version)
        finally:
            with count:
                reading[0] -= 1
    store.read_folded = slow_read
    find = HeldTables(store).finder(versions)
    start = threading.Barrier(8)

    def ask(i: int) -> set:
        name = sorted(tables)[i % 2]
        start.wait()
        return _content(find(name, {"v0": pa.array(["a"])}))

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(ask, range(8)))
    assert got == [{("a", "x")}, {("a", "z")}] * 4
    assert reads == {"p_a": 1, "p_b": 1} and most[0] == 2


def test_a_commit_made_before_is_not_held(tmp_path):
    store = DeltaRsStore(str(tmp_path))
    store.create(NAME, SCHEMA)
    store.append(NAME, _rows([("a", "b"), ("a", "c")], 1))
    version = store.version(NAME)
    delta = _rows([("a", "d")], 1)
    _commit(store, HeldTables(store), delta, 1)
    rerun = HeldTables(store)
    store.concurrently(rerun.writes({NAME: delta}, {NAME: version}, Txn("test", 1)))   # skipped: made before
    assert store.version(NAME) == version + 1
    assert _content(rerun.read(NAME, {NAME: version + 1})) == {("a", "b"), ("a", "c"), ("a", "d")}


def test_an_indexed_set_follows_random_changes_across_rebases():
    """Removals of base rows and of rows added since, re-insertions of removed base rows and of
    removed rows added since, fresh rows, rows that cancel out within a change: after every
    change, the counts of rows gone equal the masks', and lookups by either column or
    both (whichever index finds fewer rows), the count of each value's rows in a column, and the
    whole content equal a set kept beside it, through several rebases (the base then being what
    the content was)."""
    import random

    from pipelines.engine.held import IndexedSet

    rng = random.Random(7)
    universe = [(f"s{i % 23}", f"o{i % 37}") for i in range(400)]
    model = set(rng.sample(universe, 150))
    held = IndexedSet(_rows(sorted(model), 1), len(model), 0)
    bases, kept_gone, last_gone, last_added = set(), 0, [], []
    for step in range(1, 120):
        present, absent = sorted(model), sorted(set(universe) - model)
        gone = rng.sample(present, min(len(present), rng.randint(0, 6)))
        added = rng.sample(absent, min(len(absent), rng.randint(0, 6)))
        # often a row the change before added (since the base, then) or removed
        gone += [row for row in last_added[:rng.randint(0, 2)] if row not in gone]
        added += [row for row in last_gone[:rng.randint(0, 2)] if row not in added]
        last_gone, last_added = gone, added
        # at times a row that comes and goes within the change (it sums to nothing)
        passing = rng.sample(absent, 1) if absent and rng.random() < 0.3 else []
        held = held.after(pa.concat_tables([_rows(gone, -1), _rows(passing, 1), _rows(added, 1), _rows(passing, -1)]))
        model = (model - set(gone)) | set(added)
        if id(held.base) not in bases and held.gone:
            kept_gone += 1      # a rebase that left the base rows gone in it, masked
        bases.add(id(held.base))
        assert _content(held.content()) == model
        # the counts of rows gone (the rebases' rule) are those the masks hold, and the size the model's
        assert held.gone == (0 if held.alive is None else int((~held.alive).sum()))
        assert held.new_gone == (0 if held.new_alive is None else int((~held.new_alive).sum()))
        assert held.size == len(model)
        wanted = [sorted({pair[index] for pair in rng.sample(universe, 12)}) for index in (0, 1)]
        for keys in ({"v0": wanted[0]}, {"v1": wanted[1]}, {"v0": wanted[0], "v1": wanted[1]},
                     {"v1": wanted[1], "v0": wanted[0]}):
            found = held.find({column: pa.array(values) for column, values in keys.items()})
            assert _content(found) == {p for p in model if all(p[int(c[1])] in v for c, v in keys.items())}
            assert found.num_rows == len(_content(found))       # each row once
        for index, values in enumerate(wanted):
            assert held.count(f"v{index}", pa.array(values)).tolist() == \
                [sum(pair[index] == value for pair in model) for value in values]
    assert len(bases) > 3 and kept_gone


def test_an_index_carried_over_a_rebase_finds_what_a_fresh_one_finds():
    """A rebase carries a column's index over (its rows kept, then the rows added since): after
    each, with new values arriving and old ones leaving until the index is rebuilt afresh, every
    lookup (a few values through a scan of its values until that has cost what hashing them
    does, then through the hash, carried over too; many the other way) gives the positions a
    scan of the column gives. So does the index it was carried over from (whose hash the
    later one extends), and one carried over from that index a second time, with other rows (a batch's
    commit made again)."""
    import random

    import numpy as np
    import pyarrow.compute as pc

    from pipelines.engine.lookup import Lookup

    rng = random.Random(3)

    def extend(lookup: Lookup, column: pa.Array, step: int) -> tuple[Lookup, pa.Array]:
        kept = np.array([rng.random() < 0.8 for _ in range(len(column))]) if step % 3 else None
        added = pa.array([f"x{rng.randrange(50 + 10 * step)}" for _ in range(rng.randrange(60))], pa.string())
        return (lookup.extended(kept, pa.chunked_array([added])),
                pa.concat_arrays([column if kept is None else column.filter(pa.array(kept)), added]))

    def check(lookup: Lookup, column: pa.Array, step: int) -> None:
        for few in (1, 3, 60):
            wanted = pa.array(sorted({f"x{rng.randrange(50 + 10 * step)}" for _ in range(few)}), pa.string())
            assert lookup.positions_of(lookup.codes_of(wanted)).tolist() == np.flatnonzero(
                pc.is_in(column, value_set=wanted).to_numpy(zero_copy_only=False)).tolist()
            assert lookup.counts(wanted).tolist() == [column.to_pylist().count(v) for v in wanted.to_pylist()]

    column = pa.array([f"x{rng.randrange(50)}" for _ in range(300)], pa.string())
    lookup = Lookup(column, buy=8)      # scanned through the first steps, hashed in later ones
    hashed = []
    for step in range(40):
        (later, later_column), before = extend(lookup, column, step), (lookup, column)
        check(later, later_column, step)
        check(*before, step)
        if step % 5 == 4:
            check(*extend(*before, step), step)
        lookup, column = later, later_column
        hashed.append(lookup._codes is not None)
    assert not hashed[0] and hashed[-1]
    # a hashed index extended twice: the second extension's values include the first's new ones
    lookup.extended(None, pa.chunked_array([pa.array(["y1", "y2", "y3"], pa.string())]))
    second = pa.array(["z1", "y3", "y2", "x1"], pa.string())
    twice, column = lookup.extended(None, pa.chunked_array([second])), pa.concat_arrays([column, second])
    for wanted in ("y3", "y2", "z1", "x1"):
        assert twice.positions_of(twice.codes_of(pa.array([wanted]))).tolist() == \
            np.flatnonzero(pc.equal(column, wanted).to_numpy(zero_copy_only=False)).tolist()


def test_an_index_hashes_its_values_after_the_scans_it_is_told():
    """A column's index scans its values for lookups of few of them ``buy`` times, then hashes
    them (a table read for one batch: two scans); with ``buy=0`` (a run's held tables, looked up
    at every batch) the first such lookup hashes them. Lookups of many values always scan."""
    from pipelines.engine.lookup import Lookup

    column = pa.array([f"x{i % 100}" for i in range(400)], pa.string())
    few, many = pa.array(["x1", "x2"]), pa.array([f"x{i}" for i in range(50)])
    for buy in (0, 2):
        lookup = Lookup(column, buy=buy)
        lookup.codes_of(many)
        assert lookup._codes is None
        for _ in range(buy):
            assert sorted(lookup.codes_of(few).tolist()) == [1, 2] and lookup._codes is None
        assert sorted(lookup.codes_of(few).tolist()) == [1, 2] and lookup._codes is not None


def test_a_table_read_whole_counts_each_values_rows_as_consolidated():
    """A table the run does not hold is looked up through indexes built over it as read
    (``lookup.finder``): its signed copies of a row sum first, so a row added twice and removed
    once counts once, one added and removed not at all, and a value no row holds counts 0."""
    from pipelines.engine.lookup import finder

    rows = pa.concat_tables([_rows([("a", "x"), ("a", "y"), ("b", "x"), ("c", "z")], 1),
                             _rows([("a", "x"), ("d", "z")], 1), _rows([("a", "x"), ("c", "z"), ("d", "z")], -1)])
    find = finder(lambda name: rows)
    assert find.count(NAME, "v0", pa.array(["a", "b", "c", "d", "e"])).tolist() == [2, 1, 0, 0, 0]
    assert find.count(NAME, "v1", pa.array(["x", "z"])).tolist() == [2, 0]
    assert _content(find(NAME, {"v0": pa.array(["a"])})) == {("a", "x"), ("a", "y")}
