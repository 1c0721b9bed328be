"""The witness forests a path step touches, as integer-coded arrays, and the two things a step does
to them: cut what a deleted edge witnessed, and walk from a frontier (see :mod:`.paths`).

Every tree of the step is in one :class:`Forest`: a row per reached product node (root, node,
state) with its witness (parent node and state) and its max-min time, vertices numbered by the
step's :class:`~.path_edges.Terms`. A node is found by its key, the three numbers packed into one
integer, through a sorted copy of the keys; a round of a walk gathers the moves of its whole
frontier (:class:`~.path_edges.Adjacency`), follows the automaton's transition table, keeps per
node the move with the latest time, and writes those that improve on the tree: array operations
whose cost follows the frontier and its moves, with no Python object per node or move.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..sorted_sets import distinct, isin
from .path_edges import FOREVER, Adjacency, Edges, Terms
from .path_reach import reach_columns

#: A node key packs (root, node, state): vertex numbers below 2**27, states below 2**8.
VERTEX_BITS, STATE_BITS = 27, 8
#: The time of a node a tree does not hold (below every edge time).
ABSENT = np.iinfo(np.int64).min


def node_keys(root: np.ndarray, node: np.ndarray, state: np.ndarray) -> np.ndarray:
    """One integer per product node of a root's tree."""
    return (root << (VERTEX_BITS + STATE_BITS)) | (node << STATE_BITS) | state


def key_parts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(root, node, state) of node keys."""
    return (keys >> (VERTEX_BITS + STATE_BITS), (keys >> STATE_BITS) & ((1 << VERTEX_BITS) - 1),
            keys & ((1 << STATE_BITS) - 1))


def key_roots(keys: np.ndarray) -> np.ndarray:
    """The roots of node keys."""
    return keys >> (VERTEX_BITS + STATE_BITS)


def key_pairs(keys: np.ndarray) -> np.ndarray:
    """The (root, vertex) pair keys (:func:`pair_keys`) of node keys: the state dropped."""
    return keys >> STATE_BITS


def latest(keys: np.ndarray, time: np.ndarray) -> np.ndarray:
    """One position per distinct key of ``keys``: the one with the latest ``time``, the first such
    on a tie (a deterministic witness)."""
    order = np.lexsort((-time, keys))
    first = np.ones(len(order), bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    return order[first]


def pair_keys(root: np.ndarray, vertex: np.ndarray) -> np.ndarray:
    """One integer per (root, vertex) pair."""
    return (root << VERTEX_BITS) | vertex


def pair_parts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(root, vertex) of pair keys."""
    return keys >> VERTEX_BITS, keys & ((1 << VERTEX_BITS) - 1)


def check_bounds(terms: Terms, states: int) -> None:
    """The keys' packing holds for this step (a step meets far fewer vertices than 2**27)."""
    if len(terms) >= 1 << VERTEX_BITS or states >= 1 << STATE_BITS:
        raise ValueError(f"a path step over {len(terms)} vertices and {states} automaton states "
                         f"exceeds the node keys' {VERTEX_BITS} and {STATE_BITS} bits")


