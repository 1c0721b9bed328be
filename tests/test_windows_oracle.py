"""Windowed queries against pyoxigraph: for EVERY emitted window, the query's answers at that window
(its RStream as ``lakegraph answers --window`` reads it: gold at the version the window log names,
minus the answer changes of its batch's later windows) equal pyoxigraph evaluating
the same query, without its window clauses, over that window's content and the background graphs;
the window's answer changes (IStream +, DStream -) are the difference with the previous window.

The streams carry out-of-order events within the lateness, late events beyond it, deletes and
re-inserts inside windows, duplicates, events exactly on closes and opens, two streams with
different RANGEs, a background graph that changes, a long gap (a batch emitting many windows at
once), a query registered after data exists (its history replayed), and ``--flush`` at the end.
Which windows exist and what each holds comes from :mod:`tests.windows_model`, the semantics of
``docs/windows.md`` written independently of the engine.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timezone

import pyarrow.compute as pc
import pytest

from pipelines.answers import answers, changes as answer_changes, windows as window_log
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.ingest import ingest_paths
from pipelines.storage import open_store
from views.plan import compile_query
from views.sparql import parse_query

from .oracle import on_spark, oracle_bag, table_bag
from .streams import EX, PREFIXES, iri
from .windows_model import Message, Model

S1, S2, G = f"{EX}s1", f"{EX}s2", f"{EX}building"
STAMP = "PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>\n"
START = int(datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc).timestamp() * 1000)
ENTITIES = [iri(n) for n in "abcde"]

WHERES = {
    "star": "SELECT ?x ?y WHERE { ?x ex:type ex:Person . ?x ex:knows ?y }",
    "chain": "SELECT ?x ?y ?z WHERE { ?x ex:knows ?y . ?y ex:likes ?z }",
    "distinct": "SELECT DISTINCT ?y WHERE { ?x ex:knows ?y }",
    "ground": "ASK { ex:c ex:knows ex:b }",
    "filtered": "SELECT ?x ?n WHERE { ?x ex:age ?n FILTER(?n >= 25) }",
    "product": "SELECT ?x ?y WHERE { ?x ex:type ex:Course . ?y ex:likes ex:a }",
    "stamped": "SELECT ?x ?y ?t WHERE { ?x ex:knows ?y . ?y ex:likes ?z "
               "BIND(f:timestamp(?x, ex:knows, ?y) AS ?t) FILTER(f:timestamp(?y, ex:likes, ?z) >= ?t) }",
    "stamped_bg": "SELECT ?x (f:timestamp(?x, ex:type, ex:Person) AS ?t) WHERE { ?x ex:type ex:Person . "
                  "?x ex:knows ?y }",
    # CSRBench-style: an average of readings per sensor in each window, with a FILTER
    "avg": "SELECT ?x (AVG(?n) AS ?mean) (COUNT(?n) AS ?readings) WHERE { ?x ex:age ?n FILTER(?n > 10) } GROUP BY ?x",
    # one group: a row in every window, empty ones included (COUNT 0, AVG 0, MAX unbound)
    "reach": "SELECT ?x ?y WHERE { ?x (ex:knows|^ex:likes)+ ?y }",
    "reach_bg": "SELECT ?x WHERE { ?x ex:type ex:Person . ?x ex:knows*/ex:likes ex:a }",
    "overall": "SELECT (COUNT(*) AS ?n) (AVG(?a) AS ?mean) (MAX(?a) AS ?oldest) WHERE { ?x ex:age ?a . ?x ex:knows ?y }",
}
# C-SPARQL's timestamp() for pyoxigraph: each stream triple of a window also sits in the named graph
# <urn:ts:MS> of its timestamp (tests.windows_model), which an OPTIONAL GRAPH reads back.
_STAMP = 'BIND(STRDT(STRAFTER(STR(?{g}), "urn:ts:"), xsd:integer) AS ?{v})'
ORACLES = {
    "stamped": "SELECT ?x ?y ?t WHERE { ?x ex:knows ?y . ?y ex:likes ?z "
               "OPTIONAL { GRAPH ?g1 { ?x ex:knows ?y } } OPTIONAL { GRAPH ?g2 { ?y ex:likes ?z } } "
               f"{_STAMP.format(g='g1', v='t')} {_STAMP.format(g='g2', v='t2')} FILTER(?t2 >= ?t) }}",
    "stamped_bg": "SELECT ?x ?t WHERE { ?x ex:type ex:Person . ?x ex:knows ?y "
                  f"OPTIONAL {{ GRAPH ?g {{ ?x ex:type ex:Person }} }} {_STAMP.format(g='g', v='t')} }}",
}
# (query, window clauses, model); RANGEs differ per stream, one STEP, lateness 2 s for time windows
SLIDING = (f"FROM STREAM <{S1}> [RANGE 6s STEP 2s]\nFROM STREAM <{S2}> [RANGE 4s STEP 2s]\nFROM <{G}>",
           lambda: Model("time", {S1: 6000, S2: 4000}, step=2000, lateness=2000, graphs=(G,)), 2000)
TUMBLING = (f"FROM STREAM <{S1}> [RANGE 5s TUMBLING]\nFROM <{G}>",
            lambda: Model("time", {S1: 5000}, step=5000, lateness=2000, graphs=(G,)), 2000)
NOW = (f"FROM STREAM <{S2}> [NOW]\nFROM <{G}>", lambda: Model("now", {S2: 1}, graphs=(G,)), 0)
COUNT = (f"FROM STREAM <{S1}> [RANGE TRIPLES 6 STEP 4]\nFROM <{G}>",
         lambda: Model("count", {S1: 6}, step=4, graphs=(G,)), 0)
CASES = {
    "star_sliding": ("star", SLIDING), "chain_sliding": ("chain", SLIDING),
    "distinct_sliding": ("distinct", SLIDING), "ground_tumbling": ("ground", TUMBLING),
    "filtered_tumbling": ("filtered", TUMBLING), "product_now": ("product", NOW),
    "star_now": ("star", NOW), "chain_count": ("chain", COUNT), "distinct_count": ("distinct", COUNT),
    "stamped_sliding": ("stamped", SLIDING), "stamped_bg_count": ("stamped_bg", COUNT),
    "avg_tumbling": ("avg", TUMBLING), "overall_sliding": ("overall", SLIDING),
    "reach_sliding": ("reach", SLIDING), "reach_bg_count": ("reach_bg", COUNT),
}
LATE_REGISTERED = {"chain_sliding", "star_now"}       # registered after the first batch: history replayed
SPARK_CASES = ("stamped_sliding", "chain_count", "reach_sliding")   # the Spark engine runs a representative three


def _stream_triples() -> list[tuple[str, str, str]]:
    out = [(s, iri("knows"), o) for s in ENTITIES for o in ENTITIES]
    out += [(s, iri("likes"), o) for s in ENTITIES for o in ENTITIES if s != o]
    out += [(s, iri("age"), f'"{a}"^^<http://www.w3.org/2001/XMLSchema#integer>') for s in ENTITIES for a in (18, 30)]
    return out + [(s, iri("type"), iri("Person")) for s in ENTITIES[:2]]     # also in the background


BACKGROUND = [(s, iri("type"), t) for s in ENTITIES for t in (iri("Person"), iri("Course"))]


def generate(seed: int, batches: int) -> list[list[Message]]:
    """Seeded batches of messages on two streams and the background graph."""
    rng = random.Random(seed)
    pool = _stream_triples()
    clock, seq, out = START + 300, 0, []
    for b in range(batches):
        messages = []
        if b == 3:
            clock += 30_000                       # a long gap: one batch emits many (empty) windows
        if b:
            for stream in (S1, S2):               # surely late: 20 s behind the watermark
                seq += 1
                messages.append(Message(seq, stream, clock - 20_000, "+", pool[0]))
        for _ in range(28):
            clock += rng.choice([0, 250, 700, 1000, 1500])
            time, roll = clock, rng.random()
            if roll < 0.15:
                time -= rng.randint(1, 1800)     # out of order, within the lateness
            elif roll < 0.22 and b:
                time -= rng.randint(6000, 12000)  # late beyond it
            elif roll < 0.35:
                time -= time % 2000               # exactly on a close / an open
            stream = rng.choice([S1, S2])
            triple = rng.choice(pool[:12] if rng.random() < 0.5 else pool)   # hot triples: duplicates
            op = "-" if rng.random() < 0.25 else "+"
            seq += 1
            messages.append(Message(seq, stream, time, op, triple))
            if rng.random() < 0.1:                # delete then re-insert inside a window
                seq += 1
                messages.append(Message(seq, stream, time + 1, "-", triple))
                seq += 1
                messages.append(Message(seq, stream, time + 2, "+", triple))
        changes = BACKGROUND if b == 0 else rng.sample(BACKGROUND, 3)
        for triple in changes:
            seq += 1
            op = "+" if b == 0 or rng.random() < 0.5 else "-"
            messages.append(Message(seq, G, clock, op, triple))
        out.append(messages)
    return out


def _write(path, messages: list[Message]) -> str:
    lines = []
    for m in messages:
        time = datetime.fromtimestamp(m.time / 1000, timezone.utc).isoformat(timespec="milliseconds")
        lines.append(json.dumps({"op": m.op, "s": m.triple[0], "p": m.triple[1], "o": m.triple[2],
                                 "stream": m.stream, "time": time.replace("+00:00", "Z")}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _text(case: str) -> tuple[str, str]:
    """The registered text and the oracle's (the same query without its dataset clauses)."""
    query, (clauses, _, _) = CASES[case]
    where = WHERES[query]
    head, body = where.split(" WHERE ", 1) if " WHERE " in where else (where.split(" {", 1)[0], "{" + where.split(" {", 1)[1])
    return (f"REGISTER QUERY {case} AS\n{PREFIXES}{STAMP}{head}\n{clauses}\nWHERE {body}",
            PREFIXES + ORACLES.get(query, where))


