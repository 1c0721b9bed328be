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
  deleted) are picked from the forest's columns at once, not by going through each tree;
- a tree that only inserted edges reach is read whole only if the walk's first round changes it,
  which is found from its rows at the vertices that round moves from and to: one more edge at a
  popular node reaches thousands of trees that hold its other end already;
- the cut and the walk report the nodes they change, and only those give pairs and reach rows (a
  node that goes or moves is one -1 row, one that comes or moves one +1);
- the trees, the moves and the walk's rounds are integer-coded arrays (:mod:`.path_forest`), the
  vertices numbered for the step (:class:`~.path_edges.Terms`): strings are met once, when rows
  are read, and made again only for the rows written.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.automata import BACKWARD, FORWARD, OTHER
from views.path_views import ALL, PathDef

from ..sorted_sets import distinct, isin, union
from .arrow import consolidate
from .flat_paths import flat_changes, is_flat
from .lookup import Find, finder
from .path_edges import (FOREVER, NO_MEMBERS, TRIPLE_SCHEMA, Adjacency, CodedViews, EdgeIndexes, Edges, Membership,
                         Terms, ViewIndex, times, triple_keys, triples, view_columns)
from .path_forest import (Forest, Frontier, check_bounds, cut, key_parts, key_roots, pair_keys, pair_parts, reach_changes,
                          walk)
from .path_reach import REACH_SCHEMA, pairs_table, reached
from .threads import each
from .zsets import binding_schema


def path_tables(path: PathDef) -> dict[str, pa.Schema]:
    """The tables of a path view: its pairs (a view-shaped set) and its reach state."""
    return {path.id: binding_schema(path.columns), path.reach: REACH_SCHEMA}


