"""Small lakes with registered queries and a few completed batches, for the quality and maintenance
tests (built once per module, copied by tests that damage them)."""
from __future__ import annotations

import argparse
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipelines.cli import Context
from pipelines.cli.ops import add_commands
from pipelines.ingest import ingest_paths
from pipelines.lake import WINDOW_STATE
from pipelines.engine.register import register
from pipelines.engine.runner import Runner
from pipelines.storage import TableStore, open_store
from pipelines.storage.delta_rs import DeltaRsStore
from views.plan import compile_query
from views.sparql import parse_query

from .streams import PREFIXES, Stream


#: Columns that hold the wall-clock time of a write, which a re-run cannot reproduce.
WRITE_TIMES = ("logged_at", "ingested_at", "registered_at", "quarantined_at")


def snapshot(root: Path, ignore: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Every table's rows as sorted reprs (bags: row order is not content), without
    :data:`WRITE_TIMES` and the columns ``ignore``."""
    store = DeltaRsStore(str(root))

    def rows_of(name: str) -> list[str]:
        table = store.read_arrow(name)
        drop = [c for c in WRITE_TIMES + ignore if c in table.schema.names]
        rows = table.drop_columns(drop).to_pylist()
        return sorted(map(repr, _unpacked(rows) if name == WINDOW_STATE else rows))

    names = store.tables()
    with ThreadPoolExecutor(4) as pool:     # a lake's dozens of small reads, waiting on files
        return dict(zip(names, pool.map(rows_of, names)))


def _unpacked(rows: list[dict]) -> list[dict]:
    """The window state table's rows one per row of the part each holds (encoded in ``data``):
    the order of a part's rows within its encoding is not content either."""
    return [{**{k: v for k, v in row.items() if k not in ("data", "rows")}, "row": part}
            for row in rows for part in pa.ipc.open_stream(row["data"]).read_all().to_pylist()]


@dataclass
class Lake:
    root: Path
    store: TableStore
    stream: Stream
    queries: dict[str, str]

    def copy(self, to: Path) -> TableStore:
        """A copy of the lake at ``to`` (Delta tables reference their files relatively)."""
        shutil.copytree(self.store.root, to)
        return open_store(str(to), self.store.spark, backend="delta-rs")

    def ingest(self, store: TableStore | None = None) -> None:
        """Ingest the stream's next batch of messages as a new landing file."""
        target = store or self.store
        path = self.root / "landing" / f"{len(list((self.root / 'landing').glob('*')))}.jsonl"
        ingest_paths(target, [str(Stream.write(path, self.stream.next_batch()))])


def build_lake(root: Path, spark, queries: dict[str, str], batches: int, seed: int) -> Lake:
    """Ingest one file, register ``queries`` (SPARQL without prefixes), then ``batches`` rounds of
    ingest + run, one micro-batch each."""
    store = open_store(str(root / "lake"), spark, backend="delta-rs")
    lake = Lake(root, store, Stream(seed=seed), queries)
    (root / "landing").mkdir(parents=True)
    lake.ingest()
    for name, text in queries.items():
        register(store, spark, compile_query(parse_query(PREFIXES + text, name), name))
    for _ in range(batches):
        lake.ingest()
        Runner(store, spark).run()
    return lake


def ops_context(store: TableStore, argv: list[str]) -> Context:
    """A CLI context for the ``validate``/``maintain`` commands on ``store``'s lake, parsed by the
    parser :func:`pipelines.cli.ops.add_commands` declares (the global options as the CLI sets them)."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name, func, help_text):
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(func=func)
        return p

    add_commands(add)
    args = parser.parse_args(argv)
    for option, value in {"lake": store.root, "master": "local[2]", "conf": None, "storage": "delta-rs",
                          "debug": False, "quiet": True, "wait": None}.items():
        setattr(args, option, value)
    return Context(args)
