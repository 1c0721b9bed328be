"""The delta-spark backend, chosen where the Delta Lake JVM jars are on Spark's classpath.

Writes and reads go through ``format("delta")`` and ``delta.tables.DeltaTable``; the log metadata
(versions, app transactions, history) is read with delta-rs, which reads any Delta table. Idempotent
writes use Delta's own ``txnAppId``/``txnVersion`` (options for appends, session confs for DML).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

import pyarrow as pa

from .base import Data, Txn
from .delta_rs import DeltaRsStore, normalise_arrow, quote


class DeltaSparkStore(DeltaRsStore):
    """``TableStore`` whose commits and reads are made by delta-spark."""

    backend = "delta-spark"

    def _frame(self, name: str, data: Data):
        if isinstance(data, pa.Table):
            return self.spark.createDataFrame(self._arrow(name, data))
        return data.select(*self.schema(name).names)

    @contextmanager
    def _txn_conf(self, txn: Txn | None) -> Iterator[None]:
        if txn is None:
            yield
            return
        conf = self.spark.conf
        conf.set("spark.databricks.delta.write.txnAppId", txn.app_id)
        conf.set("spark.databricks.delta.write.txnVersion", str(txn.version))
        try:
            yield
        finally:
            conf.unset("spark.databricks.delta.write.txnAppId")
            conf.unset("spark.databricks.delta.write.txnVersion")

    def create(self, name: str, schema: pa.Schema) -> None:
        from delta.tables import DeltaTable as SparkDeltaTable

        from .spark_arrow import arrow_schema_to_spark

        (SparkDeltaTable.createIfNotExists(self.spark).location(self.path(name))
            .addColumns(arrow_schema_to_spark(schema))
            .property("delta.enableChangeDataFeed", "true").execute())

    def _write(self, name: str, data: Data, mode: str, txn: Txn | None) -> bool:
        if self._done(self._table(name), txn):
            return False
        writer = self._frame(name, data).write.format("delta").mode(mode)
        if txn is not None:
            writer = writer.option("txnAppId", txn.app_id).option("txnVersion", txn.version)
        writer.save(self.path(name))
        return True

    def append(self, name: str, data: Data, txn: Txn | None = None) -> bool:
        return self._write(name, data, "append", txn)

    def overwrite(self, name: str, data: Data, txn: Txn | None = None) -> bool:
        return self._write(name, data, "overwrite", txn)

    def merge_counts(self, name: str, data: Data, keys: Sequence[str], count: str,
                     txn: Txn | None = None) -> bool:
        from delta.tables import DeltaTable as SparkDeltaTable

        if self._done(self._table(name), txn):
            return False
        source = self._frame(name, data)
        on = " AND ".join(f"t.`{k}` = s.`{k}`" for k in keys) or "true"
        with self._txn_conf(txn):
            (SparkDeltaTable.forPath(self.spark, self.path(name)).alias("t")
                .merge(source.alias("s"), on)
                .whenMatchedDelete(condition=f"t.`{count}` + s.`{count}` = 0")
                .whenMatchedUpdate(set={count: f"t.`{count}` + s.`{count}`"})
                .whenNotMatchedInsert(condition=f"s.`{count}` <> 0",
                                      values={c: f"s.`{c}`" for c in source.columns})
                .execute())
        return True

    def delete(self, name: str, predicate: str | None = None, txn: Txn | None = None) -> bool:
        from delta.tables import DeltaTable as SparkDeltaTable

        if self._done(self._table(name), txn):
            return False
        with self._txn_conf(txn):
            SparkDeltaTable.forPath(self.spark, self.path(name)).delete(
                predicate.replace('"', "`") if predicate else None)
        return True

    def read(self, name: str, version: int | None = None):
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self.path(name))

    def row_count(self, name: str, version: int | None = None) -> int:
        """Spark's count: unlike the log's per-file ``numRecords``, it subtracts the rows of deletion
        vectors, which delta-spark may write (and it answers from the log's statistics when it can)."""
        return self.read(name, version).count()

    def changes(self, name: str, start: int, end: int | None = None) -> pa.Table:
        reader = (self.spark.read.format("delta").option("readChangeFeed", "true")
                  .option("startingVersion", start))
        if end is not None:
            reader = reader.option("endingVersion", end)
        table = normalise_arrow(reader.load(self.path(name)).toArrow())
        if table.num_rows:
            table = table.sort_by([("_commit_version", "ascending")])
        return table

    def compact(self, name: str) -> dict:
        from delta.tables import DeltaTable as SparkDeltaTable

        rows = SparkDeltaTable.forPath(self.spark, self.path(name)).optimize().executeCompaction().collect()
        return rows[0].asDict(recursive=True) if rows else {}

    def vacuum(self, name: str, retention_hours: float, dry_run: bool = False) -> list[str]:
        if dry_run:
            return super().vacuum(name, retention_hours, dry_run=True)
        from delta.tables import DeltaTable as SparkDeltaTable

        before = set(super().vacuum(name, retention_hours, dry_run=True))
        SparkDeltaTable.forPath(self.spark, self.path(name)).vacuum(retention_hours)
        return sorted(before)


__all__ = ["DeltaSparkStore", "quote"]