def _signed(rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """A view change split into its inserted and deleted rows."""
    return rows.filter(pc.greater(rows[MULT], 0)), rows.filter(pc.less(rows[MULT], 0))


class PathOperator:
    """Maintains one path view (see the module text)."""

    def __init__(self, path: PathDef) -> None:
        self.path = path
        automaton = path.automaton
        self.moves = automaton.table()
        self.symbols = sorted({sym for _, sym in self.moves})
        # the transition table, and the states a walk can leave: a node in any other (the end of
        # `(a|b)`, of `a/b`) is reached, and its vertex's edges are never loaded for it
        self.trans = np.full((automaton.states, max(len(self.symbols), 1)), -1, np.int64)
        for (state, sym), nxt in self.moves.items():
            self.trans[state, self.symbols.index(sym)] = nxt
        self.leaving = np.zeros(automaton.states, bool)
        self.leaving[[state for state, _ in self.moves]] = True
        self.finals = sorted(automaton.finals)
        self.named = {sym[0] for sym in automaton.symbols if sym[0] != OTHER}
        self.other = automaton.uses_other
        self.flat = is_flat(path, self.moves)

    def _symbol(self, predicate: str) -> str | None:
        if predicate in self.named:
            return predicate
        return OTHER if self.other else None

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
        plus, minus = [TRIPLE_SCHEMA.empty_table()], [TRIPLE_SCHEMA.empty_table()]
        for predicate, view in path.edges:
            change = deltas.get(view)
            if change is not None and change.num_rows:
                inserted_rows, deleted_rows = _signed(change)
                plus.append(triples(predicate, inserted_rows, path.stamped))
                minus.append(triples(predicate, deleted_rows, path.stamped))
        inserted, deleted = pa.concat_tables(plus), pa.concat_tables(minus)
        find = find or finder(read)
        indexes = indexes or EdgeIndexes(read, find)
        views = [indexes.get(p, v, path.stamped) for p, v in path.edges]
        terms = indexes.terms(views)
        edges = Edges(views, inserted, deleted, self._symbol, self.symbols, terms,
                      self._inserted_ends(deltas, indexes, terms) if terms.graph is not None else None)
        sharing = list(sharing)
        if self.flat and not initial and not sharing:       # every match one edge: no tree read, no walk
            return flat_changes(path, self.trans[0], edges, deltas, find, indexes)
        roots, read_whole, members = self._roots(deltas, find, indexes, inserted, deleted)
        if not initial and not path.simple:
            roots = read_whole | self._changing(roots - read_whole, find, edges)
        before = Forest.of(reached(find, path.reach, roots), terms)
        root_codes = distinct(terms.encode(sorted(roots)))
        check_bounds(terms, len(self.leaving))
        stored = self._stored(read, find, roots) if path.simple and not initial else {}
        if path.simple:
            edges.load_reachable(root_codes)    # the enumeration follows every edge from a root
        expired = _expiry(_graph_after(views, deleted), inserted, deleted) \
            if path.stamped and deleted.num_rows else None
        seeded = path.seed is not None
        was, now = _membership(terms, root_codes, members)
        # first every tree loses what its deleted witnesses cut, then every tree is walked from
        # its frontier, all together
        gone = np.zeros(len(before), bool)
        if seeded:
            gone |= isin(before.root, distinct(root_codes[~now]))     # a seed that went takes its whole tree
        if expired is not None:
            gone |= before.ts <= expired
        elif deleted.num_rows:
            gone |= cut(before, self._witnessed_by(before, edges), edges, self.trans)
        forest = before.without(gone)
        starts = self._frontier(forest, root_codes[now] if seeded else root_codes, edges,
                                before.root[gone], before.node[gone] if expired is None else None,
                                whole=root_codes[~was & now] if seeded else root_codes[:0])
        grown = walk(forest, edges, self.trans, self.leaving, starts)
        changed = union(before.keys[gone], grown)
        # the roots whose pairs can change: those whose tree changed, whose membership changed
        # (a seed's of its view, a node's of the graph, for a zero-length match), or all of them
        # on the initial step and under simple paths
        active = root_codes if initial or path.simple else \
            union(key_roots(changed), root_codes[was != now])
        out: dict[str, pa.Table] = {}
        if path.simple:         # (simple paths are enumerated, never walked: none shares their walk)
            out[path.id] = self._simple_changes(terms, root_codes, now, stored, edges)
        for view in () if path.simple else (path, *sharing):
            out[view.id] = self._pair_changes(view, terms, before, forest, changed, active, root_codes,
                                              (was, now), initial)
        return {**out, path.reach: reach_changes(terms, before, forest, changed)}

    def _inserted_ends(self, deltas: Mapping[str, pa.Table], indexes: EdgeIndexes,
                       terms: Terms) -> tuple[np.ndarray, np.ndarray]:
        """The step's numbers of the subjects and objects of its inserted edges, in the order
        :meth:`step` puts them, from the run's numbers of its coded views' changes
        (:meth:`.path_graph.CodedAt.number`): each walk would hash the same strings again."""
        subjects, objects = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for predicate, view in self.path.edges:
            change = deltas.get(view)
            if change is not None and change.num_rows:
                numbered = indexes.coded.change(view)
                positive = pc.greater(change[MULT], 0).to_numpy(zero_copy_only=False)
                s, o, _ = view_columns(predicate)
                subjects.append(numbered[s][positive])
                objects.append(numbered[o][positive])
        return terms.adopt(np.concatenate(subjects)), terms.adopt(np.concatenate(objects))

    # -- the frontier, the cut's suspects -------------------------------------------------------
    def _frontier(self, forest: Forest, roots: np.ndarray, edges: Edges, gone_roots: np.ndarray,
                  gone_vertices: np.ndarray | None, whole: np.ndarray) -> Frontier:
        """Where the walk starts, semi-naively: the tree nodes (and the start) of ``roots`` at a
        vertex with a first move (an inserted edge's), or at a vertex with a move into one of the
        root's own removed nodes (``gone_roots`` and ``gone_vertices``, whose entering moves are
        added to the first ones here); along those moves only, except from the start of a root
        in ``whole`` (a new seed's, which had no tree), which follows every edge."""
        inserted_from = edges.first.sources()
        own = np.zeros(len(forest), bool)                   # rows with a move into a node their root lost
        own_start = np.zeros(len(roots), bool)              # roots whose start has one
        if gone_vertices is not None and len(gone_vertices):
            entered, source = edges.enter(gone_vertices)
            removed = distinct(pair_keys(gone_roots, gone_vertices))
            # joined from the tree's side: a popular vertex lost from many trees has thousands
            # of sources, few of them in any one of those trees
            into = Adjacency()
            into.add(distinct(source), source, np.zeros(len(source), np.int64), entered,
                     np.zeros(len(source), np.int64))
            rows = np.flatnonzero(isin(forest.node, into.sources()))
            which, _, dst, _ = into.gather(forest.node[rows])
            own[rows[which[isin(pair_keys(forest.root[rows[which]], dst), removed)]]] = True
            which, _, dst, _ = into.gather(roots)
            own_start[which[isin(pair_keys(roots[which], dst), removed)]] = True
        starts_root = (isin(roots, inserted_from) | own_start) & ~isin(roots, whole)
        start = np.concatenate([roots[starts_root], whole])
        every = np.concatenate([np.zeros(int(starts_root.sum()), bool), np.ones(len(whole), bool)])
        at = self.leaving[forest.state] & (isin(forest.node, inserted_from) | own) & isin(forest.root, roots)
        return Frontier(np.concatenate([start, forest.root[at]]), np.concatenate([start, forest.node[at]]),
                        np.concatenate([np.zeros(len(start), np.int64), forest.state[at]]),
                        np.concatenate([np.full(len(start), FOREVER, np.int64), forest.ts[at]]),
                        np.concatenate([every, np.zeros(int(at.sum()), bool)]))

    def _witnessed_by(self, forest: Forest, edges: Edges) -> np.ndarray:
        """Which rows join their parent to their node by a vertex pair that a deleted edge joins
        (either way round): the nodes whose witness edge may have gone."""
        s, o = edges.terms.encode(edges.deleted["s"]), edges.terms.encode(edges.deleted["o"])
        pairs = distinct(np.concatenate([pair_keys(s, o), pair_keys(o, s)]))
        return isin(pair_keys(forest.parent, forest.node), pairs)

    def _simple_changes(self, terms: Terms, roots: np.ndarray, now: np.ndarray,
                        stored: Mapping[str, set[tuple[str, str]]], edges: Edges) -> pa.Table:
        """The pairs of each root that come and go under simple-path semantics: enumerated again
        (the walk forest only tells which roots a batch touches) and compared with those stored."""
        path = self.path
        pairs: dict[tuple[str, str], int] = defaultdict(int)
        for code, root, member in zip(roots.tolist(), terms.decode(roots).to_pylist(), now.tolist()):
            old = stored.get(root, set())
            new = self._simple(code, edges) if member or path.seed is None else set()
            new |= {(root, root)} if path.nullable and (path.root is not None or member) else set()
            for pair, sign in [(pair, -1) for pair in old - new] + [(pair, 1) for pair in new - old]:
                pairs[pair] += sign
        kept = sorted(pair for pair, sign in pairs.items() if sign)
        return pairs_table(path, [r for r, _ in kept], [v for _, v in kept], [pairs[k] for k in kept])

    def _simple(self, root: int, edges: Edges) -> set[tuple[str, str]]:
        """The root's pairs under simple-path semantics: nodes reached in a final state along a
        path that repeats no node, the root included (depth-first, every such path: exponential in
        the worst case)."""
        found: set[int] = set()
        on_path = {root}

        def visit(vertex: int, state: int) -> None:
            for sym, target, _ in edges.moves_of(vertex):
                nxt = int(self.trans[state, sym])
                if nxt < 0 or target in on_path:
                    continue
                if nxt in self.finals:
                    found.add(target)
                on_path.add(target)
                visit(target, nxt)
                on_path.discard(target)

        visit(root, 0)
        name = edges.terms.decode_list([root])[0]
        return {(name, vertex) for vertex in edges.terms.decode_list(sorted(found))}

    def _stored(self, read: Callable[[str], pa.Table], find: Find, roots: set[str]) -> dict[str, set[tuple[str, str]]]:
        """The pairs the path view holds for ``roots`` before the step (simple paths are not a
        function of the walk forest, so their answers before are read back)."""
        path = self.path
        if path.root is None:
            rows = find(path.id, {"v0": pa.array(sorted(roots), pa.string())})
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
    def _roots(self, deltas: Mapping[str, pa.Table], find: Find, indexes: EdgeIndexes, inserted: pa.Table,
               deleted: pa.Table) -> tuple[set[str], set[str], Membership]:
        """The roots whose trees or pairs the step can change; those of them whose trees it reads
        whole, whatever their walk does (a deleted edge may cut the tree, or the root's own
        membership changes); and the membership (before, after) of those whose own membership may
        change: of the seed view's column for seeded roots (a root comes and goes with its seed),
        of ``nodes(G)`` for a zero-length match from every node."""
        path = self.path
        if path.root is not None:
            return {path.root}, {path.root}, NO_MEMBERS
        held, starting = self._holding(find, inserted)
        cut, cut_starting = self._holding(find, deleted)
        roots, new = held | cut, starting | cut_starting
        if path.seed is not None:
            view, column = path.seed
            members = indexes.members(view, deltas.get(view), (column,), new)
            roots |= members.present
        else:
            members = indexes.members(path.nodes, deltas.get(path.nodes), ("v0", "v2"), set()) if path.nodes \
                else NO_MEMBERS
            roots |= new | members.changed
        return roots, cut | cut_starting | members.changed, members

    def _holding(self, find: Find, changed: pa.Table) -> tuple[set[str], set[str]]:
        """The roots whose tree holds an end a ``changed`` edge (s, p, o, t) can be followed from,
        in a state with that move, and the ends the start state moves from (roots, new ones
        perhaps). A tree gains or loses nodes only where a walk could take a changed edge; a tree
        holding only the other end (a popular node every tree ends at) stays as it is. The ends
        are picked by symbol in Arrow (each distinct predicate mapped once, as :meth:`Edges.moves`
        does): a Python loop over the batch's edges, for each path, held the GIL the other walks
        wait on."""
        roots: set[str] = set()
        new: set[str] = set()
        if not changed.num_rows:
            return roots, new
        encoded = pc.dictionary_encode(changed["p"]).combine_chunks()
        keys = [self._symbol(p) for p in encoded.dictionary.to_pylist()]
        which = encoded.indices.to_numpy(zero_copy_only=False)
        starts: dict[tuple[str, str], pa.ChunkedArray] = {}
        for key in {k for k in keys if k is not None}:
            edges = changed.filter(pa.array(np.isin(which, [i for i, k in enumerate(keys) if k == key])))
            starts[(key, FORWARD)], starts[(key, BACKWARD)] = edges["s"], edges["o"]
        for symbol, column in starts.items():
            states = sorted({q for q, sym in self.moves if sym == symbol})
            if not states:
                continue
            ends = pc.unique(column)
            if 0 in states:
                new |= set(ends.to_pylist())
            hit = find(self.path.reach, {"node": ends, "state": pa.array([str(q) for q in states], pa.string())},
                       ["root"])
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
        first = edges.first
        ends = union(first.sources(), first.gather(first.sources())[2])
        rows = reached(find, self.path.reach, candidates, edges.terms.decode(ends))
        partial = Forest.of(rows, edges.terms)
        starts = self._frontier(partial, distinct(edges.terms.encode(sorted(candidates))), edges, partial.root[:0], None,
                                partial.root[:0])
        changed = walk(partial, edges, self.trans, self.leaving, starts, rounds=1)
        return set(edges.terms.decode(distinct(key_roots(changed))).to_pylist())

    # -- the pairs --------------------------------------------------------------------------------
    def _pair_changes(self, view: PathDef, terms: Terms, before: Forest, after: Forest, changed: np.ndarray,
                      active: np.ndarray, roots: np.ndarray, member: tuple[np.ndarray, np.ndarray],
                      initial: bool) -> pa.Table:
        """The pairs of path view ``view`` (this one, or one sharing its walk) that come (+1) or go
        (-1): a pair is a node reached in a final state, or the root itself on a zero-length match
        (a constant root always; a seed or a node only while it is one: ``member`` before and
        after, by root of ``roots``); only the vertices of ``changed`` nodes and the ``active``
        roots themselves can change. On the ``initial`` step there are no pairs before."""
        root, vertex, state = key_parts(changed)
        final = isin(state, np.array(self.finals, np.int64))
        candidates = pair_keys(root[final], vertex[final])
        if view.nullable:
            candidates = np.concatenate([candidates, pair_keys(active, active)])
        root, vertex = pair_parts(distinct(candidates))
        at = np.searchsorted(roots, root)               # roots sorted: the step's, numbered in order
        zero = (vertex == root) & view.nullable
        held = [zero & (view.root is not None or m[np.minimum(at, len(m) - 1)]) for m in member]
        was = np.zeros(len(root), bool) if initial else before.reaches(root, vertex, self.finals) | held[0]
        now = after.reaches(root, vertex, self.finals) | held[1]
        sign = now.astype(np.int64) - was.astype(np.int64)
        moved = sign != 0
        return pairs_table(view, terms.decode(root[moved]), terms.decode(vertex[moved]), sign[moved])


def _membership(terms: Terms, roots: np.ndarray, members: Membership) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of ``roots`` is a member (of its seed view, or of the graph) before and after
    the step; a root whose triples did not change is in both (it has a tree)."""
    return members.of(terms.decode(roots))


def _graph_after(views: list[ViewIndex], deleted: pa.Table) -> pa.Table:
    """A path's edges after the step's deletions, as (s, p, o, t) (the inserted ones left out)."""
    graph = pa.concat_tables([TRIPLE_SCHEMA.empty_table(), *(v.triples for v in views)])
    if not deleted.num_rows:
        return graph
    return graph.filter(pc.invert(pc.is_in(triple_keys(graph), value_set=triple_keys(deleted))))


def _expiry(after: pa.Table, inserted: pa.Table, deleted: pa.Table) -> int | None:
    """τ when the step's deletions are a pure expiry: every edge of time τ or earlier went (as a
    window slide does), so exactly the nodes whose max-min time is at most τ lose every path and
    the rest keep their witnesses: a filter, with nothing to re-derive. None otherwise."""
    if not deleted.num_rows:
        return None
    tau = int(times(deleted["t"]).max())
    if tau == FOREVER:
        return None
    remaining = np.concatenate([times(inserted["t"]), times(pc.unique(after["t"]))])
    return tau if bool((remaining > tau).all()) else None


def path_changes(paths: Iterable[PathDef], read: Callable[[str], pa.Table],
                 deltas: Mapping[str, pa.Table], find: Find | None = None,
                 coded: CodedViews | None = None) -> dict[str, pa.Table]:
    """Every path view's and reach table's change for the views' ``deltas`` (non-empty ones
    only); ``find`` looks up the path tables' rows (see :meth:`PathOperator.step`), ``coded``
    gives the edge views the run keeps coded (:mod:`.path_graph`). Each walk writes tables of
    its own and shares the edge views' indexes, so the walks run on threads
    (:func:`.threads.each`: most of a walk is Arrow and numpy, which release the GIL)."""
    out: dict[str, pa.Table] = {}
    find = find or finder(read)
    indexes = EdgeIndexes(read, find, coded)

    def walked(group: tuple[PathDef, list[PathDef]]) -> dict[str, pa.Table]:
        path, sharing = group
        return PathOperator(path).step(read, deltas, indexes=indexes, find=find, sharing=sharing)
    paths = list(paths)
    for path in paths:          # the run's coded views are built here, before the walks read them
        for predicate, view in path.edges:
            if indexes.get(predicate, view, path.stamped).coded is not None and view in deltas:
                coded.number(view, predicate, deltas[view])
        if coded is not None and path.nodes and not path.stamped and path.nodes in deltas:
            coded.number(path.nodes, ALL, deltas[path.nodes])       # (the nodes' membership)
    for changes in each(walked, walks(paths)):
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
