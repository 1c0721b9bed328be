"""One interface for every table: :func:`open_store` picks the backend.

``LAKEGRAPH_STORAGE`` (or ``backend=``) forces ``delta-rs`` or ``delta-spark``; by default delta-spark
is used when its JVM jars are on the classpath of a Spark session that is already running (a
notebook's, a Spark job's: the caller chose Delta on Spark), and delta-rs otherwise, on a cluster too:
every engine collects a batch's changes to the driver, so delta-rs commits them from there in
milliseconds where delta-spark would ship them back to the executors as a dozen jobs per MERGE
(docs/storage.md). ``spark`` may be lazy (:class:`pipelines.spark.LazySpark`): the auto choice never
starts it, and a delta-rs store starts it only for a read that must return a Spark frame.
"""
from __future__ import annotations

import os

from ..spark import has_delta_jars, running, session
from .base import Data, StorageError, TableNotFound, TableStore, Txn
from .delta_rs import DeltaRsStore, clear_spark_out, quote

BACKEND_ENV = "LAKEGRAPH_STORAGE"
BACKENDS = ("delta-rs", "delta-spark")


def open_store(root: str, spark=None, backend: str | None = None) -> TableStore:
    """The lake at ``root`` through the chosen backend (see the module text); ``spark`` a session,
    a lazy one, or None."""
    choice = backend or os.environ.get(BACKEND_ENV) or "auto"
    if choice == "auto":
        live = running(spark)
        choice = "delta-spark" if live is not None and has_delta_jars(live) else "delta-rs"
    if choice == "delta-rs":
        return DeltaRsStore(root, spark)
    if choice == "delta-spark":
        if spark is None:
            raise StorageError("the delta-spark backend needs a Spark session")
        from .delta_spark import DeltaSparkStore

        spark = session(spark)
        if not has_delta_jars(spark):
            raise StorageError("backend delta-spark chosen but the Delta Lake jars are not on Spark's classpath")
        return DeltaSparkStore(root, spark)
    raise StorageError(f"unknown storage backend {choice!r}; choose one of {', '.join(BACKENDS)} or auto")


__all__ = ["Data", "StorageError", "TableNotFound", "TableStore", "Txn", "open_store", "quote", "clear_spark_out", "BACKENDS"]
