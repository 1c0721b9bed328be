"""Exactly once: a crash between any two commits of a batch, then a re-run, leaves every table as an
uninterrupted run does (no lost and no doubled delta), windows emitted by the batch and aggregate
state and property-path state included."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pyarrow.compute as pc
import pytest

from pipelines.catalog import lookup
from pipelines.engine.windowed import read_state
from pipelines.ingest import ingest_paths
from pipelines.lake import BRONZE_TO_DONE, BatchLog
from pipelines.engine import held_bags
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.storage import delta_rs
from pipelines.storage.delta_rs import DeltaRsStore
from views.plan import compile_query
from views.sparql import parse_query

from .lakes import snapshot
from .streams import PREFIXES, Stream

QUERIES = {
    "chain": "SELECT ?x ?z WHERE { ?x ex:knows ?y . ?y ex:knows ?z }",
    "gated": "SELECT DISTINCT ?x ?t WHERE { ?x ex:type ?t . ?x ex:likes ?y . ex:a ex:knows ex:b }",
    # aggregate state: the touched groups' rows are read, old answer rows retracted, new ones inserted
    "counted": "SELECT ?x (COUNT(?y) AS ?n) (MIN(?y) AS ?first) WHERE { ?x ex:knows ?y } GROUP BY ?x "
               "HAVING (COUNT(?y) > 1)",
    # running sums (one group, linear aggregates): the sums' row is replaced, never the bag re-read
    "summed": "SELECT (COUNT(*) AS ?n) (SUM(?a) AS ?total) (AVG(?a) AS ?mean) WHERE { ?x ex:age ?a }",
    # a property path: the batch changes its witness forest (reach) and its pairs after its walk
    "reach": "SELECT ?x ?y WHERE { ?x (ex:knows|^ex:likes)+ ?y . ?y ex:type ex:Person }",
    # a chain of windowed queries: each window's constructed triples go to bronze (once) and feed
    # a windowed query; a batch of 40 s of events emits one or two 30 s windows, each its own output file
    "linked": "CONSTRUCT { ?x ex:linked ?z } FROM STREAM <urn:lakegraph:stream:default> [RANGE 30s TUMBLING] "
              "WHERE { ?x ex:knows ?y . ?y ex:knows ?z }",
    "reached": "SELECT ?x (COUNT(?z) AS ?n) FROM STREAM <urn:lakegraph:stream:linked> [RANGE 60s TUMBLING] "
               "WHERE { ?x ex:linked ?z } GROUP BY ?x",      # a windowed aggregate at the chain's end
}


class Crash(RuntimeError):
    pass


class EachCommit:
    """Mixed into a real store class: every kind of write a run makes goes through :meth:`_commit`,
    which gives whether it committed."""

    def _commit(self, write, *args) -> bool:
        return write(*args)

    def append(self, name, data, txn=None):
        return self._commit(super().append, name, data, txn)

    def merge_counts(self, name, data, keys, count, txn=None):
        return self._commit(super().merge_counts, name, data, keys, count, txn)

    def overwrite(self, name, data, txn=None):
        return self._commit(super().overwrite, name, data, txn)


class CrashAfter(EachCommit):
    """A store that dies right after its ``budget``-th commit (a crash between two commits)."""

    def __init__(self, root: str, spark, budget: int) -> None:
        super().__init__(root, spark)
        self.budget = budget
        self.commits = 0

    def _commit(self, write, *args) -> bool:
        committed = write(*args)
        if committed:
            self.commits += 1
            if self.commits >= self.budget:
                raise Crash(f"crash after commit {self.commits}")
        return committed


class CopiedAfterEachCommit(EachCommit, DeltaRsStore):
    """A real delta-rs store that copies its lake after each commit: the copy is what a crash right
    after that commit leaves on disk, so one run gives every crash point (rather than one run
    crashed at each). Its writes are serialised, so that each copy holds exactly the commits before
    it and none half done (a batch's writes run on threads)."""

    def __init__(self, root: str, spark, copies: Path) -> None:
        super().__init__(root, spark)
        self.copies: list[Path] = []
        self._to = copies
        self._serial = threading.Lock()

    def _commit(self, write, *args) -> bool:
        with self._serial:
            committed = write(*args)
            if committed:
                self.copies.append(self._to / f"after{len(self.copies) + 1}")
                shutil.copytree(self.root, self.copies[-1])
        return committed


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, no_spark):
    """A lake with the queries registered, one batch done, and two files waiting in bronze."""
    root = tmp_path_factory.mktemp("crash")
    lake = root / "lake"
    store = DeltaRsStore(str(lake), no_spark)
    stream = Stream(seed=11, batch_size=40)
    ingest_paths(store, [str(Stream.write(root / "l0.jsonl", stream.next_batch()))])
    for name, text in QUERIES.items():
        header = f"REGISTER STREAM {name} AS\n" if text.startswith("CONSTRUCT") else ""
        register(store, no_spark, compile_query(parse_query(header + PREFIXES + text, name), name))
    Runner(store, no_spark).run()
    for i in (1, 2):
        ingest_paths(store, [str(Stream.write(root / f"l{i}.jsonl", stream.next_batch()))])
    reference = root / "reference"
    shutil.copytree(lake, reference)
    Runner(DeltaRsStore(str(reference), no_spark), no_spark).run(max_rows=40)
    return lake, reference


