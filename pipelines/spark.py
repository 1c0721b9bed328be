"""The Spark session factory: embedded ``local[*]`` by default, a cluster through ``--master``.

Defaults are sized for a 2-core, small-memory machine: few shuffle partitions, no UI, Arrow on.
Column names are case sensitive because SPARQL variables are (?x and ?X differ).

pyspark is imported inside the functions: most commands never need Spark, and importing it alone
costs a fifth of a second.
"""
from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Union

from . import delta_jars, jvm_archive

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

MASTER_ENV = "LAKEGRAPH_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"

#: A Spark session, or a function that starts one on first call (see :class:`LazySpark`).
SparkSource = Union["SparkSession", Callable[[], "SparkSession"]]

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

_LOG4J = os.path.join(os.path.dirname(__file__), "log4j2.properties")
#: The driver JVM's logging: errors only (the CLI prints one line per failure).
LOG4J_OPTIONS = f"-Dlog4j2.configurationFile=file:{_LOG4J} -Dlog4j.configurationFile=file:{_LOG4J}"
#: The driver's garbage collector: the throughput collector, not G1 (the JDK's default), since a
#: pipeline's driver wants throughput more than short pauses. Catalyst's analysis and planning of
#: a Spark-engine batch allocate millions of short-lived objects: the Spark-engine oracle replay
#: (16 queries, 6 batches) took 84.8 and 88.2 s with it, 93.2 and 96.6 s with G1 (docs/engines.md).
GC_OPTIONS = "-XX:+UseParallelGC"


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` from the command line into a dict; a pair without ``=`` is an error."""
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf expects key=value, got {pair!r}")
        conf[key.strip()] = value.strip()
    return conf


def resolve_master(master: str | None) -> str:
    """The master a session would use: ``master``, else ``$LAKEGRAPH_SPARK_MASTER``, else local[*].
    Known without starting Spark, so the engine choice does not need a session."""
    return master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER


@contextmanager
def session_conf(spark: "SparkSession", conf: Mapping[str, str]) -> Iterator[None]:
    """``conf`` set on ``spark``'s session for the block, each key restored (or unset) after it.
    Every thread using the session sees it: the block must not run beside Spark work that needs
    other settings (a batch runs one engine, and the Spark engine's plans run one at a time)."""
    saved = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextmanager
def _child_output(path: str | None) -> Iterator[None]:
    """While the JVM is launched, point this process's stdout and stderr at ``path`` (appended), so
    the JVM inherits the file as its own output for its whole life: its start-up banner (``Using
    incubator modules``), log4j lines and exit-time errors land there instead of on the terminal.
    Nothing else writes during the launch; both descriptors are restored afterwards."""
    if path is None:
        yield
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def get_spark(master: str | None = None, conf: Mapping[str, str] | None = None,
              app_name: str = "lakegraph", jvm_log: str | None = None) -> "SparkSession":
    """The process's Spark session (created once; later calls return the same one).

    ``master`` falls back to ``$LAKEGRAPH_SPARK_MASTER`` then ``local[*]``. ``PYSPARK_PYTHON`` is set
    to this interpreter so that Python workers import the same packages (deltalake, pyarrow).
    ``jvm_log``: a file that receives everything the JVM prints (None: it shares this process's
    stdout and stderr, as a test run or an Airflow task log wants).
    When the Delta Lake jars were fetched (:mod:`pipelines.delta_jars`) the session loads them with
    Delta's SQL extension and catalog: these only take effect at session start, and one session
    serves both storage backends (delta-rs never touches them). The driver maps the class archive
    set-up made (:mod:`pipelines.jvm_archive`) when there is one.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = resolve_master(master)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    java_opts = f"{LOG4J_OPTIONS} {GC_OPTIONS} {jvm_archive.java_options()}".strip()
    builder = SparkSession.builder.appName(app_name).master(master)
    defaults = {**DEFAULT_CONF, **delta_jars.spark_conf(), "spark.driver.extraJavaOptions": java_opts}
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    with _child_output(jvm_log):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class LazySpark:
    """A Spark session started on first call, so that a command pays the JVM's start-up only when
    some step really needs Spark (a FILTER to evaluate, a Spark-engine batch, SQL)."""

    def __init__(self, start: Callable[[], "SparkSession"]) -> None:
        self._start = start
        self._session: "SparkSession | None" = None
        self._lock = threading.Lock()       # windowed queries run on threads: one start for all

    def __call__(self) -> "SparkSession":
        with self._lock:
            if self._session is None:
                self._session = self._start()
        return self._session

    @property
    def started(self) -> bool:
        return self._session is not None


def session(source: SparkSource) -> "SparkSession":
    """The session of a :data:`SparkSource` (starting it when it is lazy)."""
    return source if _is_session(source) else source()


def running(source: SparkSource | None) -> "SparkSession | None":
    """The session of ``source`` if it is already running, without starting a lazy one."""
    if source is None:
        return None
    if _is_session(source):
        return source
    return source() if isinstance(source, LazySpark) and source.started else None


def _is_session(source: SparkSource) -> bool:
    return hasattr(source, "sparkContext")


def master_of(source: SparkSource | None, configured: str | None = None) -> str:
    """The master URL of ``source`` without starting a lazy one: a running session knows its own;
    otherwise the configured master (:func:`resolve_master`)."""
    live = running(source)
    return live.sparkContext.master if live is not None else resolve_master(configured)


def has_delta_jars(spark: "SparkSession") -> bool:
    """Whether the Delta Lake JVM classes are on the session's classpath (``spark.jars`` load into
    Spark's class loader, which ``Class.forName`` from py4j does not search: Spark's own lookup does)."""
    try:
        spark.sparkContext._jvm.org.apache.spark.util.Utils.classForName(  # type: ignore[union-attr]
            "io.delta.tables.DeltaTable", True, False)
        return True
    except Exception:
        return False
