"""The delta-spark backend: commits, reads, the change feed and maintenance run in Spark with the
Delta Lake JVM jars (:mod:`pipelines.delta_jars`), as they would on a cluster.

The log's metadata (versions, app transactions, history, file statistics) is still read with
delta-rs: it reads any Delta table in milliseconds, where a Spark query over the log costs a job.
Idempotent writes carry Delta's own application transaction (``txnAppId``/``txnVersion``: writer
options for appends, session settings for MERGE and DELETE), the same ``txn`` action delta-rs
writes, so a lake can switch backends between two batches.

Interoperability: tables are created at protocol (reader 1, writer 4), the legacy protocol with the
change data feed and nothing else, which delta-rs, Spark, Trino and DuckDB all read and write.
delta-spark would otherwise pick writer 7 with table features. Its MERGE stays copy-on-write
(``delta.enableDeletionVectors`` is not set); a table the delta-rs backend MERGEs by deletion
vectors (:mod:`.vector_merge`) is one it reads and writes on.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Callable, Collection, Iterator, Mapping, Sequence

import pyarrow as pa

from .base import Data, Txn
from .delta_rs import DeltaRsStore, normalise_arrow, quote

#: Table properties both backends honour (see the module docstring).
TABLE_PROPERTIES = {
    "delta.enableChangeDataFeed": "true",
    "delta.minReaderVersion": "1",
    "delta.minWriterVersion": "4",
}


class DeltaSparkStore(DeltaRsStore):
    """``TableStore`` whose commits, reads, change feed and maintenance are made by delta-spark."""

    backend = "delta-spark"

    def _delta(self, name: str):
        """The table as a ``delta.tables.DeltaTable`` (imported here: it needs pyspark)."""
        from delta.tables import DeltaTable as SparkDeltaTable

        return SparkDeltaTable.forPath(self.spark, self.path(name))

    def _frame(self, name: str, data: Data):
        if isinstance(data, pa.Table):
            from .spark_arrow import frame_of

            return frame_of(self.spark, self._arrow(name, data))
        return data.select(*self.schema(name).names)

    @contextmanager
    def _session_conf(self, conf: Mapping[str, str]) -> Iterator[None]:
        """Session settings for one statement (Delta reads DML options from the session only)."""
        spark_conf = self.spark.conf
        for key, value in conf.items():
            spark_conf.set(key, value)
        try:
            yield
        finally:
            for key in conf:
                spark_conf.unset(key)

    @staticmethod
    def _txn_conf(txn: Txn | None) -> dict[str, str]:
        if txn is None:
            return {}
        return {"spark.databricks.delta.write.txnAppId": txn.app_id,
                "spark.databricks.delta.write.txnVersion": str(txn.version)}

    def create(self, name: str, schema: pa.Schema) -> None:
        if self.exists(name):
            return
        from delta.tables import DeltaTable as SparkDeltaTable

        from .spark_arrow import arrow_schema_to_spark

        builder = (SparkDeltaTable.createIfNotExists(self.spark).location(self.path(name))
                   .addColumns(arrow_schema_to_spark(schema)))
        for key, value in TABLE_PROPERTIES.items():
            builder = builder.property(key, value)
        builder.execute()

    @contextmanager
    def writing(self, others: Collection[str] = ()) -> Iterator[None]:
        # Spark makes the commits here, behind the delta-rs tables this store reads the logs with:
        # every access must look at the log again.
        yield

    def concurrently(self, writes: Sequence[Callable[[], object]]) -> None:
        # One after the other: each is a Spark job. Threads with a session each (MERGE and DELETE
        # take their app transaction from session settings) were tried: on 2 cores the example's
        # commits took 8.6-11.2 s instead of 11.0-13.3 s, within a whole batch's run-to-run spread
        # (20-27 s either way). Worth measuring again where the cluster has more cores.
        for write in writes:
            write()

    def append_parquet(self, name: str, files: Sequence[str], txn: Txn | None = None) -> bool:
        # Spark reads the files as a DataFrame (a job, streamed) and commits them as any write
        if not self._write(name, self.spark.read.parquet(*files), "append", txn):
            return False
        for path in files:
            os.remove(path)
        return True

    def _write(self, name: str, data: Data, mode: str, txn: Txn | None) -> bool:
        if self._done(name, txn):
            return False
        writer = self._frame(name, data).write.format("delta").mode(mode)
        if txn is not None:
            writer = writer.option("txnAppId", txn.app_id).option("txnVersion", txn.version)
        writer.save(self.path(name))
        return True

    # Spark names the files its own way: a read takes none of them as a fold's
    def fold(self, name: str, content: pa.Table, txn: Txn | None = None) -> bool:
        return self.overwrite(name, content, txn)

    def append_folded(self, name: str, rows: pa.Table, txn: Txn | None = None) -> bool:
        return self.append(name, rows, txn)

    def merge_counts(self, name: str, data: Data, keys: Sequence[str], count: str,
                     txn: Txn | None = None) -> bool:
        if self._done(name, txn):
            return False
        source = self._frame(name, data)
        if txn is None and source.isEmpty():
            return False
        on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys) or "true"   # null-safe, as on delta-rs
        with self._session_conf(self._txn_conf(txn)):
            (self._delta(name).alias("t")
                .merge(source.alias("s"), on)
                .whenMatchedDelete(condition=f"t.`{count}` + s.`{count}` = 0")
                .whenMatchedUpdate(set={f"`{count}`": f"t.`{count}` + s.`{count}`"})
                .whenNotMatchedInsert(condition=f"s.`{count}` <> 0",
                                      values={f"`{c}`": f"s.`{c}`" for c in source.columns})
                .execute())
        return True

    def add_columns(self, name: str, fields: Sequence[pa.Field]) -> None:
        if fields:
            from .spark_arrow import arrow_schema_to_spark

            columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}"
                                for f in arrow_schema_to_spark(pa.schema(fields)).fields)
            location = self.path(name).replace("`", "``")
            self.spark.sql(f"ALTER TABLE delta.`{location}` ADD COLUMNS ({columns})")
            self._forget(name)

    def delete(self, name: str, predicate: str | None = None, txn: Txn | None = None) -> bool:
        if self._done(name, txn):
            return False
        # predicates are written for delta-rs (DataFusion): identifiers in double quotes
        with self._session_conf(self._txn_conf(txn)):
            self._delta(name).delete(predicate.replace('"', "`") if predicate else None)
        return True

    def read(self, name: str, version: int | None = None):
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self.path(name))

    def changes(self, name: str, start: int, end: int | None = None) -> pa.Table:
        reader = (self.spark.read.format("delta").option("readChangeFeed", "true")
                  .option("startingVersion", start))
        if end is not None:
            reader = reader.option("endingVersion", end)
        table = normalise_arrow(reader.load(self.path(name)).toArrow())
        if table.num_rows:
            table = table.sort_by([("_commit_version", "ascending")])
        return table

    def compact(self, name: str, zorder: Sequence[str] = ()) -> dict:
        optimize = self._delta(name).optimize()
        rows = (optimize.executeZOrderBy(*zorder) if zorder else optimize.executeCompaction()).collect()
        return rows[0].asDict(recursive=True) if rows else {}

    def vacuum(self, name: str, retention_hours: float, dry_run: bool = False) -> list[str]:
        # below Delta's 7-day default Spark refuses unless its check is off; the retention policy is
        # ops.maintain's (which refuses a short one unless forced), as with delta-rs
        location = self.path(name).replace("`", "``")
        sql = f"VACUUM delta.`{location}` RETAIN {retention_hours} HOURS"
        with self._session_conf({"spark.databricks.delta.retentionDurationCheck.enabled": "false"}):
            files = sorted(r[0] for r in self.spark.sql(sql + " DRY RUN").collect())
            if not dry_run and files:
                self.spark.sql(sql).collect()
        return files


__all__ = ["DeltaSparkStore", "TABLE_PROPERTIES", "quote"]