class Forest:
    """Reach rows as columns of numbers (see the module text); ``ts`` is :data:`FOREVER` outside
    windows. Its keys are indexed by a sorted copy (``index``: the rows in key order, and their
    keys), kept up to date as rows come and go without sorting again: a step that reads large
    trees (a deletion's) writes a few rows to them in each round of its walk."""

    def __init__(self, root: np.ndarray, node: np.ndarray, state: np.ndarray, parent: np.ndarray,
                 pstate: np.ndarray, ts: np.ndarray, index: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.root, self.node, self.state, self.parent, self.pstate, self.ts = root, node, state, parent, pstate, ts
        self.keys = node_keys(root, node, state)
        if index is None:
            order = np.argsort(self.keys, kind="stable")
            index = order, self.keys[order]
        self._order, self._sorted = index

    @classmethod
    def of(cls, rows: pa.Table, terms: Terms) -> "Forest":
        """The forest of reach rows (:func:`~.path_reach.reached`)."""
        if not rows.num_rows:
            return cls(*(np.zeros(0, np.int64) for _ in _COLUMNS))
        ts = pc.if_else(pc.equal(pc.fill_null(rows["ts"], ""), ""), str(FOREVER), rows["ts"])
        # (copies: a walk writes the entries in place, and Arrow's buffers are read-only)
        number = lambda c: pc.cast(c, pa.int64()).to_numpy().copy()  # noqa: E731
        return cls(terms.encode(rows["root"]), terms.encode(rows["node"]), number(rows["state"]),
                   terms.encode(rows["parent"]), number(rows["pstate"]), number(ts))

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The row of each of ``keys`` (-1 where the forest has none)."""
        if not len(self._sorted):
            return np.full(len(keys), -1, np.int64)
        at = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
        return np.where(self._sorted[at] == keys, self._order[at], -1)

    def without(self, gone: np.ndarray) -> "Forest":
        """A copy of the forest less the rows of mask ``gone`` (the index kept, renumbered)."""
        kept = ~gone
        alive = kept[self._order]
        renumbered = np.cumsum(kept) - 1
        return Forest(*(getattr(self, c)[kept] for c in _COLUMNS),
                      index=(renumbered[self._order[alive]], self._sorted[alive]))

    def write(self, rows: np.ndarray, keys: np.ndarray, root: np.ndarray, node: np.ndarray, state: np.ndarray,
              parent: np.ndarray, pstate: np.ndarray, ts: np.ndarray) -> None:
        """Set the entries of nodes ``keys`` (distinct; ``rows`` their rows, -1 for new ones)."""
        old = rows >= 0
        at = rows[old]
        self.parent[at], self.pstate[at], self.ts[at] = parent[old], pstate[old], ts[old]
        new = ~old
        if new.any():
            first = len(self.keys)
            for column, values in zip(_COLUMNS, (root, node, state, parent, pstate, ts)):
                setattr(self, column, np.concatenate([getattr(self, column), values[new]]))
            fresh = keys[new]
            self.keys = np.concatenate([self.keys, fresh])
            order = np.argsort(fresh, kind="stable")
            at = np.searchsorted(self._sorted, fresh[order])
            self._sorted = np.insert(self._sorted, at, fresh[order])
            self._order = np.insert(self._order, at, first + order)

    def entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(parent, parent state, time) of ``rows`` (-1, -1, :data:`ABSENT` where -1)."""
        held = rows >= 0
        at = np.where(held, rows, 0)
        pick = lambda column, none: np.where(held, column[at] if len(column) else none, none)  # noqa: E731
        return pick(self.parent, -1), pick(self.pstate, -1), pick(self.ts, ABSENT)

    def holds(self, keys: np.ndarray) -> np.ndarray:
        return isin(keys, self._sorted)

    def reaches(self, root: np.ndarray, vertex: np.ndarray, finals: list[int]) -> np.ndarray:
        """Whether the forest holds each (root, vertex) in one of the ``finals`` states."""
        found = np.zeros(len(root), bool)
        for final in finals:
            found |= self.holds(node_keys(root, vertex, np.full(len(root), final, np.int64)))
        return found


_COLUMNS = ("root", "node", "state", "parent", "pstate", "ts")


def reach_changes(terms: Terms, before: Forest, after: Forest, changed: np.ndarray) -> pa.Table:
    """The reach rows that go (-1) and come (+1) among the ``changed`` nodes (a node whose entry
    is the same after the step gives nothing): the change, not the whole trees twice."""
    old, new = before.find(changed), after.find(changed)
    old_entry, new_entry = before.entries(old), after.entries(new)
    differ = (old < 0) != (new < 0)
    for o, n in zip(old_entry, new_entry):
        differ |= o != n
    root, vertex, state = key_parts(changed)
    parts = []
    for rows, entry, sign in ((old, old_entry, -1), (new, new_entry, 1)):
        on = differ & (rows >= 0)
        parts.append((root[on], vertex[on], state[on], entry[0][on], entry[1][on], entry[2][on],
                      np.full(int(on.sum()), sign, np.int64)))
    root, vertex, state, parent, pstate, ts, sign = (np.concatenate(c) for c in zip(*parts))
    return reach_columns(terms.decode(root), terms.decode(vertex), state, terms.decode(parent), pstate, ts, sign)


@dataclass
class Frontier:
    """Where a walk round moves from: product nodes of roots' trees (or their starts) with their
    times, and whether a node follows every move (else only the step's first moves)."""

    root: np.ndarray
    node: np.ndarray
    state: np.ndarray
    ts: np.ndarray
    every: np.ndarray

    def __len__(self) -> int:
        return len(self.root)


def walk(forest: Forest, edges: Edges, trans: np.ndarray, leaving: np.ndarray, frontier: Frontier,
         rounds: int | None = None) -> np.ndarray:
    """A widest-path walk over every tree of ``forest`` at once, in place, from ``frontier``
    (``trans[state, symbol]`` the next state, -1 for none; ``leaving[state]`` whether a move leaves
    it): each round adds the nodes its moves reach and raises those they reach at a later time
    (outside windows every time is :data:`FOREVER`, so this is a breadth-first walk), and the
    nodes it changed are the next round's frontier. A node keeps the move that last set its time
    as its witness, which keeps the parents a forest: a cycle would need a node raised above its
    own time. Returns the keys of the nodes the walk added or raised (after ``rounds`` rounds, if
    given)."""
    changed: list[np.ndarray] = []
    while len(frontier) and rounds != 0:
        edges.load(frontier.node[frontier.every])
        which, sym, dst, ts = _moves(frontier, edges.out, edges.first)
        if not len(which):
            break
        root, state = frontier.root[which], trans[frontier.state[which], sym]
        keep = (state >= 0) & ~((dst == root) & (state == 0))      # the start is no tree node
        which, dst, root, state = which[keep], dst[keep], root[keep], state[keep]
        time = np.minimum(frontier.ts[which], ts[keep])
        keys = node_keys(root, dst, state)
        best = latest(keys, time)                                   # per node, its best move
        keys, rows = keys[best], forest.find(keys[best])
        better = time[best] > forest.entries(rows)[2]
        best, keys, rows = best[better], keys[better], rows[better]
        came = which[best]
        forest.write(rows, keys, root[best], dst[best], state[best], frontier.node[came], frontier.state[came],
                     time[best])
        changed.append(keys)
        on = leaving[state[best]]
        frontier = Frontier(root[best][on], dst[best][on], state[best][on], time[best][on],
                            np.ones(int(on.sum()), bool))
        rounds = None if rounds is None else rounds - 1
    return distinct(np.concatenate(changed)) if changed else np.zeros(0, np.int64)


def _moves(frontier: Frontier, out: Adjacency, first: Adjacency) -> tuple[np.ndarray, ...]:
    """The moves of each frontier node: every move of those that follow every move, the first
    moves of the others, as (frontier row, symbol, target, time)."""
    parts = []
    for adjacency, mask in ((out, frontier.every), (first, ~frontier.every)):
        rows = np.flatnonzero(mask)
        if len(rows):
            which, sym, dst, ts = adjacency.gather(frontier.node[rows])
            parts.append((rows[which], sym, dst, ts))
    if not parts:
        return (np.zeros(0, np.int64),) * 4
    return tuple(np.concatenate(c) for c in zip(*parts))


def cut(forest: Forest, suspects: np.ndarray, edges: Edges, trans: np.ndarray) -> np.ndarray:
    """The rows of ``forest`` that lose every path: of the ``suspects`` (rows whose parent is
    joined to them by a deleted edge), those no edge after the step still leads to from their
    parent at their time or later, and all their descendants (a mask). Everything else keeps a
    valid witness chain, because a removed node takes its whole subtree with it."""
    gone = np.zeros(len(forest), bool)
    rows = np.flatnonzero(suspects)
    if not len(rows):
        return gone
    edges.load(forest.parent[rows])
    which, sym, dst, ts = edges.out.gather(forest.parent[rows])
    at = rows[which]
    leads = (dst == forest.node[at]) & (trans[forest.pstate[at], sym] == forest.state[at]) & (ts >= forest.ts[at])
    led = np.zeros(len(rows), bool)
    led[which[leads]] = True
    lost = rows[~led]
    # descendants: the children of a lost node, round after round, found by their parent's key
    parents = node_keys(forest.root, forest.parent, forest.pstate)
    order = np.argsort(parents, kind="stable")
    by_parent = parents[order]
    while len(lost):
        lost = lost[~gone[lost]]
        gone[lost] = True
        keys = distinct(forest.keys[lost])
        lo, hi = np.searchsorted(by_parent, keys, "left"), np.searchsorted(by_parent, keys, "right")
        n = hi - lo
        lost = order[np.repeat(lo - np.cumsum(n) + n, n) + np.arange(int(n.sum()))]
    return gone
