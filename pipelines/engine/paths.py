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
2. **re-derivation and insertion**, semi-naively: the frontier is every tree node (and the root's
   start) at a vertex that an inserted edge, or an edge into a removed node, moves from; the
   walk's first round follows only those edges (every other edge from a tree node led into the
   tree already), and from there on a breadth-first walk over the graph after the step adds each
   node not in the tree, with the node it came from as parent (a new seed's tree, which had none,
   is walked from its start along every edge). A node reachable after the step but outside the
   tree has a path from the root whose first node outside the tree follows a tree node by an
   inserted edge or by an edge into a removed node: the walk finds it. So the tree is again
   exactly the reachable nodes.

Under stream windows each edge carries its time in the window and each reached node the largest,
over the paths reaching it, of the smallest edge time (S-PATH's timestamps): step 2 is then a
widest-path walk (which also raises the nodes a later edge improves), and a step whose deletions
are a pure expiry (every edge of time τ or earlier went, as a window slide does) drops exactly the
nodes of time ≤ τ instead of step 1: a filter, nothing re-derived. Outside windows every time is
:data:`FOREVER` and the walk is breadth-first.

Counting derivations would not do: on a cycle, the nodes support each other after the edge that
reached the cycle goes. The witness forest has no cycles (a parent set a node's time, so a cycle
would need a node raised above its own time), so a deleted edge removes exactly what it witnessed.

A path whose every match is one edge or none (`a|b`, `a?`) has flat trees and takes a step of its
own, without a walk (:mod:`.flat_paths`), after the backfill this operator makes.

A star ``p*`` walks the automaton of ``p+`` (:class:`~views.path_views.PathDef`, ``walk``): the
path views of one reach table, a star and its plus from the same roots, take one step together
(:func:`walks`), each reading its pairs off the same trees, the star adding the zero-length ones.

The walk runs in this process on both Z-set engines (a round on a small frontier would cost a
Spark job each); the state is read as Arrow at the versions the batch started from, so a re-run
after a crash computes the very same changes. Its cost follows the roots the batch touches and the
nodes whose reachability changes, set at a time where it can be:
- the walk goes over every touched tree at once, a round at a time, and each round looks up the
  edges of the vertices it moves from, all in one lookup in the edge views' indexes
  (:mod:`.path_edges`): no edge is read that no walk follows;
- the rows a step starts from (tree nodes at an inserted edge's end, nodes whose witness edge was
  deleted) are picked from the reach rows in Arrow, not by going through each tree;
- a tree that only inserted edges reach is read whole only if the walk's first round changes it,
  which is found from its rows at the vertices that round moves from and to: one more edge at a
  popular node reaches thousands of trees that hold its other end already;
- the cut and the walk report the nodes they change, and only those give pairs and reach rows (a
  node that goes or moves is one -1 row, one that comes or moves one +1).
"""
from __future__ import annotations

import functools
import gc
from collections import defaultdict
from typing import Callable, Container, Iterable, Iterator, Mapping, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.automata import BACKWARD, FORWARD, OTHER
from views.path_views import PathDef

from .arrow import consolidate
from .flat_paths import flat_changes, is_flat
from .lookup import Find, finder
from .path_edges import FOREVER, TRIPLE_SCHEMA, EdgeIndexes, Edges, Triple, ViewIndex, time_of, triples, tuples
from .path_reach import REACH_SCHEMA, ProductNode, Tree, entries_of, pairs_table, reach_row, reach_table, reached
from .zsets import binding_schema


F = TypeVar("F", bound=Callable)


def _without_cycle_collection(step: F) -> F:
    """Run ``step`` with Python's cycle collector paused. A step builds its trees as millions of
    small tuples and dicts, none of them in a cycle (reference counting frees them all), and the
    collector, triggered by the count of allocations, kept traversing them: a quarter of the path
    operator's time on 10,000-edge batches at 1M edges. It is enabled again afterwards, unless it
    was off already (another thread's step, or the caller's choice)."""
    @functools.wraps(step)
    def paused(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return step(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
    return paused  # type: ignore[return-value]


def path_tables(path: PathDef) -> dict[str, pa.Schema]:
    """The tables of a path view: its pairs (a view-shaped set) and its reach state."""
    return {path.id: binding_schema(path.columns), path.reach: REACH_SCHEMA}


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
        # the states a walk can leave: a node in any other (the end of `(a|b)`, of `a/b`) is
        # reached, and its vertex's edges are never loaded for it
        self.leaving = {state for state, _ in self.moves}
        self.finals = set(automaton.finals)
        self.named = {sym[0] for sym in automaton.symbols if sym[0] != OTHER}
        self.other = automaton.uses_other
        self.flat = is_flat(path, self.moves)

    def _symbol(self, predicate: str) -> str | None:
        if predicate in self.named:
            return predicate
        return OTHER if self.other else None

    @_without_cycle_collection
    def step(self, read: Callable[[str], pa.Table], deltas: Mapping[str, pa.Table],
             initial: bool = False, indexes: EdgeIndexes | None = None, find: Find | None = None,
             sharing: Iterable[PathDef] = ()) -> dict[str, pa.Table]:
        """The changes of the path's tables (keyed by table name) when its edge views (and its
        seed view, or the view of every triple for ``nodes(G)``) change by ``deltas``; ``read``
        gives a table as the step started, ``indexes`` its edge views indexed (shared by the path
        views of a batch), ``find`` the rows of its own tables by a column's values (by default
        from ``read``: the reach table is looked up for the roots a batch touches, never used
        whole). Empty when none of them changed, unless ``initial`` (the step from nothing, where
        a constant root's zero-length pair answers even with no edges). The pairs of the path views
        ``sharing`` its walk (:func:`walks`) come from the same walk."""

        path = self.path
        touched = [v for _, v in path.edges] + [v for v in (path.nodes, path.seed and path.seed[0]) if v]
        if not initial and not any(v in deltas and deltas[v].num_rows for v in touched):
            return {}
        inserted: list[Triple] = []
        deleted: list[Triple] = []
        for predicate, view in path.edges:
            change = deltas.get(view)
            if change is not None and change.num_rows:
                plus, minus = _signed(change)
                inserted += tuples(triples(predicate, plus, path.stamped))
                deleted += tuples(triples(predicate, minus, path.stamped))
        find = find or finder(read)
        indexes = indexes or EdgeIndexes(read, find)
        views = [indexes.get(p, v, path.stamped) for p, v in path.edges]
        edges = Edges(views, inserted, set(deleted), self._symbol, {sym[1] for _, sym in self.moves})
        sharing = list(sharing)
        if self.flat and not initial and not sharing:       # every match one edge: no tree read, no walk
            return flat_changes(path, self.moves, edges, deltas, find, indexes)
        roots, read_whole, members = self._roots(deltas, find, indexes, inserted, deleted)
        if not initial and not path.simple:
            roots = read_whole | self._changing(roots - read_whole, find, edges)
        rows = reached(find, path.reach, roots)
        trees = _trees(rows)
        stored = self._stored(read, find, roots) if path.simple and not initial else {}
        if path.simple:
            edges.load_reachable(roots)         # the enumeration follows every edge from a root
        expired = _expiry(_graph_after(views, deleted), inserted, deleted) if path.stamped and deleted else None
        seeded = path.seed is not None
        # first every tree loses what its deleted witnesses cut (the parents' edges looked up at
        # once for all trees), then every tree is walked from its frontier, all together
        suspects = _by_root(rows, _witnessed_by(rows, deleted)) if deleted and expired is None else {}
        edges.load({parent[0] for nodes in suspects.values() for _, (parent, _) in nodes})
        cuts: dict[str, tuple[Tree, set[ProductNode]]] = {}
        for root in sorted(roots):
            tree = trees.get(root, {})
            if seeded and not members.get(root, (True, True))[1]:
                cuts[root] = {}, set(tree)              # a seed that went takes its whole tree
            else:
                # a tree is copied only where it changes: here where it may be cut, below where
                # it is walked (a deletion reads tens of thousands of trees, most left as they were)
                after = dict(tree) if expired is not None or root in suspects else tree
                cuts[root] = after, self._cut(after, suspects.get(root, []), edges, expired)
        # the walk starts semi-naively: from the tree nodes (and the start) at a vertex with a
        # first move (an inserted edge's, or one into a removed node), along those moves only,
        # except from a new seed's start, which follows every edge (it had no tree)
        inserted_from = set(edges.first)
        sources = edges.enter({v for _, gone in cuts.values() for v, _ in gone}) if expired is None else {}
        at_starts = _at(rows, edges.first, self.leaving)
        frontier: dict[str, list[ProductNode]] = {}
        whole: set[str] = set()
        for root, (after, gone) in cuts.items():
            was, now = members.get(root, (True, True))
            if seeded and not now:
                continue
            if seeded and not was:
                whole.add(root)
            # the tree's own starts: where a walk can re-enter one of its removed nodes
            own = {u for v in {v for v, _ in gone} for u in sources.get(v, ())} if gone else frozenset()
            nodes = _starts(root, after, at_starts.get(root, ()), inserted_from, own, root in whole)
            if nodes:
                frontier[root] = nodes
        for root in frontier:       # the walk grows trees in place: copy those no cut copied
            after, gone = cuts[root]
            if after is trees.get(root):
                cuts[root] = dict(after), gone
        walked = self._walk({root: cuts[root][0] for root in frontier}, edges, frontier, whole)
        pairs: dict[str, dict[tuple[str, str], int]] = {p.id: defaultdict(int) for p in (path, *sharing)}
        reach: list[tuple] = []
        for root, (after, gone) in cuts.items():
            # (before, after): a seed's membership of its view, a node's of the graph (for a
            # zero-length match); a root whose triples did not change is in both (it has a tree)
            was, now = members.get(root, (True, True))
            grown = walked.get(root)
            changed = gone | grown if grown else gone
            if not (changed or was != now or initial or path.simple):
                continue    # the tree and the root's membership as they were: most trees a deletion reads
            before = trees.get(root, {})
            if path.simple:
                old = set() if initial else stored.get(root, set())
                new = self._simple(root, edges) if not (seeded and not now) else set()
                new |= {(root, root)} if path.nullable and (path.root is not None or now) else set()
                for pair, sign in [(pair, -1) for pair in old - new] + [(pair, 1) for pair in new - old]:
                    pairs[path.id][pair] += sign
            else:
                for view in (path, *sharing):
                    for pair, sign in self._pair_changes(view, root, before, after, changed, (was, now), initial):
                        pairs[view.id][pair] += sign
            reach += _reach_changes(root, before, after, changed)
        out = {view.id: pairs_table(view, pairs[view.id]) for view in (path, *sharing)}
        return {**out, path.reach: reach_table(reach)}

    def _simple(self, root: str, edges: Edges) -> set[tuple[str, str]]:
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

    def _stored(self, read: Callable[[str], pa.Table], find: Find, roots: set[str]) -> dict[str, set[tuple[str, str]]]:
        """The pairs the path view holds for ``roots`` before the step (simple paths are not a
        function of the walk forest, so their answers before are read back)."""
        path = self.path
        if path.root is None:
            rows = find(path.id, "v0", pa.array(sorted(roots), pa.string()))
        else:
            rows = read(path.id)
            rows = consolidate(rows, [c for c in rows.column_names if c != MULT])
        out: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for row in rows.to_pylist():
            if path.root is not None:
                out[path.root].add((path.root, row["v0"] if path.end is None else path.end))
            else:
                out[row["v0"]].add((row["v0"], row["v0"] if path.same else row["v1"]))
        return out

    # -- roots and their trees -------------------------------------------------------------------
    def _roots(self, deltas: Mapping[str, pa.Table], find: Find, indexes: EdgeIndexes, inserted: list[Triple],
               deleted: list[Triple]) -> tuple[set[str], set[str], dict[str, tuple[bool, bool]]]:
        """The roots whose trees or pairs the step can change; those of them whose trees it reads
        whole, whatever their walk does (a deleted edge may cut the tree, or the root's own
        membership changes); and the membership (before, after) of those whose own membership may
        change: of the seed view's column for seeded roots (a root comes and goes with its seed),
        of ``nodes(G)`` for a zero-length match from every node."""
        path = self.path
        if path.root is not None:
            return {path.root}, {path.root}, {}
        held, starting = self._holding(find, inserted)
        cut, cut_starting = self._holding(find, deleted)
        roots, new = held | cut, starting | cut_starting
        if path.seed is not None:
            view, column = path.seed
            members = indexes.members(view, deltas.get(view), (column,), new)
            roots |= {x for x, (was, now) in members.items() if was or now}
        else:
            members = indexes.members(path.nodes, deltas.get(path.nodes), ("v0", "v2"), set()) if path.nodes else {}
            roots |= new | {x for x, (was, now) in members.items() if was != now}
        return roots, cut | cut_starting | {x for x, (was, now) in members.items() if was != now}, members

    def _holding(self, find: Find, changed: list[Triple]) -> tuple[set[str], set[str]]:
        """The roots whose tree holds an end a ``changed`` edge can be followed from, in a state
        with that move, and the ends the start state moves from (roots, new ones perhaps). A tree
        gains or loses nodes only where a walk could take a changed edge; a tree holding only the
        other end (a popular node every tree ends at) stays as it is."""
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
            hit = find(self.path.reach, "node", pa.array(sorted(ends), pa.string()), ["root", "state"])
            hit = hit.filter(pc.is_in(hit["state"], pa.array([str(q) for q in states], pa.string())))
            roots |= set(hit["root"].to_pylist())
        return roots, new

    def _changing(self, candidates: set[str], find: Find, edges: Edges) -> set[str]:
        """Those of ``candidates`` (roots only inserted edges reach) whose trees the step changes,
        found without reading their trees: the walk's first round reads only the tree nodes at the
        vertices it moves from and to, so it runs on those rows alone, and a tree it leaves as it
        was stays so (every later round moves from nodes an earlier one changed). A popular node's
        one more edge reaches thousands of trees that hold its other end already."""
        if not candidates:
            return set()
        ends = set(edges.first) | {target for moves in edges.first.values() for _, target, _ in moves}
        rows = reached(find, self.path.reach, ends, "node")
        rows = rows.filter(pc.is_in(rows["root"], pa.array(sorted(candidates), pa.string())))
        trees = _trees(rows)
        at_starts = _at(rows, edges.first, self.leaving)
        frontier = {root: nodes for root in candidates
                    if (nodes := _starts(root, trees[root], at_starts.get(root, ()), edges.first, set(), False))}
        return {root for root, nodes in self._walk(trees, edges, frontier, set(), rounds=1).items() if nodes}

    # -- one tree ---------------------------------------------------------------------------------
    def _cut(self, tree: Tree, suspects: list[tuple[ProductNode, tuple[ProductNode, int]]], edges: Edges,
             expired: int | None) -> set[ProductNode]:
        """Remove from ``tree`` (a root's before the step, a copy unless nothing can be cut) the
        nodes that lost every path and return them: the subtrees whose witness edge went, or, on a
        pure expiry, the nodes whose time expired (see the module text). ``suspects`` are the
        tree's nodes whose parent is joined to them by a deleted edge (:func:`_witnessed_by`),
        ``edges`` holds their parents' edges: a suspect that another edge still leads to keeps its
        witness."""
        if expired is not None:
            gone = {node for node, (_, ts) in tree.items() if ts <= expired}
        else:
            lost = [node for node, (parent, ts) in suspects if not self._leads(parent, node, ts, edges)]
            gone = set()
            if lost:
                children: dict[ProductNode, list[ProductNode]] = defaultdict(list)
                for node, (parent, _) in tree.items():
                    children[parent].append(node)
                while lost:
                    node = lost.pop()
                    if node not in gone:
                        gone.add(node)
                        lost += children.get(node, [])
        for node in gone:
            del tree[node]
        return gone

    def _walk(self, trees: dict[str, Tree], edges: Edges, frontier: dict[str, list[ProductNode]],
              whole: set[str], rounds: int | None = None) -> dict[str, set[ProductNode]]:
        """A widest-path walk in place over every root's tree at once, a round at a time from each
        root's ``frontier`` (nodes of its tree, or its start node), which the first round moves
        from along the step's first moves only (:attr:`Edges.first`; every move from the start of
        a root in ``whole``): then a round loads the edges of the vertices it moves from in one
        lookup, adds what they reach and raises what they reach at a later time (the max-min time
        of each node converges as in Bellman-Ford; outside windows every time is :data:`FOREVER`,
        so this is a breadth-first walk), and the nodes it changed are the next round's frontier.
        A node's parent is the node that last set its time, which keeps the parents a forest: a
        cycle would need a node raised above its own time. Returns the nodes each tree gained or
        raised, so that the caller's work follows them, not the trees (after ``rounds`` rounds, if
        given)."""
        changed: dict[str, set[ProductNode]] = defaultdict(set)
        first = True
        edges.load(whole)
        while frontier and rounds != 0:
            if not first:
                edges.load({vertex for nodes in frontier.values() for vertex, _ in nodes})
            following: dict[str, dict[ProductNode, None]] = defaultdict(dict)
            for root, nodes in frontier.items():
                tree, start = trees[root], (root, 0)
                for node in nodes:
                    time = FOREVER if node == start else tree[node][1]
                    moves = edges.first if first and not (node == start and root in whole) else edges.out
                    for sym, target, ts in moves.get(node[0], ()):
                        state = self.moves.get((node[1], sym))
                        reached = (target, state)
                        if state is None or reached == start:
                            continue
                        reached_at, entry = min(time, ts), tree.get(reached)
                        if entry is None or reached_at > entry[1]:
                            tree[reached] = (node, reached_at)
                            changed[root].add(reached)
                            if state in self.leaving:
                                following[root][reached] = None
            frontier = {root: list(nodes) for root, nodes in following.items()}
            first = False
            rounds = None if rounds is None else rounds - 1
        return changed

    def _leads(self, parent: ProductNode, node: ProductNode, ts: int, edges: Edges) -> bool:
        """Whether an edge after the step still moves ``parent`` to ``node`` at time ``ts`` or later."""
        return any(target == node[0] and self.moves.get((parent[1], sym)) == node[1] and time >= ts
                   for sym, target, time in edges.out.get(parent[0], ()))

    def _pair_changes(self, view: PathDef, root: str, before: Tree, after: Tree, changed: set[ProductNode],
                      member: tuple[bool, bool], initial: bool) -> Iterator[tuple[tuple[str, str], int]]:
        """The root's pairs of path view ``view`` (this one, or one sharing its walk) that come
        (+1) or go (-1): a pair is a node reached in a final state, or the root itself on a
        zero-length match (a constant root always; a seed or a node only while it is one:
        ``member`` before and after); only the vertices of ``changed`` nodes and the root can
        change. On the ``initial`` step there are no pairs before."""
        candidates = {v for v, q in changed if q in self.finals} | ({root} if view.nullable else set())
        for vertex in candidates:           # in any order: the step sorts the pairs it gives
            was = not initial and self._has_pair(view, root, vertex, before, member[0])
            now = self._has_pair(view, root, vertex, after, member[1])
            if was != now:
                yield (root, vertex), (1 if now else -1)

    def _has_pair(self, view: PathDef, root: str, vertex: str, tree: Tree, member: bool) -> bool:
        """Whether ``(root, vertex)`` is one of the root's pairs of ``view`` with this tree and
        membership."""
        for final in self.finals:       # a loop, not any(): called for every changed final node
            if (vertex, final) in tree:
                return True
        return vertex == root and view.nullable and (view.root is not None or member)


def _runs(roots: pa.ChunkedArray) -> Iterator[tuple[str, int, int]]:
    """The runs of equal values in ``roots`` as (value, start, end): the reach rows of a root
    come together from a lookup by root, so that its tree is built from slices."""
    if not len(roots):
        return
    values = roots.combine_chunks() if roots.num_chunks != 1 else roots.chunk(0)
    starts = [0, *(np.flatnonzero(pc.not_equal(values[1:], values[:-1]).to_numpy(zero_copy_only=False)) + 1)]
    ends = [*starts[1:], len(values)]
    for start, end in zip(starts, ends):
        yield values[start].as_py(), start, end


def _trees(rows: pa.Table) -> dict[str, Tree]:
    """Each root's tree from its reach rows."""
    trees: dict[str, Tree] = defaultdict(dict)
    nodes, entries = entries_of(rows)
    for root, start, end in _runs(rows["root"]):
        trees[root].update(zip(nodes[start:end], entries[start:end]))
    return trees


