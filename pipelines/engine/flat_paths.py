"""The step of a path view whose every match is one edge or none: `a|b`, `^a`, `a?`, `!(a|^b)`
(a sequence is several path views joined like triple patterns, so `(a|b)/c*` has one of these).

Its automaton moves only from the start, into states no move leaves, so each root's tree is flat:
a node ``(v, q)`` hangs off the root's start, with the latest time among the edges that move the
start to it. A node's entry therefore depends on the edges between the root and ``v`` alone. The
step finds the (root, vertex) pairs a changed edge joins, reads the reach rows of those pairs only,
and takes their entries after the step from the edges between the two (an inserted edge outside
windows needs none: the node is there, at no time), so that no tree is read whole and no walk
runs. The rows are those the general walk (:mod:`.paths`) keeps: it makes the backfill (the step
from nothing) and keeps the views this step leaves to it, those whose roots come from another
pattern's bindings (a root that comes or goes takes its whole tree) and simple paths.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from views.automata import BACKWARD, FORWARD
from views.path_views import PathDef

from .lookup import Find
from .path_edges import FOREVER, EdgeIndexes, Edges, tuples
from .path_reach import Entry, entries_of, pairs_table, reach_row, reach_table, reached

Moves = Mapping[tuple[int, tuple[str, str]], int]       # (state, symbol) -> next state


def is_flat(path: PathDef, moves: Moves) -> bool:
    """Whether :func:`flat_changes` maintains ``path``: moves only from the start, none into it,
    and every root a node or a constant (seeded roots and simple paths take the general walk)."""
    return all(state == 0 for state, _ in moves) and 0 not in moves.values() \
        and path.seed is None and not path.simple


def flat_changes(path: PathDef, moves: Moves, edges: Edges, deltas: Mapping[str, pa.Table], find: Find,
                 indexes: EdgeIndexes) -> dict[str, pa.Table]:
    """The changes of ``path``'s pairs and reach tables for the step's inserted and deleted
    ``edges`` (the graph after the step, loaded on demand; see the module text)."""
    finals = set(path.automaton.finals)
    stamped = path.stamped
    # the nodes a changed edge moves a root's start to, by (root, vertex): their entries may change
    keys: dict[tuple[str, str], set[int]] = defaultdict(set)
    fresh: dict[tuple[str, str], set[int]] = defaultdict(set)     # those an inserted edge reaches
    for triples, into in ((edges.inserted, fresh), (edges.deleted, None)):
        for s, p, o, _ in tuples(triples):
            sym = edges.symbol(p)
            for direction, root, vertex in ((FORWARD, s, o), (BACKWARD, o, s)):
                state = None if sym is None else moves.get((0, (sym, direction)))
                if state is not None and (path.root is None or root == path.root):
                    keys[(root, vertex)].add(state)
                    if into is not None:
                        into[(root, vertex)].add(state)
    # a zero-length pair comes and goes with its node's membership of the graph
    members = indexes.members(path.nodes, deltas.get(path.nodes), ("v0", "v2"), set()) \
        if path.nullable and path.root is None and path.nodes else {}
    for node, (was, now) in members.items():
        if was != now:
            keys.setdefault((node, node), set())
    if not keys:
        return {}
    before = _stored(find, path.reach, keys)
    # the pairs whose entries are counted again from the graph after the step: those only a
    # deleted edge joins, and under windows all (an inserted edge can raise a node's time); a
    # minimal automaton of one-edge matches moves its start to one state, so an inserted edge
    # leaves its pair's node there whatever else the step deleted
    recount = set(keys) if stamped else {key for key in keys if key not in fresh}
    after = _counted(moves, edges, recount)
    pairs: dict[tuple[str, str], int] = defaultdict(int)
    reach: list[tuple] = []
    for key in sorted(keys):
        root, vertex = key
        old = before.get(key, {})
        new = after.get(key, {}) if key in recount else {**old, **{q: ((root, 0), FOREVER) for q in fresh[key]}}
        for state in sorted(old.keys() | new.keys()):
            if old.get(state) != new.get(state):
                reach += [reach_row(root, (vertex, state), entry, sign)
                          for entry, sign in ((old.get(state), -1), (new.get(state), 1)) if entry is not None]
        was, now = members.get(vertex, (True, True)) if vertex == root else (False, False)
        zero = path.nullable and vertex == root
        had = bool(finals & old.keys()) or (zero and (path.root is not None or was))
        has = bool(finals & new.keys()) or (zero and (path.root is not None or now))
        if had != has:
            pairs[key] += 1 if has else -1
    kept = sorted(pair for pair, sign in pairs.items() if sign)
    return {path.id: pairs_table(path, [r for r, _ in kept], [v for _, v in kept], [pairs[k] for k in kept]),
            path.reach: reach_table(reach)}


def _stored(find: Find, reach: str, keys: Mapping[tuple[str, str], object]) -> dict[tuple[str, str], dict[int, Entry]]:
    """The reach rows of ``keys`` (root, vertex) as the step started: each one's nodes by state.
    Read by root, then picked in Arrow (a root's tree holds every other vertex it reaches too)."""
    rows = reached(find, reach, {root for root, _ in keys})
    wanted = pa.array(sorted(f"{root}\n{vertex}" for root, vertex in keys), pa.string())
    rows = rows.filter(pc.is_in(pc.binary_join_element_wise(rows["root"], rows["node"], "\n"), value_set=wanted))
    out: dict[tuple[str, str], dict[int, Entry]] = defaultdict(dict)
    for root, ((vertex, state), entry) in zip(rows["root"].to_pylist(), zip(*entries_of(rows))):
        out[(root, vertex)][state] = entry
    return out


def _counted(moves: Moves, edges: Edges, keys: set[tuple[str, str]]) -> dict[tuple[str, str], dict[int, Entry]]:
    """The entries of ``keys`` (root, vertex) after the step, from the edges between the two: per
    state the start moves to, the latest time of those edges (one lookup of the roots' edges)."""
    if not keys:
        return {}
    roots = sorted({root for root, _ in keys})
    codes = edges.terms.encode(roots)
    edges.load(codes)
    which, sym, dst, times = edges.out.gather(codes)
    targets = edges.terms.decode(dst).to_pylist()
    out: dict[tuple[str, str], dict[int, Entry]] = defaultdict(dict)
    for i, s, target, ts in zip(which.tolist(), sym.tolist(), targets, times.tolist()):
        root = roots[i]
        state = moves.get((0, edges.symbols[s]))
        if state is None or (root, target) not in keys:
            continue
        nodes = out[(root, target)]
        if state not in nodes or ts > nodes[state][1]:
            nodes[state] = ((root, 0), ts)
    return out