@pytest.mark.parametrize("vectors", [False, True], ids=["rewritten", "merged-by-deletion-vectors"])
def test_a_crash_between_any_two_commits_then_rerun_equals_uninterrupted(prepared, no_spark, tmp_path, monkeypatch, vectors):
    """``vectors``: every consolidated table (gold, partial embeddings, bags) MERGEd by deletion
    vectors, as a table past ``REWRITE_MAX_ROWS`` is, in the crashed run and the re-run."""
    if vectors:
        monkeypatch.setattr(held_bags, "REWRITE_MAX_ROWS", -1)
        monkeypatch.setattr(delta_rs, "VECTOR_MERGE_ROWS", 0)
    lake, reference = prepared
    expected = snapshot(reference)
    run = tmp_path / "run"
    shutil.copytree(lake, run)
    store = CopiedAfterEachCommit(str(run), no_spark, tmp_path)
    Runner(store, no_spark).run(max_rows=40)
    assert snapshot(run) == expected
    for number, crashed in enumerate(store.copies, 1):
        Runner(DeltaRsStore(str(crashed), no_spark), no_spark).run(max_rows=40)
        assert snapshot(crashed) == expected, f"re-run after a crash at commit {number} differs"
    assert not vectors or list(run.glob("gold_*/deletion_vector_*.bin")), "no row was marked deleted"
    # two batches, each: plan row, views, partial embeddings, bag, gold, changes, and for the
    # windowed queries each window's chained output (bronze, ingest log), then once per batch their
    # state (views, buffer, progress), gold, changes, window log; the batches that read the chained output;
    # done rows
    assert len(store.copies) >= 30
    done = DeltaRsStore(str(reference))
    log = done.read_arrow("window_log")
    windows = log.filter(pc.equal(log["query"], "linked"))
    per_batch = [windows["batch"].to_pylist().count(b) for b in set(windows["batch"].to_pylist())]
    assert len(per_batch) >= 2 and max(per_batch) >= 2
    chained = [r for r in done.read_arrow("bronze").to_pylist() if r["stream"] == "urn:lakegraph:stream:linked"]
    assert chained and read_state(done, lookup(done, "reached").plan)["w_reached_buffer"].num_rows
    assert done.read_arrow("gold_counted").num_rows and done.read_arrow("gold_reached").num_rows
    path = compile_query(parse_query(PREFIXES + QUERIES["reach"], "reach"), "reach").paths[0]
    assert done.read_arrow(path.reach).num_rows and len(done.history(path.reach)) >= 3


def test_batches_cut_inside_a_bronze_version_read_its_rest_and_the_next_reads_only_new_versions(no_spark, tmp_path):
    """A batch that leaves rows of its last bronze version (``--max-rows``) says so, and the next
    reads that version again; one that takes them all lets the next read from the version after.
    The answers are those of one batch over everything either way."""
    stream = Stream(seed=5, batch_size=60)
    files = [Stream.write(tmp_path / f"b{i}.jsonl", stream.next_batch()) for i in (0, 1)]
    lakes, reads = {}, {}
    for how in ("cut", "whole"):
        store = DeltaRsStore(str(tmp_path / how), no_spark)
        feed = store.changes
        store.changes = lambda name, start, end=None, how=how: (reads.setdefault(how, []).append(start),
                                                                  feed(name, start, end))[1]
        register(store, no_spark, compile_query(parse_query(PREFIXES + QUERIES["chain"], "chain"), "chain"))
        ingest_paths(store, [str(files[0])])
        for _ in range(3 if how == "cut" else 1):     # one batch a run: the next run reads the rest
            Runner(store, no_spark).run(max_rows=25 if how == "cut" else None, max_batches=1)
        ingest_paths(store, [str(files[1])])
        Runner(store, no_spark).run()
        lakes[how] = BatchLog(store).records("done")
    cut, whole = lakes["cut"], lakes["whole"]
    first = cut[1].bronze_to
    assert [r.bronze_to for r in cut[1:-1]] == [first] * (len(cut) - 2) and len(cut) >= 4
    assert [r.stats[BRONZE_TO_DONE] for r in cut[1:]] == [False] * (len(cut) - 3) + [True, True]
    assert cut[-1].bronze_from == cut[-1].bronze_to == first + 1 == whole[-1].bronze_from
    assert cut[-1].seq_to == whole[-1].seq_to
    # the change feed is read from each cut batch's version, then from the one after it only
    assert reads["cut"] == [first] * 3 + [first + 1] and reads["whole"] == [first, first + 1]
    assert snapshot(tmp_path / "cut")["gold_chain"] == snapshot(tmp_path / "whole")["gold_chain"]
