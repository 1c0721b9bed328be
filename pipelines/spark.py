"""The Spark session factory: embedded ``local[*]`` by default, a cluster through ``--master``.

Defaults are sized for a 2-core, small-memory machine: few shuffle partitions, no UI, Arrow on.
Column names are case sensitive because SPARQL variables are (?x and ?X differ).
"""
from __future__ import annotations

import os
import sys
from typing import Mapping

from pyspark.sql import SparkSession

MASTER_ENV = "LAKEGRAPH_SPARK_MASTER"

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.caseSensitive": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.autoBroadcastJoinThreshold": str(64 * 1024 * 1024),
    "spark.driver.memory": "2g",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
}


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` from the command line into a dict; a pair without ``=`` is an error."""
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf expects key=value, got {pair!r}")
        conf[key.strip()] = value.strip()
    return conf


def get_spark(master: str | None = None, conf: Mapping[str, str] | None = None,
              app_name: str = "lakegraph") -> SparkSession:
    """The process's Spark session (created once; later calls return the same one).

    ``master`` falls back to ``$LAKEGRAPH_SPARK_MASTER`` then ``local[*]``. ``PYSPARK_PYTHON`` is set
    to this interpreter so that Python workers import the same packages (deltalake, pyarrow).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or os.environ.get(MASTER_ENV) or "local[*]"
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j} -Dlog4j.configurationFile=file:{log4j}"
    builder = SparkSession.builder.appName(app_name).master(master)
    defaults = {**DEFAULT_CONF, "spark.driver.extraJavaOptions": java_opts}
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def has_delta_jars(spark: SparkSession) -> bool:
    """Whether the Delta Lake JVM classes are on the session's classpath."""
    try:
        spark.sparkContext._jvm.java.lang.Class.forName("io.delta.tables.DeltaTable")  # type: ignore[union-attr]
        return True
    except Exception:
        return False
