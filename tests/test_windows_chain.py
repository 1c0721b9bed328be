"""A network of continuous queries: a ``REGISTER STREAM`` CONSTRUCT whose windows' triples become a
stream that a second windowed query reads, end to end against pyoxigraph. The upstream output is
what pyoxigraph's CONSTRUCT makes of each upstream window (stamped with the window's close, appended
once), and every downstream window's answers are pyoxigraph's over that stream's window content."""
from __future__ import annotations

from collections import Counter

import pytest

from pipelines.answers import answers, windows
from pipelines.engine.register import register
from pipelines.engine.runner import Runner, flush_order
from pipelines.ingest import ingest_paths
from pipelines.storage import open_store
from views.plan import compile_query
from views.sparql import parse_query

from .oracle import oracle_bag, oxigraph_store, table_bag
from .streams import PREFIXES
from .test_windows_oracle import S1, _write, generate
from .windows_model import Message, Model

LINKS = "urn:lakegraph:stream:links"
UPSTREAM = (f"REGISTER STREAM links AS\n{PREFIXES}CONSTRUCT {{ ?x ex:linked ?z }}\n"
            f"FROM STREAM <{S1}> [RANGE 6s STEP 2s]\nWHERE {{ ?x ex:knows ?y . ?y ex:likes ?z }}")
DOWNSTREAM_WHERE = "SELECT ?x ?w WHERE { ?x ex:linked ?z . ?z ex:linked ?w }"
DOWNSTREAM = (f"REGISTER QUERY reach AS\n{PREFIXES}SELECT ?x ?w\nFROM STREAM <{LINKS}> [RANGE 4s TUMBLING]\n"
              "WHERE { ?x ex:linked ?z . ?z ex:linked ?w }")


class Chain:
    """The two models, batch by batch as the runner takes them: a file's batch, then a batch for the
    upstream output it appended (``run`` drains bronze), and at the end the flush levels."""

    def __init__(self) -> None:
        self.up = Model("time", {S1: 6000}, step=2000, lateness=2000)
        self.down = Model("time", {LINKS: 4000}, step=4000)
        self.seq = 10**9                     # generated messages come after the landing files'
        self.output: list[Message] = []
        self.windows = []

    def batch(self, messages: list[Message], flush: tuple[str, ...] = ()) -> list[Message]:
        out = []
        for window in self.up.batch(messages, flush="links" in flush):
            store = oxigraph_store(window.graph)
            result = store.query(PREFIXES + "CONSTRUCT { ?x ex:linked ?z } WHERE { ?x ex:knows ?y . ?y ex:likes ?z }")
            for triple in sorted({(str(t.subject), str(t.predicate), str(t.object)) for t in result}):
                self.seq += 1
                out.append(Message(self.seq, LINKS, window.close_ms, "+", triple))
        self.windows += self.down.batch(messages, flush="reach" in flush)
        self.output += out
        return out

    def run(self, messages: list[Message], flush: bool) -> None:
        pending = self.batch(messages)
        while pending:
            pending = self.batch(pending)
        for level in ([("links",), ("reach",)] if flush else []):
            pending = self.batch([], flush=level)
            while pending:
                pending = self.batch(pending)


@pytest.fixture(scope="module")
def chain(tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("chain")
    store = open_store(str(root / "lake"), spark, backend="delta-rs")
    plans = [compile_query(parse_query(UPSTREAM, "links"), "links", lateness_ms=2000),
             compile_query(parse_query(DOWNSTREAM, "reach"), "reach")]
    for plan in plans:
        register(store, spark, plan)
    model = Chain()
    batches = generate(seed=5, batches=4)
    for i, messages in enumerate(batches):
        ingest_paths(store, [_write(root / "landing" / f"b{i}.jsonl", messages)])
        last = i == len(batches) - 1
        Runner(store, spark).run(flush=last)
        model.run(messages, last)
    return store, plans, model


def test_the_flush_runs_upstream_before_downstream(chain):
    _, plans, _ = chain
    assert flush_order(plans) == [["links"], ["reach"]]


def test_each_upstream_window_appends_its_constructed_triples_once(chain, spark):
    store, _, model = chain
    bronze = store.read_arrow("bronze").to_pylist()
    got = Counter((r["s"], r["p"], r["o"], int(r["event_time"].timestamp() * 1000))
                  for r in bronze if r["stream"] == LINKS)
    expected = Counter((*m.triple, m.time) for m in model.output)
    assert got == expected and len(expected) >= 5
    Runner(store, spark).run(flush=True)          # a re-run and another flush append nothing
    assert sum(1 for r in store.read_arrow("bronze").to_pylist() if r["stream"] == LINKS) == len(model.output)


def test_every_downstream_window_equals_pyoxigraph_on_the_chained_stream(chain):
    store, plans, model = chain
    log = windows(store, "reach")
    assert [(r["window"], r["close_ms"]) for r in log] == [(w.number, w.close_ms) for w in model.windows]
    answered = 0
    for row, window in zip(log, model.windows):
        rstream = table_bag(answers(store, "reach", window=row["window"]), ("x", "w"))
        assert rstream == oracle_bag(PREFIXES + DOWNSTREAM_WHERE, window.graph, ("x", "w")), window.number
        answered += bool(rstream)
    assert answered >= 2 and len(log) >= 4