def _by_root(rows: pa.Table, mask: pa.ChunkedArray) -> dict[str, list[tuple[ProductNode, tuple[ProductNode, int]]]]:
    """The reach rows where ``mask`` holds, as each root's (node, (parent, time)) entries: picked
    in Arrow, so that a batch's work follows the few rows it needs, not the trees it touches."""
    out: dict[str, list[tuple[ProductNode, tuple[ProductNode, int]]]] = defaultdict(list)
    picked = rows.filter(mask)
    nodes, entries = entries_of(picked)
    for root, start, end in _runs(picked["root"]):
        out[root] += zip(nodes[start:end], entries[start:end])
    return out


def _starts(root: str, tree: Tree, at_root: Iterable[tuple[ProductNode, object]], moving_from: Container[str],
            own: set[str], start: bool) -> list[ProductNode]:
    """Where a root's walk starts: its start node (when ``start``, or when a first move leaves
    the root or its ``own`` re-entry vertices) and the nodes of its ``tree`` among ``at_root`` (its
    reach rows at those vertices) at a vertex that a first move leaves (``moving_from``) or of
    ``own``."""
    nodes = [(root, 0)] if start or root in moving_from or root in own else []
    return nodes + [node for node, _ in at_root if node in tree and (node[0] in moving_from or node[0] in own)]


