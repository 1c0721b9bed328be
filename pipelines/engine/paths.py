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

Under stream windows each edge carries its time in the window and each reached node the largest,
over the paths reaching it, of the smallest edge time (S-PATH's timestamps): step 2 is then a
widest-path walk (a max-heap on that time, which also raises nodes a later edge improves), and a
step whose deletions are a pure expiry (every edge of time τ or earlier went, as a window slide
does) drops exactly the nodes of time ≤ τ instead of step 1: a filter, nothing re-derived. Outside
windows every time is :data:`FOREVER` and the walk is breadth-first.

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
import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import count
from typing import Callable, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.automata import BACKWARD, FORWARD, OTHER
from views.path_views import ALL, PathDef

from .zsets import binding_schema

#: The reach table's columns: a reached product node of a root's tree, and its witness parent.
REACH_COLUMNS = ("root", "node", "state", "parent", "pstate", "ts")
REACH_SCHEMA = binding_schema(REACH_COLUMNS)
#: A path's edges as Arrow triples with their event time (a windowed query's ``t`` term, or '').
TRIPLE_SCHEMA = pa.schema([(c, pa.string()) for c in ("s", "p", "o", "t")])
#: The time of an edge without one (outside windows, or only in a background graph): never expires.
FOREVER = 2 ** 62

Triple = tuple[str, str, str, str]       # (s, p, o, t)
ProductNode = tuple[str, int]            # (graph node, automaton state)
Tree = dict[ProductNode, tuple[ProductNode, int]]   # reached node -> (witness parent, max-min time)


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
    out: dict[str, list[tuple[tuple[str, str], str, int]]] = field(default_factory=lambda: defaultdict(list))
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
        for s, p, o, t in [*_tuples(rows), *(e for e in self.inserted if e[0] in new or e[2] in new)]:
            key = self.symbol(p)
            if key is None:
                continue
            ts = time_of(t)
            inner = s in self.sources and o in self.sources
            if s in new:
                if forward:
                    self.out[s].append(((key, FORWARD), o, ts))
                    reached.add(o)
                if inner:
                    self.into[s].append(((key, BACKWARD), o))
            if o in new:
                if backward:
                    self.out[o].append(((key, BACKWARD), s, ts))
                    reached.add(s)
                if inner:
                    self.into[o].append(((key, FORWARD), s))
        return reached - self.loaded

    def load_reachable(self, vertices: set[str]) -> None:
        """Load ``vertices`` and everything their moves reach, a breadth-first round at a time
        (one Arrow filter of the edges per round)."""
        while vertices:
            vertices = self.load(vertices)


def _triples(predicate: str, rows: pa.Table, stamped: bool) -> pa.Table:
    """Edge view rows as (s, p, o, t): a predicate's view holds (s, o), the view of every triple
    (s, p, o), and a stamped view the time after them."""
    n = rows.num_rows
    spo = [rows["v0"], rows["v1"], rows["v2"]] if predicate == ALL else \
        [rows["v0"], pa.repeat(pa.scalar(predicate, pa.string()), n), rows["v1"]]
    time = rows["v3" if predicate == ALL else "v2"] if stamped else pa.repeat(pa.scalar("", pa.string()), n)
    return pa.Table.from_arrays([*spo, time], schema=TRIPLE_SCHEMA)


def time_of(term: str) -> int:
    """An edge's time in epoch ms from its ``t`` term (``"ms"^^xsd:integer``); :data:`FOREVER` for ''."""
    return int(term[1:term.index('"', 1)]) if term else FOREVER


def _tuples(triples: pa.Table) -> list[Triple]:
    return list(zip(*(triples[c].to_pylist() for c in TRIPLE_SCHEMA.names)))


def _without(graph: pa.Table, deleted: list[Triple]) -> pa.Table:
    """``graph`` (s, p, o) without the ``deleted`` triples."""
    if not deleted:
        return graph
    gone = pa.Table.from_arrays([pa.array(column, pa.string()) for column in zip(*deleted)], schema=TRIPLE_SCHEMA)
    return graph.filter(pc.invert(pc.is_in(_keys(graph), _keys(gone))))


def _keys(triples: pa.Table) -> pa.ChunkedArray:
    """One string per timed triple (terms never hold a newline: N-Triples escapes it)."""
    return pc.binary_join_element_wise(triples["s"], triples["p"], triples["o"], triples["t"], "\n")


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
        """The changes of the path's tables (keyed by table name) when its edge views (and its
        seed view, or the view of every triple for ``nodes(G)``) change by ``deltas``; ``read``
        gives a table as the step started. Empty when none of them changed, unless ``initial``
        (the step from nothing, where a constant root's zero-length pair answers even with no edges)."""

        path = self.path
        touched = [v for _, v in path.edges] + [v for v in (path.nodes, path.seed and path.seed[0]) if v]
        if not initial and not any(v in deltas and deltas[v].num_rows for v in touched):
            return {}
        inserted: list[Triple] = []
        deleted: list[Triple] = []
        graph = []
        for predicate, view in path.edges:
            graph.append(_triples(predicate, read(view), path.stamped))
            change = deltas.get(view)
            if change is not None and change.num_rows:
                plus, minus = _signed(change)
                inserted += _tuples(_triples(predicate, plus, path.stamped))
                deleted += _tuples(_triples(predicate, minus, path.stamped))
        forest = read(path.reach)
        roots, members = self._roots(read, deltas, forest, inserted + deleted)
        trees = self._trees(forest, roots)
        stored = self._stored(read, roots) if path.simple and not initial else {}
        after = _without(pa.concat_tables([pa.Table.from_batches([], TRIPLE_SCHEMA), *graph]), deleted)
        visited = {x for tree in trees.values() for node, (parent, _) in tree.items() for x in (node[0], parent[0])}
        edges = _Edges(after, inserted, self._symbol, {sym[1] for _, sym in self.moves},
                       (roots | visited) if deleted else set())
        edges.load_reachable(roots | visited | {x for s, _, o, _ in inserted + deleted for x in (s, o)})
        expired = _expiry(after, inserted, deleted)
        pairs: dict[tuple[str, str], int] = defaultdict(int)
        reach: list[dict] = []
        removed_from = {x for s, _, o, _ in deleted for x in (s, o)}
        inserted_ends = {x for s, _, o, _ in inserted for x in (s, o)}
        seeded = path.seed is not None
        for root in sorted(roots):
            # (before, after): a seed's membership of its view, a node's of the graph (for a
            # zero-length match); a root whose triples did not change is in both (it has a tree)
            was, now = members.get(root, (True, True))
            before = trees.get(root, {})
            if seeded and not now:
                after: Tree = {}
            else:
                starts = inserted_ends | ({root} if seeded and not was else set())
                after = self._update(root, dict(before), edges, removed_from, starts, expired)
            if path.simple:
                old = set() if initial else stored.get(root, set())
                new = self._simple(root, edges) if not (seeded and not now) else set()
                new |= {(root, root)} if path.automaton.nullable and (path.root is not None or now) else set()
            else:
                old = set() if initial else self._answers(root, before, was)
                new = self._answers(root, after, now)
            for pair in old:
                pairs[pair] -= 1
            for pair in new:
                pairs[pair] += 1
            reach += _tree_rows(root, before, -1) + _tree_rows(root, after, 1)
        return {path.id: self._pairs_table(pairs), path.reach: _consolidated(reach)}

    def _simple(self, root: str, edges: _Edges) -> set[tuple[str, str]]:
        """The root's pairs under simple-path semantics: nodes reached in a final state along a
        path that repeats no node, the root included (depth-first, every such path: exponential in
        the worst case; the walk forest only tells which roots a batch touches)."""
        found: set[tuple[str, str]] = set()
        on_path = {root}

        def visit(vertex: str, state: int) -> None:
            for sym, target, _ in edges.out.get(vertex, ()):
                nxt = self.moves.get((state, sym))
                if nxt is None or target in on_path:
                    continue
                if nxt in self.finals:
                    found.add((root, target))
                on_path.add(target)
                visit(target, nxt)
                on_path.discard(target)

        visit(root, 0)
        return found

    def _stored(self, read: Callable[[str], pa.Table], roots: set[str]) -> dict[str, set[tuple[str, str]]]:
        """The pairs the path view holds for ``roots`` before the step (simple paths are not a
        function of the walk forest, so their answers before are read back)."""
        path = self.path
        rows = read(path.id)
        if path.root is None:
            rows = rows.filter(pc.is_in(rows["v0"], pa.array(sorted(roots), pa.string())))
        out: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for row in rows.to_pylist():
            if path.root is not None:
                out[path.root].add((path.root, row["v0"] if path.end is None else path.end))
            else:
                out[row["v0"]].add((row["v0"], row["v0"] if path.same else row["v1"]))
        return out

    # -- roots and their trees -------------------------------------------------------------------
    def _roots(self, read: Callable[[str], pa.Table], deltas: Mapping[str, pa.Table], reach: pa.Table,
               changed: list[Triple]) -> tuple[set[str], dict[str, tuple[bool, bool]]]:
        """The roots whose trees or pairs the step can change, and the membership (before, after)
        of those whose own membership may change: of the seed view's column for seeded roots (a
        root comes and goes with its seed), of ``nodes(G)`` for a zero-length match from every node.

        A tree gains or loses nodes only where a walk could take a changed edge, which starts at the
        end a move follows it from: the roots whose tree holds such an end in a state with that
        move, and the end itself when the start state has that move (a new root); a tree holding
        only the other end (a popular node every tree ends at) stays as it is."""
        path = self.path
        if path.root is not None:
            return {path.root}, {}
        starts: dict[tuple[str, str], set[str]] = defaultdict(set)
        for s, p, o, _ in changed:
            key = self._symbol(p)
            if key is not None:
                starts[(key, FORWARD)].add(s)
                starts[(key, BACKWARD)].add(o)
        roots: set[str] = set()
        new: set[str] = set()
        for symbol, ends in starts.items():
            states = sorted({q for q, sym in self.moves if sym == symbol})
            if not states:
                continue
            if 0 in states:
                new |= ends
            hit = reach.filter(pc.and_(pc.is_in(reach["node"], pa.array(sorted(ends), pa.string())),
                                       pc.is_in(reach["state"], pa.array([str(q) for q in states], pa.string()))))
            roots |= set(hit["root"].to_pylist())
        if path.seed is not None:
            view, column = path.seed
            members = _members(read(view), deltas.get(view), (column,), new)
            return roots | {x for x, (was, now) in members.items() if was or now}, members
        members = _members(read(path.nodes), deltas.get(path.nodes), ("v0", "v2"), set()) if path.nodes else {}
        return roots | new | {x for x, (was, now) in members.items() if was != now}, members

    def _trees(self, reach: pa.Table, roots: set[str]) -> dict[str, Tree]:
        rows = reach.filter(pc.is_in(reach["root"], pa.array(sorted(roots), pa.string())))
        columns = [pc.cast(rows[c], pa.int64()) if c in ("state", "pstate") else rows[c] for c in REACH_COLUMNS]
        trees: dict[str, Tree] = defaultdict(dict)
        for root, node, state, parent, pstate, ts in zip(*(c.to_pylist() for c in columns)):
            trees[root][(node, state)] = ((parent, pstate), int(ts) if ts else FOREVER)
        return trees

    # -- one tree ----------------------------------------------------------------------------------
    def _update(self, root: str, tree: Tree, edges: _Edges, removed_from: set[str], inserted_ends: set[str],
                expired: int | None) -> Tree:
        """``tree`` (the root's before the step, a copy) after the step (see the module text): lost
        witnesses cut their subtrees (or, on a pure expiry, the nodes whose time expired go), then
        a widest-path walk from the frontier adds what is reached and raises what is reached later."""
        start = (root, 0)
        if expired is not None:
            for node in [n for n, (_, ts) in tree.items() if ts <= expired]:
                del tree[node]
            frontier_vertices = inserted_ends
        else:
            lost = [node for node, (parent, ts) in tree.items()
                    if parent[0] in removed_from and not self._leads(parent, node, ts, edges)]
            children: dict[ProductNode, list[ProductNode]] = defaultdict(list)
            if lost:
                for node, (parent, _) in tree.items():
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
        time = {node: ts for node, (_, ts) in tree.items()}
        time[start] = FOREVER
        order = count()
        heap: list[tuple[int, int, ProductNode, ProductNode]] = []

        def push(node: ProductNode) -> None:
            for sym, target, ts in edges.out.get(node[0], ()):
                state = self.moves.get((node[1], sym))
                if state is not None and (target, state) != start:
                    heapq.heappush(heap, (-min(time[node], ts), next(order), (target, state), node))

        for node in [n for n in time if n[0] in frontier_vertices]:
            push(node)
        while heap:
            negative, _, reached, parent = heapq.heappop(heap)
            if -negative > time.get(reached, -1):
                time[reached] = -negative
                tree[reached] = (parent, -negative)
                push(reached)
        return tree

    def _leads(self, parent: ProductNode, node: ProductNode, ts: int, edges: _Edges) -> bool:
        """Whether an edge after the step still moves ``parent`` to ``node`` at time ``ts`` or later."""
        return any(target == node[0] and self.moves.get((parent[1], sym)) == node[1] and time >= ts
                   for sym, target, time in edges.out.get(parent[0], ()))

    def _answers(self, root: str, tree: Tree, member: bool) -> set[tuple[str, str]]:
        """The root's pairs: nodes reached in a final state, and the root itself on a zero-length
        match (a constant root always; a seed or a node only while it is one)."""
        pairs = {(root, node) for node, state in tree if state in self.finals}
        if self.path.automaton.nullable and (self.path.root is not None or member):
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


def _members(rows: pa.Table, change: pa.Table | None, columns: tuple[str, ...],
             candidates: set[str]) -> dict[str, tuple[bool, bool]]:
    """Whether each of ``candidates`` and each value ``change`` touches appears in ``columns`` of
    ``rows`` before and after ``change``: occurrences counted, the change's multiplicities added."""
    touched = set(candidates)
    if change is not None:
        for column in columns:
            touched |= set(change[column].to_pylist())
    if not touched:
        return {}
    values = pa.array(sorted(touched), pa.string())
    before: dict[str, int] = defaultdict(int)
    for column in columns:
        for x in rows.filter(pc.is_in(rows[column], values))[column].to_pylist():
            before[x] += 1
    after = dict(before)
    if change is not None:
        for column in columns:
            for x, mult in zip(change[column].to_pylist(), change[MULT].to_pylist()):
                after[x] = after.get(x, 0) + mult
    return {x: (before.get(x, 0) > 0, after.get(x, 0) > 0) for x in sorted(touched)}


def _tree_rows(root: str, tree: Tree, sign: int) -> list[dict]:
    return [{"root": root, "node": node, "state": str(state), "parent": parent, "pstate": str(pstate),
             "ts": "" if ts == FOREVER else str(ts), MULT: sign}
            for (node, state), ((parent, pstate), ts) in tree.items()]


def _expiry(after: pa.Table, inserted: list[Triple], deleted: list[Triple]) -> int | None:
    """τ when the step's deletions are a pure expiry: every edge of time τ or earlier went (as a
    window slide does), so exactly the nodes whose max-min time is at most τ lose every path and
    the rest keep their witnesses: a filter, with nothing to re-derive. None otherwise."""
    if not deleted:
        return None
    tau = max(time_of(t) for *_, t in deleted)
    if tau == FOREVER:
        return None
    remaining = [time_of(t) for *_, t in inserted] + [time_of(t) for t in pc.unique(after["t"]).to_pylist()]
    return tau if all(ts > tau for ts in remaining) else None


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
    views = {v for _, v in path.edges} | {v for v in (path.nodes, path.seed and path.seed[0]) if v}
    full = {v: read(v) for v in views}
    empty = lambda name: full[name].slice(0, 0) if name in full else tables[name].empty_table()  # noqa: E731
    changes = PathOperator(path).step(empty, full, initial=True)
    return {name: changes.get(name, schema.empty_table()) for name, schema in tables.items()}
