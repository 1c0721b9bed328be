"""The step of a path view whose every match is one edge or none: `a|b`, `^a`, `a?`, `!(a|^b)`
(a sequence is several path views joined like triple patterns, so `(a|b)/c*` has one of these).

Its automaton moves only from the start, into states no move leaves, so each root's tree is flat:
a node ``(v, q)`` hangs off the root's start, with the latest time among the edges that move the
start to it. A node's entry therefore depends on the edges between the root and ``v`` alone. The
step finds the (root, vertex) pairs a changed edge joins, reads the reach rows of those pairs
(looked up by root, then picked), and takes their entries after the step from the edges between
the two (an inserted edge outside windows needs none: the node is there, at no time), so that no
walk runs; pairs and nodes are integer-coded arrays, as in the walk (:mod:`.path_forest`). The
rows are those the general walk (:mod:`.paths`) keeps: it makes the backfill (the step from
nothing) and keeps the views this step leaves to it, those whose roots come from another
pattern's bindings (a root that comes or goes takes its whole tree) and simple paths.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from views.path_views import PathDef

from ..sorted_sets import distinct, isin, union
from .lookup import Find
from .path_edges import FOREVER, NO_MEMBERS, EdgeIndexes, Edges, Terms
from .path_forest import Forest, key_pairs, key_parts, latest, node_keys, pair_keys, pair_parts, reach_changes
from .path_reach import pairs_table, reached

Moves = Mapping[tuple[int, tuple[str, str]], int]       # (state, symbol) -> next state


def is_flat(path: PathDef, moves: Moves) -> bool:
    """Whether :func:`flat_changes` maintains ``path``: moves only from the start, none into it,
    and every root a node or a constant (seeded roots and simple paths take the general walk)."""
    return all(state == 0 for state, _ in moves) and 0 not in moves.values() \
        and path.seed is None and not path.simple


def flat_changes(path: PathDef, start: np.ndarray, edges: Edges, deltas: Mapping[str, pa.Table], find: Find,
                 indexes: EdgeIndexes) -> dict[str, pa.Table]:
    """The changes of ``path``'s pairs and reach tables for the step's inserted and deleted
    ``edges`` (the graph after the step, loaded on demand; see the module text); ``start[sym]``
    is the state the start moves to by symbol ``sym`` (-1 for none). Array operations over the
    changed edges' nodes, numbered by the step's terms: a Python tuple per edge and pair cost
    60 µs a changed edge at 1M edges."""
    terms = edges.terms
    root = None if path.root is None else terms.encode([path.root])[0]
    fresh, lost = _nodes(edges.inserted_moves, start, root), _nodes(edges.moves(edges.deleted), start, root)
    pairs = [key_pairs(np.concatenate([fresh, lost]))]
    # a zero-length pair comes and goes with its node's membership of the graph
    members = indexes.members(path.nodes, deltas.get(path.nodes), ("v0", "v2"), set()) \
        if path.nullable and path.root is None and path.nodes else NO_MEMBERS
    if len(members.flipped):
        codes = terms.encode(members.flipped)
        pairs.append(pair_keys(codes, codes))
    pairs = distinct(np.concatenate(pairs))
    if not len(pairs):
        return {}
    before = _stored(find, path.reach, terms, pairs)
    # the pairs whose entries are counted again from the graph after the step: those only a
    # deleted edge joins, and under windows all (an inserted edge can raise a node's time); a
    # minimal automaton of one-edge matches moves its start to one state, so an inserted edge
    # leaves its pair's node there whatever else the step deleted
    inserted = distinct(key_pairs(fresh))
    kept = np.zeros(len(pairs), bool) if path.stamped else isin(pairs, inserted)
    after = _after(before, _counted(start, edges, pairs[~kept]), fresh, pairs[kept])
    reach = reach_changes(terms, before, after, union(before.keys, after.keys))
    # the pairs: a node reached in a final state, or the root itself on a zero-length match
    roots, vertices = pair_parts(pairs)
    finals = sorted(path.automaton.finals)
    zero = (roots == vertices) & path.nullable
    held = []
    for member in members.of(terms.decode(roots[zero])):
        on = np.zeros(len(pairs), bool)
        on[zero] = True if path.root is not None else member
        held.append(on)
    had = before.reaches(roots, vertices, finals) | held[0]
    has = after.reaches(roots, vertices, finals) | held[1]
    sign = has.astype(np.int64) - had.astype(np.int64)
    moved = sign != 0
    return {path.id: pairs_table(path, terms.decode(roots[moved]), terms.decode(vertices[moved]), sign[moved]),
            path.reach: reach}


def _nodes(moves: tuple[np.ndarray, ...], start: np.ndarray, root: int | None) -> np.ndarray:
    """The keys of the nodes (root, vertex, state) that ``moves`` (source, symbol, target, time)
    take a root's start to, distinct: only those of ``root``, if given (a constant end)."""
    src, sym, dst, _ = moves
    state = start[sym]
    keep = state >= 0
    if root is not None:
        keep &= src == root
    return distinct(node_keys(src[keep], dst[keep], state[keep]))