def _replay(engine: str, root, spark):
    """Register the cases, ingest and run every batch on ``engine`` (``--flush`` at the end), and
    follow the model alongside: the windows each case should have emitted."""
    cases = SPARK_CASES if engine == "spark" else tuple(CASES)
    store = open_store(str(root / "lake"), spark, backend="delta-rs")
    batches = generate(seed=11, batches=6 if engine == "arrow" else 4)
    models = {case: CASES[case][1][1]() for case in cases}
    plans = {}
    expected: dict[str, list] = {case: [] for case in cases}

    def add(case: str) -> None:
        text, _ = _text(case)
        plans[case] = compile_query(parse_query(text, case), case, lateness_ms=CASES[case][1][2])
        register(store, spark, plans[case], engine=engine)

    for case in cases:
        if case not in LATE_REGISTERED:
            add(case)
    seen: list[Message] = []        # what bronze holds
    for i, messages in enumerate(batches):
        if i == 1:
            for case in cases:
                if case in LATE_REGISTERED:
                    add(case)
                    expected[case] += models[case].batch(seen)     # the history, as one batch
        ingest_paths(store, [_write(root / "landing" / f"b{i}.jsonl", messages)])
        seen += messages
        last = i == len(batches) - 1
        report = Runner(store, spark, engine=engine).run(flush=last)
        assert len(report.batches) == (2 if last else 1)
        for case in plans:
            expected[case] += models[case].batch(messages)
            if last:
                expected[case] += models[case].batch([], flush=True)
    return store, plans, models, expected