def _at(rows: pa.Table, vertices: Iterable[str],
        states: Iterable[int]) -> dict[str, list[tuple[ProductNode, tuple[ProductNode, int]]]]:
    """The reach rows at one of ``vertices`` (where the walk's first moves leave) in one of
    ``states`` (those a move leaves), by root."""
    return _by_root(rows, pc.and_(pc.is_in(rows["node"], pa.array(sorted(vertices), pa.string())),
                                  pc.is_in(rows["state"], pa.array(sorted(states), pa.int64()))))


def _witnessed_by(rows: pa.Table, deleted: list[Triple]) -> pa.ChunkedArray:
    """Which reach rows join their parent to their node by a vertex pair that a ``deleted`` edge
    joins (either way round): the nodes whose witness edge may have gone."""
    pairs = sorted({key for s, _, o, _ in deleted for key in (f"{s}\n{o}", f"{o}\n{s}")})
    return pc.is_in(pc.binary_join_element_wise(rows["parent"], rows["node"], "\n"), pa.array(pairs, pa.string()))


def _reach_changes(root: str, before: Tree, after: Tree, changed: set[ProductNode]) -> list[tuple]:
    """The root's reach rows that go (-1) and come (+1) among the ``changed`` nodes (a node whose
    entry is the same after the step gives nothing): the change, not the whole tree twice."""
    rows = []
    for node in sorted(changed):
        old, new = before.get(node), after.get(node)
        if old != new:
            rows += [reach_row(root, node, entry, sign) for entry, sign in ((old, -1), (new, 1)) if entry is not None]
    return rows


