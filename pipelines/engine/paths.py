"""The path operator: a path view's change from the change of its edge views, in the spirit of S-PATH.

State, per path view (:class:`views.path_views.PathDef`): the **reach** table, one row per product
node ``(node, state)`` reached from a root (the root's own start node is implicit), with the
``parent`` node that witnesses it. The parents form a spanning forest of the product graph (graph
× automaton): every node's witness chain leads back to its root along edges that exist. The path
view is the set of pairs ``(root, node)`` reached in a final state (plus the zero-length pairs).

One step, for each root whose tree the batch's edges can touch (a root whose tree holds an end
that a changed edge can be followed from):

1. **explicit deletions**: the nodes whose witness edge went (no edge of the graph after the step
   still leads from the parent to them), and all their descendants, leave the tree. Everything
   else keeps a valid witness chain, because a removed node takes its whole subtree with it;
2. **re-derivation and insertion**, semi-naively: the frontier is every tree node with an edge into
   a removed node or an endpoint of an inserted edge; from it a breadth-first walk over the graph
   after the step adds each node not in the tree, with the node it came from as parent. A node
   reachable after the step but outside the tree has a path from the root whose first node outside
   the tree follows a tree node by an inserted edge or by an edge into a removed node: the walk
   finds it. So the tree is again exactly the reachable nodes.

Counting derivations would not do: on a cycle, the nodes support each other after the edge that
reached the cycle goes. The witness forest has no cycles (a parent is always reached before its
child), so a deleted edge removes exactly what it witnessed.

The walk runs in this process on both Z-set engines (a round on a small frontier would cost a
Spark job each); the state is read as Arrow at the versions the batch started from, so a re-run
after a crash computes the very same changes. Its cost follows the trees of the roots the batch
touches and the nodes whose reachability changes.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.automata import BACKWARD, FORWARD, OTHER
from views.path_views import ALL, PathDef

from .zsets import binding_schema

#: The reach table's columns: a reached product node of a root's tree, and its witness parent.
REACH_COLUMNS = ("root", "node", "state", "parent", "pstate")
REACH_SCHEMA = binding_schema(REACH_COLUMNS)
#: A path's edges as Arrow triples.
TRIPLE_SCHEMA = pa.schema([(c, pa.string()) for c in ("s", "p", "o")])

Triple = tuple[str, str, str]
ProductNode = tuple[str, int]            # (graph node, automaton state)
Tree = dict[ProductNode, ProductNode]    # reached node -> its witness parent


def path_tables(path: PathDef) -> dict[str, pa.Schema]:
    """The tables of a path view: its pairs (a view-shaped set) and its reach state."""
    return {path.id: binding_schema(path.columns), path.reach: REACH_SCHEMA}


@dataclass
class _Edges:
    """A path's edges after the step, as product-graph adjacency over automaton symbols, loaded
    only around the vertices the step's walks can visit: turning every edge into Python objects
    each batch would cost the whole graph however small the change. ``out[x]`` is complete for
    every vertex ``x`` loaded so far (for the automaton's directions: a walk skips the others), in
    the order the edges were read. ``into`` holds the moves between ``sources``, the vertices of
    the trees the step visits: a deletion re-walks from a tree node with a move into a removed node,
    so a move from outside the trees cannot matter (a popular node's many in-edges stay unread)."""

    graph: pa.Table                                     # (s, p, o) before the step, deleted edges out
    inserted: list[Triple]
    symbol: Callable[[str], str | None]
    directions: set[str]                                # the directions the automaton moves in
    sources: set[str]                                   # empty when the step deletes nothing
    out: dict[str, list[tuple[tuple[str, str], str]]] = field(default_factory=lambda: defaultdict(list))
    into: dict[str, list[tuple[tuple[str, str], str]]] = field(default_factory=lambda: defaultdict(list))
    loaded: set[str] = field(default_factory=set)

    def load(self, vertices: set[str]) -> set[str]:
        """Complete the adjacency of ``vertices``; returns the vertices not loaded yet that their
        moves lead to (what a walk through them may visit next)."""
        new = vertices - self.loaded
        if not new:
            return set()
        self.loaded |= new
        forward, backward = FORWARD in self.directions, BACKWARD in self.directions
        wanted = pa.array(sorted(new), pa.string())
        from_s, from_o = pc.is_in(self.graph["s"], wanted), pc.is_in(self.graph["o"], wanted)
        masks = ([from_s] if forward else []) + ([from_o] if backward else [])
        if self.sources & new:
            known = pa.array(sorted(self.sources), pa.string())
            masks.append(pc.and_(pc.is_in(self.graph["s"], known), pc.is_in(self.graph["o"], known)))
        rows = self.graph.filter(functools.reduce(pc.or_, masks)) if masks else self.graph.slice(0, 0)
        reached: set[str] = set()
        for s, p, o in [*_tuples(rows), *(t for t in self.inserted if t[0] in new or t[2] in new)]:
            key = self.symbol(p)
            if key is None:
                continue
            inner = s in self.sources and o in self.sources
            if s in new:
                if forward:
                    self.out[s].append(((key, FORWARD), o))
                    reached.add(o)
                if inner:
                    self.into[s].append(((key, BACKWARD), o))
            if o in new:
                if backward:
                    self.out[o].append(((key, BACKWARD), s))
                    reached.add(s)
                if inner:
                    self.into[o].append(((key, FORWARD), s))
        return reached - self.loaded

    def load_reachable(self, vertices: set[str]) -> None:
        """Load ``vertices`` and everything their moves reach, a breadth-first round at a time
        (one Arrow filter of the edges per round)."""
        while vertices:
            vertices = self.load(vertices)


def _triples(predicate: str, rows: pa.Table) -> pa.Table:
    """Edge view rows as (s, p, o): a predicate's view holds (s, o), the view of every triple (s, p, o)."""
    if predicate == ALL:
        return pa.Table.from_arrays([rows["v0"], rows["v1"], rows["v2"]], schema=TRIPLE_SCHEMA)
    return pa.Table.from_arrays([rows["v0"], pa.repeat(pa.scalar(predicate, pa.string()), rows.num_rows),
                                 rows["v1"]], schema=TRIPLE_SCHEMA)


def _tuples(triples: pa.Table) -> list[Triple]:
    return list(zip(*(triples[c].to_pylist() for c in ("s", "p", "o"))))


def _without(graph: pa.Table, deleted: list[Triple]) -> pa.Table:
    """``graph`` (s, p, o) without the ``deleted`` triples."""
    if not deleted:
        return graph
    gone = pa.Table.from_arrays([pa.array(column, pa.string()) for column in zip(*deleted)], schema=TRIPLE_SCHEMA)
    return graph.filter(pc.invert(pc.is_in(_keys(graph), _keys(gone))))


def _keys(triples: pa.Table) -> pa.ChunkedArray:
    """One string per triple (terms never hold a newline: N-Triples escapes it)."""
    return pc.binary_join_element_wise(triples["s"], triples["p"], triples["o"], "\n")


def _signed(rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """A view change split into its inserted and deleted rows."""
    return rows.filter(pc.greater(rows[MULT], 0)), rows.filter(pc.less(rows[MULT], 0))


class PathOperator:
    """Maintains one path view (see the module text)."""

    def __init__(self, path: PathDef) -> None:
        self.path = path
        automaton = path.automaton
        self.moves = automaton.table()
        self.finals = set(automaton.finals)
        self.named = {sym[0] for sym in automaton.symbols if sym[0] != OTHER}
        self.other = automaton.uses_other

    def _symbol(self, predicate: str) -> str | None:
        if predicate in self.named:
            return predicate
        return OTHER if self.other else None

    def step(self, read: Callable[[str], pa.Table], deltas: Mapping[str, pa.Table],
             initial: bool = False) -> dict[str, pa.Table]:
        """The changes of the path's tables (keyed by table name) when its edge views (and the
        view of every triple, for ``nodes(G)``) change by ``deltas``; ``read`` gives a table as the
        step started. Empty when no edge of the path changed, unless ``initial`` (the step from
        nothing, where a constant root's zero-length pair answers even with no edges)."""
        path = self.path
        touched = [v for _, v in path.edges] + ([path.nodes] if path.nodes else [])
        if not initial and not any(v in deltas and deltas[v].num_rows for v in touched):
            return {}
        inserted: list[Triple] = []
        deleted: list[Triple] = []
        graph = []
        for predicate, view in path.edges:
            graph.append(_triples(predicate, read(view)))
            change = deltas.get(view)
            if change is not None and change.num_rows:
                plus, minus = _signed(change)
                inserted += _tuples(_triples(predicate, plus))
                deleted += _tuples(_triples(predicate, minus))
        node_change = self._node_changes(read, deltas)
        forest = read(path.reach)
        # a root whose membership of nodes(G) did not change keeps its zero-length pair
        roots = self._roots(forest, inserted + deleted) | {x for x, (was, now) in node_change.items() if was != now}
        trees = self._trees(forest, roots)
        visited = {x for tree in trees.values() for node, parent in tree.items() for x in (node[0], parent[0])}
        edges = _Edges(_without(pa.concat_tables([pa.Table.from_batches([], TRIPLE_SCHEMA), *graph]), deleted),
                       inserted, self._symbol, {sym[1] for _, sym in self.moves},
                       (roots | visited) if deleted else set())
        edges.load_reachable(roots | visited | {x for s, _, o in inserted + deleted for x in (s, o)})
        pairs: dict[tuple[str, str], int] = defaultdict(int)
        reach: list[dict] = []
        removed_from = {x for s, _, o in deleted for x in (s, o)}
        inserted_ends = {x for s, _, o in inserted for x in (s, o)}
        for root in sorted(roots):
            before = trees.get(root, {})
            after = self._update(root, dict(before), edges, removed_from, inserted_ends)
            # a root whose triples did not change is in the graph (it has a tree, or is an endpoint)
            was_in, is_in = node_change.get(root, (True, True))
            for pair in () if initial else self._answers(root, before, was_in):
                pairs[pair] -= 1
            for pair in self._answers(root, after, is_in):
                pairs[pair] += 1
            reach += _tree_rows(root, before, -1) + _tree_rows(root, after, 1)
        return {path.id: self._pairs_table(pairs), path.reach: _consolidated(reach)}

    # -- roots and their trees -------------------------------------------------------------------
    def _roots(self, reach: pa.Table, changed: list[Triple]) -> set[str]:
        """The roots whose trees the step can change: the constant root, or each end of a changed
        edge that a move can follow it from, and every root whose tree holds such an end in a state
        with that move. A tree gains or loses nodes only where a walk could take a changed edge,
        which starts at that end; a tree holding only the other end (a popular node every tree
        ends at) stays as it is."""
        if self.path.root is not None:
            return {self.path.root}
        starts: dict[tuple[str, str], set[str]] = defaultdict(set)
        for s, p, o in changed:
            key = self._symbol(p)
            if key is not None:
                starts[(key, FORWARD)].add(s)
                starts[(key, BACKWARD)].add(o)
        roots: set[str] = set()
        for symbol, ends in starts.items():
            states = sorted({q for q, sym in self.moves if sym == symbol})
            if not states:
                continue
            if 0 in states:
                roots |= ends
            hit = reach.filter(pc.and_(pc.is_in(reach["node"], pa.array(sorted(ends), pa.string())),
                                       pc.is_in(reach["state"], pa.array([str(q) for q in states], pa.string()))))
            roots |= set(hit["root"].to_pylist())
        return roots

    def _trees(self, reach: pa.Table, roots: set[str]) -> dict[str, Tree]:
        rows = reach.filter(pc.is_in(reach["root"], pa.array(sorted(roots), pa.string())))
        columns = [rows[c] if c in ("root", "node", "parent") else pc.cast(rows[c], pa.int64()) for c in REACH_COLUMNS]
        trees: dict[str, Tree] = defaultdict(dict)
        for root, node, state, parent, pstate in zip(*(c.to_pylist() for c in columns)):
            trees[root][(node, state)] = (parent, pstate)
        return trees

    def _node_changes(self, read: Callable[[str], pa.Table], deltas: Mapping[str, pa.Table]) -> dict[str, tuple[bool, bool]]:
        """For both ends variables and a zero-length match: each node whose membership of
        ``nodes(G)`` (subject or object of some triple) the step may change, with it before and after."""
        view = self.path.nodes
        if view is None or self.path.root is not None or view not in deltas or not deltas[view].num_rows:
            return {}
        change = deltas[view]
        candidates = pa.array(sorted(set(change["v0"].to_pylist()) | set(change["v2"].to_pylist())), pa.string())
        rows = read(view)
        count: dict[str, int] = defaultdict(int)
        for column in ("v0", "v2"):
            for x in rows.filter(pc.is_in(rows[column], candidates))[column].to_pylist():
                count[x] += 1
        after = dict(count)
        for s, o, mult in zip(change["v0"].to_pylist(), change["v2"].to_pylist(), change[MULT].to_pylist()):
            for x in (s, o):
                after[x] = after.get(x, 0) + mult
        return {x.as_py(): (count.get(x.as_py(), 0) > 0, after.get(x.as_py(), 0) > 0) for x in candidates}

    # -- one tree ----------------------------------------------------------------------------------
    def _update(self, root: str, tree: Tree, edges: _Edges, removed_from: set[str], inserted_ends: set[str]) -> Tree:
        """``tree`` (the root's before the step, a copy) after the step (see the module text)."""
        start = (root, 0)
        lost = [node for node, parent in tree.items()
                if parent[0] in removed_from and not self._leads(parent, node, edges)]
        if lost:
            children: dict[ProductNode, list[ProductNode]] = defaultdict(list)
            for node, parent in tree.items():
                children[parent].append(node)
            gone: set[ProductNode] = set()
            todo = lost
            while todo:
                node = todo.pop()
                if node not in gone:
                    gone.add(node)
                    todo += children.get(node, [])
            for node in gone:
                del tree[node]
            frontier_vertices = inserted_ends | {u for v, _ in gone for _, u in edges.into.get(v, ())}
        else:
            frontier_vertices = inserted_ends
        frontier = [n for n in (start, *tree) if n[0] in frontier_vertices]
        while frontier:
            nxt = []
            for node in frontier:
                for sym, target in edges.out.get(node[0], ()):
                    state = self.moves.get((node[1], sym))
                    if state is None:
                        continue
                    reached = (target, state)
                    if reached != start and reached not in tree:
                        tree[reached] = node
                        nxt.append(reached)
            frontier = nxt
        return tree

    def _leads(self, parent: ProductNode, node: ProductNode, edges: _Edges) -> bool:
        """Whether an edge after the step still moves ``parent`` to ``node``."""
        return any(target == node[0] and self.moves.get((parent[1], sym)) == node[1]
                   for sym, target in edges.out.get(parent[0], ()))

    def _answers(self, root: str, tree: Tree, in_graph: bool) -> set[tuple[str, str]]:
        """The root's pairs: nodes reached in a final state, and the root itself on a zero-length
        match (a constant root always; a node only while it is in the graph)."""
        pairs = {(root, node) for node, state in tree if state in self.finals}
        if self.path.automaton.nullable and (self.path.root is not None or in_graph):
            pairs.add((root, root))
        return pairs

    def _pairs_table(self, pairs: Mapping[tuple[str, str], int]) -> pa.Table:
        """The path view's change: pairs as its columns (root and end, one variable, or none)."""
        path = self.path
        rows = []
        for (root, node), mult in sorted(pairs.items()):
            if mult == 0 or (path.same and root != node) or (path.end is not None and node != path.end):
                continue
            values = {"v0": root, "v1": node} if path.root is None else {"v0": node}
            rows.append({**{c: values[c] for c in path.columns}, MULT: mult})
        return pa.Table.from_pylist(rows, schema=binding_schema(path.columns))


def _tree_rows(root: str, tree: Tree, sign: int) -> list[dict]:
    return [{"root": root, "node": node, "state": str(state), "parent": parent, "pstate": str(pstate), MULT: sign}
            for (node, state), (parent, pstate) in tree.items()]


def _consolidated(rows: list[dict]) -> pa.Table:
    """Signed reach rows with the unchanged ones (a -1 and a +1) cancelled."""
    total: dict[tuple, int] = defaultdict(int)
    for row in rows:
        total[tuple(row[c] for c in REACH_COLUMNS)] += row[MULT]
    return pa.Table.from_pylist([{**dict(zip(REACH_COLUMNS, key)), MULT: m} for key, m in sorted(total.items()) if m],
                                schema=REACH_SCHEMA)


def path_changes(paths: Iterable[PathDef], read: Callable[[str], pa.Table],
                 deltas: Mapping[str, pa.Table]) -> dict[str, pa.Table]:
    """Every path view's and reach table's change for the views' ``deltas`` (non-empty ones only)."""
    out: dict[str, pa.Table] = {}
    for path in paths:
        out.update({t: rows for t, rows in PathOperator(path).step(read, deltas).items() if rows.num_rows})
    return out


def path_backfill(path: PathDef, read: Callable[[str], pa.Table]) -> dict[str, pa.Table]:
    """A path's whole state from its edge views as ``read`` gives them: the step from nothing."""
    tables = path_tables(path)
    views = {v for _, v in path.edges} | ({path.nodes} if path.nodes else set())
    full = {v: read(v) for v in views}
    empty = lambda name: full[name].slice(0, 0) if name in full else tables[name].empty_table()  # noqa: E731
    changes = PathOperator(path).step(empty, full, initial=True)
    return {name: changes.get(name, schema.empty_table()) for name, schema in tables.items()}
