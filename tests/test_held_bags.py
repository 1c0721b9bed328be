"""The consolidated tables a run holds, gold, partial embeddings and bags
(pipelines/engine/held_bags.py): rewritten whole from memory (MERGEd once they are large), each
batch must leave exactly what a Delta MERGE of its change (the way they were written before, the
store's ``merge_counts``) leaves: one row per distinct row with its multiplicity, none that
cancelled out, unbound values as keys. A commit already made (a re-run after a crash) is skipped and
leaves nothing held. In process, no Spark."""
from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from pipelines.engine import held_bags
from pipelines.engine.held_bags import HeldBags
from pipelines.engine.zsets import binding_schema
from pipelines.storage import Txn
from pipelines.storage.delta_rs import DeltaRsStore
from schemas.tables import MULT

SCHEMA = binding_schema(("x", "t"), nullable=("t",))
HELD, MERGED = "gold_held", "gold_merged"


def _rows(rows: list[tuple[str, str | None, int]]) -> pa.Table:
    return pa.table({"x": [x for x, _, _ in rows], "t": [t for _, t, _ in rows], MULT: [m for _, _, m in rows]},
                    schema=SCHEMA)


def _bag(table: pa.Table) -> Counter:
    rows = table.to_pylist()
    assert len({(r["x"], r["t"]) for r in rows}) == len(rows), "consolidated: one row per distinct row"
    assert all(r[MULT] > 0 for r in rows)
    return Counter({(r["x"], r["t"]): r[MULT] for r in rows})


@pytest.mark.parametrize("largest", [held_bags.REWRITE_MAX_ROWS, 20], ids=["rewritten", "merged_once_large"])
def test_each_batch_leaves_what_a_merge_of_its_change_leaves(tmp_path, monkeypatch, largest):
    monkeypatch.setattr(held_bags, "REWRITE_MAX_ROWS", largest)
    store = DeltaRsStore(str(tmp_path))
    for name in (HELD, MERGED):
        store.create(name, SCHEMA)
    rng = random.Random(3)
    values = [(f"<x{i}>", t) for i in range(12) for t in ('"1"', '"2"', None)]
    held, expected = HeldBags(store), Counter()
    for batch in range(1, 12):
        change = Counter()
        for key in rng.sample(values, 8):
            # remove some or all of a present row's copies, or add copies of any row
            change[key] = -rng.randint(1, expected[key]) if expected[key] and rng.random() < 0.5 else rng.randint(1, 3)
        delta = _rows([(x, t, m) for (x, t), m in change.items()])
        txn = Txn("test", batch)
        store.concurrently(held.writes({HELD: delta}, {HELD: store.version(HELD)}, txn))
        store.merge_counts(MERGED, delta, ["x", "t"], MULT, txn)
        expected.update(change)
        expected = +expected
        assert _bag(store.read_arrow(HELD)) == _bag(store.read_arrow(MERGED)) == expected, batch
    assert any(t is None for _, t in expected) and len(expected) > 10


def test_a_commit_made_before_is_not_held(tmp_path):
    store = DeltaRsStore(str(tmp_path))
    store.create(HELD, SCHEMA)
    store.append(HELD, _rows([("<a>", None, 2), ("<b>", '"1"', 1)]))
    version = store.version(HELD)
    delta = _rows([("<a>", None, -1), ("<c>", '"2"', 1)])
    store.concurrently(HeldBags(store).writes({HELD: delta}, {HELD: version}, Txn("test", 1)))
    rerun = HeldBags(store)
    store.concurrently(rerun.writes({HELD: delta}, {HELD: version}, Txn("test", 1)))   # skipped: made before
    assert store.version(HELD) == version + 1
    store.concurrently(rerun.writes({HELD: _rows([("<b>", '"1"', -1)])}, {HELD: version + 1}, Txn("test", 2)))
    assert _bag(store.read_arrow(HELD)) == Counter({("<a>", None): 1, ("<c>", '"2"'): 1})
