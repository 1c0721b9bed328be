"""The path operator on hand-made steps: a pure expiry is a filter on max-min times, an explicit
deletion re-derives through another edge, and either way the state equals a rebuild from scratch;
and on random steps, after each of which the state equals a rebuild from scratch; a step too
large for its integer-coded nodes is refused, not wrapped around."""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from pipelines.engine.path_forest import check_bounds
from pipelines.engine.paths import TRIPLE_SCHEMA, PathOperator, _expiry, path_backfill, path_tables
from schemas.tables import MULT
from views.plan import compile_query
from views.sparql import parse_query

QUERY = ("REGISTER QUERY reach AS SELECT * FROM STREAM <http://e/s> [RANGE 10s STEP 1s] "
         "WHERE { <http://e/a> <http://e/p>+ ?y }")


def _edges(rows: list[tuple[str, str, int]], mult: int = 1) -> pa.Table:
    return pa.table({"v0": [f"<http://e/{s}>" for s, _, _ in rows], "v1": [f"<http://e/{o}>" for _, o, _ in rows],
                     "v2": [f'"{t}"^^<http://www.w3.org/2001/XMLSchema#integer>' for *_, t in rows],
                     MULT: [mult] * len(rows)})


def _state(path, view: str, graph: list) -> dict[str, pa.Table]:
    return path_backfill(path, lambda name: _edges(graph) if name == view else path_tables(path)[name].empty_table())


def _times(reach: pa.Table) -> dict:
    return {(r["node"][len("<http://e/"):-1], r["state"]): r["ts"] for r in reach.to_pylist()}


def test_expiry_is_a_filter_and_a_deletion_re_derives():
    path = compile_query(parse_query(QUERY), "reach").paths[0]
    assert path.stamped
    view = path.edges[0][1]
    # a -> b at 5, b -> c at 3, a -> c at 1: c is reached at time 3 (through b), not 1
    graph = [("a", "b", 5), ("b", "c", 3), ("a", "c", 1)]
    state = _state(path, view, graph)
    assert _times(state[path.reach]) == {("b", "1"): "5", ("c", "1"): "3"}

    def step(before: list, change: pa.Table) -> dict[str, pa.Table]:
        tables = {view: _edges(before), **_state(path, view, before)}
        return PathOperator(path).step(tables.__getitem__, {view: change})

    # the window slides past time 3: a -> c and b -> c go (every edge up to 3): c's time is 3, so c goes
    gone = _edges([("b", "c", 3), ("a", "c", 1)], -1)
    remaining = pa.Table.from_pylist([{"s": "<http://e/a>", "p": "<http://e/p>", "o": "<http://e/b>", "t": '"5"^^x'}],
                                     schema=TRIPLE_SCHEMA)
    def edges(*rows):
        return pa.Table.from_pylist([dict(zip("spot", row)) for row in rows], schema=TRIPLE_SCHEMA)
    assert _expiry(remaining, edges(), edges(("b", "p", "c", '"3"^^x'), ("a", "p", "c", '"1"^^x'))) == 3
    assert _expiry(remaining, edges(), edges(("b", "p", "c", '"3"^^x'))) == 3
    assert _expiry(remaining, edges(("a", "p", "d", '"2"^^x')), edges(("b", "p", "c", '"3"^^x'))) is None   # 2 stays
    assert _expiry(remaining, edges(), edges(("b", "p", "c", ""))) is None      # an edge without a time
    changed = step(graph, gone)
    assert changed[path.id].to_pylist() == [{"v0": "<http://e/c>", MULT: -1}]
    # an explicit deletion of b -> c alone: c is re-derived through a -> c, at time 1
    changed = step(graph, _edges([("b", "c", 3)], -1))
    assert path.id not in changed or not changed[path.id].num_rows
    reach = {tuple(r[c] for c in ("node", "state", "ts")): r[MULT] for r in changed[path.reach].to_pylist()}
    assert reach == {("<http://e/c>", "1", "3"): -1, ("<http://e/c>", "1", "1"): 1}


