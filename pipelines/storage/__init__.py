"""One interface for every table: :func:`open_store` picks the backend.

``LAKEGRAPH_STORAGE`` (or ``backend=``) forces ``delta-rs`` or ``delta-spark``; by default delta-spark
is used when its JVM jars are on the Spark session's classpath and delta-rs otherwise.
"""
from __future__ import annotations

import os

from .base import Data, StorageError, TableNotFound, TableStore, Txn
from .delta_rs import DeltaRsStore, quote

BACKEND_ENV = "LAKEGRAPH_STORAGE"
BACKENDS = ("delta-rs", "delta-spark")


def open_store(root: str, spark=None, backend: str | None = None) -> TableStore:
    """The lake at ``root`` through the chosen backend."""
    choice = backend or os.environ.get(BACKEND_ENV) or "auto"
    if choice == "auto":
        from ..spark import has_delta_jars

        choice = "delta-spark" if spark is not None and has_delta_jars(spark) else "delta-rs"
    if choice == "delta-rs":
        return DeltaRsStore(root, spark)
    if choice == "delta-spark":
        if spark is None:
            raise StorageError("the delta-spark backend needs a Spark session")
        from ..spark import has_delta_jars
        from .delta_spark import DeltaSparkStore

        if not has_delta_jars(spark):
            raise StorageError("backend delta-spark chosen but the Delta Lake jars are not on Spark's classpath")
        return DeltaSparkStore(root, spark)
    raise StorageError(f"unknown storage backend {choice!r}; choose one of {', '.join(BACKENDS)} or auto")


__all__ = ["Data", "StorageError", "TableNotFound", "TableStore", "Txn", "open_store", "quote", "BACKENDS"]