def _graph_after(views: list[ViewIndex], deleted: list[Triple]) -> pa.Table:
    """A path's edges after the step's deletions, as (s, p, o, t) (the inserted ones left out)."""
    return _without(pa.concat_tables([pa.Table.from_batches([], TRIPLE_SCHEMA), *(v.triples for v in views)]), deleted)


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


def path_changes(paths: Iterable[PathDef], read: Callable[[str], pa.Table],
                 deltas: Mapping[str, pa.Table], find: Find | None = None) -> dict[str, pa.Table]:
    """Every path view's and reach table's change for the views' ``deltas`` (non-empty ones
    only); ``find`` looks up the path tables' rows (see :meth:`PathOperator.step`)."""
    out: dict[str, pa.Table] = {}
    find = find or finder(read)
    indexes = EdgeIndexes(read, find)
    for path, sharing in walks(paths):
        changes = PathOperator(path).step(read, deltas, indexes=indexes, find=find, sharing=sharing)
        out.update({t: rows for t, rows in changes.items() if rows.num_rows})
    return out


def walks(paths: Iterable[PathDef]) -> list[tuple[PathDef, list[PathDef]]]:
    """``paths`` by the walk they share (their reach table: a star and its plus from the same
    roots), each walk once: the path view that walks it (one with zero-length pairs, whose roots
    include the nodes that only those change) and the others."""
    by_reach: dict[str, list[PathDef]] = defaultdict(list)
    for path in paths:
        by_reach[path.reach].append(path)
    groups = [sorted(group, key=lambda p: (not p.nullable, p.id)) for group in by_reach.values()]
    return [(group[0], group[1:]) for group in groups]


def path_backfill(path: PathDef, read: Callable[[str], pa.Table]) -> dict[str, pa.Table]:
    """A path's whole state from its edge views as ``read`` gives them: the step from nothing."""
    tables = path_tables(path)
    views = {v for _, v in path.edges} | {v for v in (path.nodes, path.seed and path.seed[0]) if v}
    full = {v: read(v) for v in views}
    empty = lambda name: full[name].slice(0, 0) if name in full else tables[name].empty_table()  # noqa: E731
    changes = PathOperator(path).step(empty, full, initial=True)
    return {name: changes.get(name, schema.empty_table()) for name, schema in tables.items()}
