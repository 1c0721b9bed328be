"""The path operator on hand-made steps: a pure expiry is a filter on max-min times, an explicit
deletion re-derives through another edge, and either way the state equals a rebuild from scratch."""
from __future__ import annotations

import pyarrow as pa

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
    assert _expiry(remaining, [], [("b", "p", "c", '"3"^^x'), ("a", "p", "c", '"1"^^x')]) == 3
    assert _expiry(remaining, [], [("b", "p", "c", '"3"^^x')]) == 3
    assert _expiry(remaining, [("a", "p", "d", '"2"^^x')], [("b", "p", "c", '"3"^^x')]) is None   # 2 stays
    changed = step(graph, gone)
    assert changed[path.id].to_pylist() == [{"v0": "<http://e/c>", MULT: -1}]
    # an explicit deletion of b -> c alone: c is re-derived through a -> c, at time 1
    changed = step(graph, _edges([("b", "c", 3)], -1))
    assert path.id not in changed or not changed[path.id].num_rows
    reach = {tuple(r[c] for c in ("node", "state", "ts")): r[MULT] for r in changed[path.reach].to_pylist()}
    assert reach == {("<http://e/c>", "1", "3"): -1, ("<http://e/c>", "1", "1"): 1}