@pytest.fixture(scope="module")
def arrow_replay(tmp_path_factory, no_spark):
    return _replay("arrow", tmp_path_factory.mktemp("windows"), no_spark)


@pytest.fixture(scope="module")
def spark_replay(tmp_path_factory, spark):
    return _replay("spark", tmp_path_factory.mktemp("windows"), spark)


#: The replays a test takes through ``replay`` (conftest), one engine each.
ENGINES = ["arrow", on_spark("spark")]


def _log(store, case: str) -> list[dict]:
    keys = ["window", "open_ms", "close_ms", "answers", "gold_version"]
    return [{k: row[k] for k in keys} for row in window_log(store, case)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_window_equals_pyoxigraph_on_its_content_arrow(arrow_replay, case):
    _check_windows(arrow_replay, case)


@pytest.mark.parametrize("case", SPARK_CASES)
def test_every_window_equals_pyoxigraph_on_its_content_spark(spark_replay, case):
    _check_windows(spark_replay, case)


def _check_windows(replay, case: str) -> None:
    store, plans, models, expected = replay
    plan, (_, oracle_text) = plans[case], _text(case)
    log = _log(store, case)
    assert [(r["window"], r["open_ms"], r["close_ms"]) for r in log] == \
        [(w.number, w.open_ms, w.close_ms) for w in expected[case]], f"{case}: the windows emitted"
    assert len(log) >= 4
    previous: Counter = Counter()
    changes = answer_changes(store, case).to_pylist()
    answered = 0
    for row, window in zip(log, expected[case]):
        rstream = table_bag(answers(store, case, window=row["window"]), plan.projection)
        stamps = [(f"<urn:ts:{ms}>", triple) for triple, ms in window.stamps.items()]
        assert rstream == oracle_bag(oracle_text, window.graph, plan.projection, stamps), \
            f"{case}: window {window.number}"
        assert row["answers"] == sum(rstream.values())
        signed = Counter()
        for change in changes:
            if change["_window"] == window.number:
                assert change["_close_ms"] == window.close_ms
                signed[tuple(change[v] for v in plan.projection)] += \
                    change["_count"] if change["_sign"] == "+" else -change["_count"]
        wanted = Counter(rstream)
        wanted.subtract(previous)
        assert +signed == +wanted and -signed == -wanted, f"{case}: IStream/DStream of window {window.number}"
        previous, answered = rstream, answered + bool(rstream)
    assert answered, f"{case}: no window ever had an answer"


@pytest.mark.parametrize("replay", ENGINES, indirect=True)
def test_late_messages_are_counted_once_per_query(replay):
    store, plans, models, _ = replay
    from pipelines.engine.window_state import last_progress

    for case, plan in plans.items():
        assert last_progress(store, case).late == models[case].late, case
    assert any(models[c].late for c in plans if models[c].kind == "time")


@pytest.mark.parametrize("replay", ENGINES, indirect=True)
def test_state_is_pruned_to_what_future_windows_need(replay):
    """The buffer holds the messages of the last window's extent and later, nothing older."""
    store, plans, models, _ = replay
    from pipelines.engine.windowed import read_state
    from pipelines.lake import buffer_table

    for case, plan in plans.items():
        model = models[case]
        state = read_state(store, plan)
        buffer = (state[buffer_table(case)] if buffer_table(case) in state else store.read_arrow(buffer_table(case))).to_pylist()
        if model.kind == "count" or model.last_close is None:
            continue
        for row in buffer:
            assert row["pos"] >= model.last_close - model.ranges[row["stream"]], case
        assert len(buffer) < len(model.accepted), case


@pytest.mark.parametrize("case", ["reach_sliding", "reach_bg_count"])
def test_path_times_are_max_min_over_the_window_after_every_batch(arrow_replay, case):
    """Every reached (root, node, state) of a windowed path, after every batch, has as its time the
    largest over the paths reaching it of the smallest edge time (a triple's time in the window;
    none for a background-only triple), by brute force with networkx on the product graph of the
    batch's last window: for each time θ, descending, what the edges of time ≥ θ reach."""
    import networkx as nx

    from pipelines.engine.paths import FOREVER
    from pipelines.lake import BatchLog

    store, plans, models, expected = arrow_replay
    path = plans[case].paths[0]
    moves = path.automaton.table()
    windows = {w.number: w for w in expected[case]}
    log = window_log(store, case)
    checked, timed = 0, False
    for record in BatchLog(store).records("done"):
        numbers = [r["window"] for r in log if r["batch"] <= record.batch]
        if not numbers or path.reach not in record.versions:
            continue
        window = windows[max(numbers)]
        product = nx.DiGraph()
        for s, p, o in window.graph:
            ts = window.stamps.get((s, p, o), FOREVER)
            for (u, v, direction) in ((s, o, ">"), (o, s, "<")):
                for q in range(path.automaton.states):
                    nxt = moves.get((q, (p, direction)))
                    if nxt is not None:
                        old = product.get_edge_data((u, q), (v, nxt), {"ts": -1})["ts"]
                        product.add_edge((u, q), (v, nxt), ts=max(old, ts))
        rows = store.read_arrow(path.reach, record.versions[path.reach]).to_pylist()
        got: dict[str, dict] = {}
        for row in rows:
            got.setdefault(row["root"], {})[(row["node"], int(row["state"]))] = int(row["ts"]) if row["ts"] else FOREVER
        roots = {u for (u, q) in product.nodes if q == 0 and product.out_degree((u, 0))}
        if path.seed is None:
            assert set(got) == roots, f"{case}: the roots after batch {record.batch}"
        for root in got:
            want: dict = {}
            for theta in sorted({d["ts"] for *_, d in product.edges(data=True)}, reverse=True):
                sub = product.edge_subgraph([(a, b) for a, b, d in product.edges(data=True) if d["ts"] >= theta])
                if (root, 0) in sub:
                    for node in nx.descendants(sub, (root, 0)) - {(root, 0)}:
                        want.setdefault(node, theta)
            assert got[root] == want, f"{case}: max-min times of root {root} after batch {record.batch}"
            checked += 1
            timed |= any(ts != FOREVER for ts in want.values())
    assert checked >= 4 and timed


def _appended(store, plans) -> bool:
    """Whether the lake's window state table holds more rows than the batches read of its queries'
    states; it must hold at most twice as many, and their views and partial embeddings must read
    as Z-sets of positive multiplicities."""
    from pipelines.engine.window_state import stored_rows, zsets
    from pipelines.engine.windowed import read_state

    content = 0
    for plan in plans.values():
        state = read_state(store, plan)
        content += sum(t.num_rows for t in state.values())
        for name in zsets(plan):
            assert pc.all(pc.greater(state[name]["_mult"], 0), min_count=0).as_py(), name
    stored = stored_rows(store)
    assert stored <= 2 * content
    return stored > content


@pytest.mark.parametrize("replay", ENGINES, indirect=True)
def test_appended_state_stays_within_twice_its_content(replay):
    """The window state table is merge-on-read (the queries' views and partial embeddings Z-sets,
    their buffers, without background graphs, append-only with expiry at read): a batch appends,
    and the table is rewritten before its rows exceed twice what the batches read of it."""
    store, plans, _, _ = replay
    _appended(store, plans)


def test_the_one_pass_path_appends_changes(arrow_replay):
    store, plans, _, _ = arrow_replay
    assert _appended(store, plans), "the window state table holds no appended rows"