WINDOWED = "REGISTER QUERY r AS SELECT * FROM STREAM <http://e/s> [RANGE 10s STEP 1s] WHERE {{ {} }}"
RANDOM_QUERIES = {
    "windowed_plus": WINDOWED.format("?x <http://e/p>+ ?y"),
    "windowed_both_ways_star": WINDOWED.format("?x (<http://e/p>|^<http://e/p>)* ?y"),
    "windowed_constant_start": WINDOWED.format("<http://e/a> (<http://e/p>/<http://e/p>)+ ?y"),
    "plus": "SELECT * WHERE { ?x <http://e/p>+ ?y }",
    "there_and_back_star": "SELECT * WHERE { ?x (<http://e/p>/^<http://e/p>)* ?y }",
    # one-edge paths (pipelines/engine/flat_paths.py): no walk, the same rows
    "windowed_either_way": WINDOWED.format("?x (<http://e/p>|^<http://e/p>) ?y"),
    "constant_start_optional": "SELECT * WHERE { <http://e/a> (^<http://e/p>)? ?y }",
    "optional": "SELECT * WHERE { ?x <http://e/p>? ?y }",
}

FLAT = {"windowed_either_way", "constant_start_optional", "optional"}


def _rows(columns: dict[str, list], mult: int) -> pa.Table:
    columns = {**columns, MULT: [mult] * len(next(iter(columns.values())))}
    return pa.table(columns, schema=pa.schema([(c, pa.int64() if c == MULT else pa.string()) for c in columns]))


def _view(edges: list[tuple[str, str, int]], mult: int, stamped: bool, every_triple: bool = False) -> pa.Table:
    """Edges as the rows of their predicate's view (s, o), or of the view of every triple (s, p,
    o), with the time in the window after them when ``stamped``."""
    ends = {"v0": [f"<http://e/{s}>" for s, _, _ in edges]}
    if every_triple:
        ends |= {"v1": ["<http://e/p>"] * len(edges), "v2": [f"<http://e/{o}>" for _, o, _ in edges]}
    else:
        ends |= {"v1": [f"<http://e/{o}>" for _, o, _ in edges]}
    if stamped:
        ends[f"v{len(ends)}"] = [f'"{t}"^^<http://www.w3.org/2001/XMLSchema#integer>' for *_, t in edges]
    return _rows(ends, mult)


def _content(table: pa.Table, left_out: tuple[str, ...] = ()) -> Counter:
    bag: Counter = Counter()
    for row in table.to_pylist():
        mult = row.pop(MULT)
        bag[tuple(sorted((k, v) for k, v in row.items() if k not in left_out))] += mult
    return +bag


