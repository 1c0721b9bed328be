"""One interface for every table: :func:`open_store` picks the backend.

``LAKEGRAPH_STORAGE`` (or ``backend=``) forces ``delta-rs`` or ``delta-spark``; by default delta-spark
is used when its JVM jars are on the classpath of a Spark session that is already running, or when
the work runs on Spark (``on_spark``: the Spark engine, a cluster master) and the jars were fetched,
and delta-rs otherwise. ``spark`` may be lazy (:class:`pipelines.spark.LazySpark`): the auto choice never
starts it, and a delta-rs store starts it only for a read that must return a Spark frame.
"""
from __future__ import annotations

import os

from ..delta_jars import jars
from ..spark import has_delta_jars, running, session
from .base import Data, StorageError, TableNotFound, TableStore, Txn
from .delta_rs import DeltaRsStore, clear_spark_out, quote

BACKEND_ENV = "LAKEGRAPH_STORAGE"
BACKENDS = ("delta-rs", "delta-spark")


def open_store(root: str, spark=None, backend: str | None = None, on_spark: bool = False) -> TableStore:
    """The lake at ``root`` through the chosen backend; ``spark`` a session, a lazy one, or None;
    ``on_spark`` whether the caller runs its work on Spark (see the module text)."""
    choice = backend or os.environ.get(BACKEND_ENV) or "auto"
    if choice == "auto":
        live = running(spark)
        on_delta = has_delta_jars(live) if live is not None else on_spark and spark is not None and bool(jars())
        choice = "delta-spark" if on_delta else "delta-rs"
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


__all__ = ["Data", "StorageError", "TableNotFound", "TableStore", "Txn", "open_store", "quote", "BACKENDS"]
