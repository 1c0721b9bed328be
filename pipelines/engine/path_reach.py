"""A path view's two tables as rows: the reach table (each root's witness tree, one row per
reached product node) and the view of (root, end) pairs. Both path steps, the general walk
(:mod:`.paths`) and the one for views of one-edge matches (:mod:`.flat_paths`), read and write them
through these, so that they keep the very same rows.
"""
from __future__ import annotations

from typing import Mapping

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
Tree = dict[ProductNode, Entry]          # a root's reached nodes


def reached(find: Find, reach: str, values: set[str], column: str = "root") -> pa.Table:
    """The rows of reach table ``reach`` whose ``column`` holds one of ``values`` (by default: the
    trees of those roots), automaton states as integers."""
    rows = find(reach, column, pa.array(sorted(values), pa.string()))
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
    columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in REACH_SCHEMA.names]
    return pa.table(dict(zip(REACH_SCHEMA.names, columns)), schema=REACH_SCHEMA)


def pairs_table(path: PathDef, pairs: Mapping[tuple[str, str], int]) -> pa.Table:
    """The path view's change from its pairs' signs: pairs as its columns (root and end, one
    variable, or none)."""
    kept = [(root, node, mult) for (root, node), mult in sorted(pairs.items())
            if mult and not (path.same and root != node) and not (path.end is not None and node != path.end)]
    roots, nodes, mults = (list(c) for c in zip(*kept)) if kept else ([], [], [])
    values = {"v0": roots, "v1": nodes} if path.root is None else {"v0": nodes}
    return pa.table({**{c: values[c] for c in path.columns}, MULT: mults}, schema=binding_schema(path.columns))