def _stored(find: Find, reach: str, terms: Terms, pairs: np.ndarray) -> Forest:
    """The reach rows of ``pairs`` (root, vertex) as the step started. Found by root, and only
    those at the pairs' vertices taken (a popular root's tree holds every other vertex it reaches
    too), then picked by the positions of their root and vertex among the pairs' distinct ones
    (two lookups of strings, where joining each row's two strings to look the pair up cost twice
    that), so that only the rows kept are numbered."""
    roots, vertices = pair_parts(pairs)
    some_roots, some_vertices = distinct(roots), distinct(vertices)
    names = terms.decode(some_roots), terms.decode(some_vertices)
    rows = reached(find, reach, *names, by_node=False)
    span = len(some_vertices)
    wanted = distinct(np.searchsorted(some_roots, roots) * span + np.searchsorted(some_vertices, vertices))
    root_at, vertex_at = (pc.index_in(rows[c], value_set=values).to_numpy(zero_copy_only=False)
                          for c, values in zip(("root", "node"), names))
    rows = rows.filter(pa.array(isin(root_at * span + vertex_at, wanted)))
    return Forest.of(rows, terms)


def _counted(start: np.ndarray, edges: Edges, pairs: np.ndarray) -> Forest:
    """The nodes of ``pairs`` (root, vertex) after the step, from the edges between the two: per
    state the start moves to, the latest time of those edges (one lookup of the roots' edges),
    the root's start as witness."""
    roots = distinct(pair_parts(pairs)[0])
    edges.load(roots)
    which, sym, dst, ts = edges.out.gather(roots)
    src, state = roots[which], start[sym]
    keep = (state >= 0) & isin(pair_keys(src, dst), pairs)
    src, dst, state, ts = src[keep], dst[keep], state[keep], ts[keep]
    best = latest(node_keys(src, dst, state), ts)
    return Forest(src[best], dst[best], state[best], src[best], np.zeros(len(best), np.int64), ts[best])


def _after(before: Forest, counted: Forest, fresh: np.ndarray, kept: np.ndarray) -> Forest:
    """The nodes of the step's pairs after it: those ``counted`` again, and for the ``kept`` pairs
    (an inserted edge joins them, outside windows) the nodes they held with the ``fresh`` ones
    the inserted edges add, at no time, off the root's start."""
    held = isin(pair_keys(before.root, before.node), kept)
    new = fresh[isin(key_pairs(fresh), kept) & ~before.holds(fresh)]
    root, node, state = key_parts(new)
    columns = [(before.root[held], before.node[held], before.state[held], before.parent[held],
                before.pstate[held], before.ts[held]),
               (root, node, state, root, np.zeros(len(new), np.int64), np.full(len(new), FOREVER, np.int64)),
               (counted.root, counted.node, counted.state, counted.parent, counted.pstate, counted.ts)]
    return Forest(*(np.concatenate(c) for c in zip(*columns)))