@pytest.mark.parametrize("name", sorted(RANDOM_QUERIES))
def test_random_steps_leave_the_state_a_rebuild_would_give(name):
    """Random steps of edge inserts and explicit deletes among six nodes (cycles and self-loops
    come and go; under a window each edge has a random time, so later edges raise max-min times,
    and deletions are rarely a pure expiry): after every step, the path view and the reach rows
    (each reached node with its max-min time; the witness parents may differ) equal a rebuild from
    scratch on the graph after the step."""
    path = compile_query(parse_query(RANDOM_QUERIES[name]), "r").paths[0]
    view, tables = path.edges[0][1], path_tables(path)
    assert {v for _, v in path.edges} == {view} and path.seed is None

    def tables_of(edges: list, mult: int = 1) -> dict[str, pa.Table]:
        views = {view: _view(edges, mult, path.stamped)}
        return views | ({path.nodes: _view(edges, mult, path.stamped, every_triple=True)} if path.nodes else {})

    checked = 0
    for seed in range(40):
        rng = random.Random(seed)
        graph: dict[tuple[str, str], int] = {}

        def rebuild() -> dict[str, pa.Table]:
            views = tables_of([(s, o, ts) for (s, o), ts in graph.items()])
            return path_backfill(path, lambda t: views[t] if t in views else tables[t].empty_table())

        state = rebuild()
        for _ in range(8):
            before = [(s, o, ts) for (s, o), ts in graph.items()]
            inserted, deleted = [], []
            for _ in range(rng.randint(1, 4)):
                s, o = rng.choice("abcdef"), rng.choice("abcdef")
                if any((s, o) == (a, b) for a, b, _ in inserted + deleted):
                    continue                      # a view's change holds an edge once
                if (s, o) in graph and rng.random() < 0.5:
                    deleted.append((s, o, graph.pop((s, o))))
                elif (s, o) not in graph:
                    graph[(s, o)] = rng.randint(1, 6) if path.stamped else 0
                    inserted.append((s, o, graph[(s, o)]))
            change = {t: pa.concat_tables([rows, tables_of(deleted, -1)[t]]) for t, rows in tables_of(inserted).items()}
            out = PathOperator(path).step({**tables_of(before), **state}.__getitem__, change)
            state = {t: pa.concat_tables([rows, out[t].cast(rows.schema)]) if t in out else rows
                     for t, rows in state.items()}
            expected = rebuild()
            for table, rows in state.items():
                left_out = ("parent", "pstate") if table == path.reach else ()
                assert _content(rows, left_out) == _content(expected[table], left_out), f"{name}: seed {seed}"
            checked += 1
    assert checked == 320
    assert PathOperator(path).flat == (name in FLAT)


def test_a_step_beyond_its_node_keys_bits_is_refused():
    """A node key packs (root, node, state) into one integer: a step numbering 2**27 vertices, or
    an automaton of 256 states, would make keys of different nodes collide, so it stops with a
    one-line reason instead."""
    class Terms:
        def __init__(self, n: int) -> None:
            self.n = n

        def __len__(self) -> int:
            return self.n

    check_bounds(Terms((1 << 27) - 1), 255)
    with pytest.raises(ValueError, match="exceeds the node keys"):
        check_bounds(Terms(1 << 27), 3)
    with pytest.raises(ValueError, match="exceeds the node keys"):
        check_bounds(Terms(10), 256)


@pytest.mark.parametrize("hashes", ["real", "colliding"])
def test_terms_decode_what_they_encoded_between_rounds(hashes, monkeypatch):
    """A walk numbers new vertices (some more than once) in a round and decodes between rounds:
    each number gives back its string, whether it came from a list or from an Arrow column (nulls
    too), numbered in the order they were first met. Strings are found by hash, so with a hash of
    four values (every string colliding with many) they must still be told apart by value."""
    from pipelines.engine import path_edges
    from pipelines.engine.path_edges import Terms
    from pipelines.string_index import string_hashes

    if hashes == "colliding":
        monkeypatch.setattr(path_edges, "string_hashes", lambda values: string_hashes(values) % np.uint64(4))
    terms, seen = Terms(), []
    rng = random.Random(3)
    for _ in range(40):
        for _ in range(rng.randint(1, 3)):
            values = [f"<http://e/{rng.randrange(rng.choice([8, 300]))}>" for _ in range(rng.randint(0, 12))]
            if rng.random() < 0.5:
                values = [v if rng.random() < 0.9 else None for v in values]
                numbers = terms.encode(pa.array(values, pa.string()))
            else:
                numbers = terms.encode(values)
            seen += zip(numbers.tolist(), values)
        asked = rng.sample(seen, min(len(seen), 10))
        assert terms.decode(pa.array([n for n, _ in asked]).to_numpy()).to_pylist() == [v for _, v in asked]
    assert len(terms) == len({v for _, v in seen})
    first = {}
    for number, value in seen:
        first.setdefault(value, number)
    assert sorted(first.values()) == list(first.values()) == list(range(len(terms)))
