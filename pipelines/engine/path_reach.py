"""A path view's two tables as rows: the reach table (each root's witness tree, one row per
reached product node) and the view of (root, end) pairs. Both path steps, the general walk
(:mod:`.paths`) and the one for views of one-edge matches (:mod:`.flat_paths`), read and write them
through these, so that they keep the very same rows.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.tables import MULT
from views.path_views import PathDef

from .lookup import Find
from .path_edges import FOREVER
from .zsets import binding_schema

#: The reach table's columns: a reached product node of a root's tree, and its witness parent.
REACH_COLUMNS = ("root", "node", "state", "parent", "pstate", "ts")
REACH_SCHEMA = binding_schema(REACH_COLUMNS)

ProductNode = tuple[str, int]            # (graph node, automaton state)
Entry = tuple[ProductNode, int]          # (witness parent, max-min time)


def reached(find: Find, reach: str, roots: Iterable[str] | pa.Array, nodes: Iterable[str] | pa.Array | None = None,
            by_node: bool = True) -> pa.Table:
    """The rows of reach table ``reach`` in the trees of ``roots`` (only at ``nodes``, if given;
    either as distinct strings in an Arrow array, or any strings), automaton states as integers.
    With ``nodes``, the lookup goes through the index of the nodes or of the roots, whichever
    finds fewer rows; unless ``by_node`` is false: then through the roots' index, the nodes
    filtering the rows it finds (a table never looked up by node is not indexed by node for it:
    0.6 s for each of a benchmark's 1.6M-row tables, paid by a process's first batch, and the
    index carried over at every rebase after)."""
    keys = {"root": roots} if nodes is None else {"node": nodes, "root": roots} if by_node else \
        {"root": roots, "node": nodes}
    rows = find(reach, {c: values if isinstance(values, pa.Array) else pa.array(sorted(set(values)), pa.string())
                        for c, values in keys.items()})
    return pa.table({c: pc.cast(rows[c], pa.int64()) if c in ("state", "pstate") else rows[c] for c in REACH_COLUMNS})


def entries_of(rows: pa.Table) -> tuple[list[ProductNode], list[Entry]]:
    """Reach rows (:func:`reached`) as their nodes and their (witness parent, max-min time)
    entries, two lists built by zipping whole columns (a batch reads hundreds of thousands)."""
    ts = pc.cast(pc.if_else(pc.equal(pc.fill_null(rows["ts"], ""), ""), str(FOREVER), rows["ts"]), pa.int64())
    nodes = list(zip(rows["node"].to_pylist(), rows["state"].to_pylist()))
    return nodes, list(zip(zip(rows["parent"].to_pylist(), rows["pstate"].to_pylist()), ts.to_pylist()))


def reach_row(root: str, node: ProductNode, entry: Entry, sign: int) -> tuple:
    """One signed row of the reach table."""
    (vertex, state), ((parent, pstate), ts) = node, entry
    return root, vertex, str(state), parent, str(pstate), "" if ts == FOREVER else str(ts), sign


def reach_table(rows: list[tuple]) -> pa.Table:
    """Signed rows (:func:`reach_row`) as the reach table's change."""
    root, node, state, parent, pstate, ts, mult = ([list(c) for c in zip(*rows)] if rows else [[]] * 7)
    return pa.table(dict(zip(REACH_SCHEMA.names, (root, node, state, parent, pstate, ts, mult))), schema=REACH_SCHEMA)


def reach_columns(root: pa.Array, node: pa.Array, state: np.ndarray, parent: pa.Array, pstate: np.ndarray,
                  ts: np.ndarray, mult: np.ndarray) -> pa.Table:
    """The reach table's change from its columns (states and times as numbers)."""
    if not len(mult):
        return REACH_SCHEMA.empty_table()
    number = lambda values: pc.cast(pa.array(values, pa.int64()), pa.string())  # noqa: E731
    times = pc.if_else(pa.array(ts == FOREVER), "", number(ts))
    return pa.table(dict(zip(REACH_SCHEMA.names, (root, node, number(state), parent, number(pstate), times,
                                                  pa.array(mult, pa.int64())))), schema=REACH_SCHEMA)


def pairs_table(path: PathDef, roots: pa.Array | list[str], nodes: pa.Array | list[str],
                mults: np.ndarray | list[int]) -> pa.Table:
    """The path view's change from its pairs (root, end) and their signs: pairs as its columns
    (root and end, one variable, or none), in order."""
    if not len(mults):
        return binding_schema(path.columns).empty_table()
    pairs = pa.table({"root": pa.array(roots, pa.string()), "node": pa.array(nodes, pa.string()),
                      MULT: pa.array(mults, pa.int64())})
    if path.same:
        pairs = pairs.filter(pc.equal(pairs["root"], pairs["node"]))
    if path.end is not None:
        pairs = pairs.filter(pc.equal(pairs["node"], path.end))
    pairs = pairs.filter(pc.not_equal(pairs[MULT], 0)).sort_by([("root", "ascending"), ("node", "ascending")])
    values = {"v0": pairs["root"], "v1": pairs["node"]} if path.root is None else {"v0": pairs["node"]}
    return pa.table({**{c: values[c] for c in path.columns}, MULT: pairs[MULT]}, schema=binding_schema(path.columns))
