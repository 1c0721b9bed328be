"""What one CLI command works with: its lake, its storage, and a Spark session started only on need."""
from __future__ import annotations

import argparse
import logging
import os

from ..spark import LazySpark, parse_conf
from ..storage.lock import default_wait, parse_wait

LAKE_ENV = "LAKEGRAPH_LAKE"
#: Where a command's JVM writes (start-up banner, log4j, exit-time errors), relative to the lake.
JVM_LOG = os.path.join("_logs", "spark.log")


def quiet_python_loggers() -> None:
    """Silence the Python-side loggers of py4j and PySpark: py4j logs connection noise when the JVM
    goes down, and PySpark logs every SQL error with its whole JVM stack (a JSON line) before
    raising it, while the CLI reports the error itself in one line."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)
    for name in ("py4j", "pyspark"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


class CliError(Exception):
    """A user error the CLI reports as one line."""


def one_line(exc: BaseException) -> str:
    """The first non-blank line of an error's message. A raw py4j error carries the message in its
    Java exception (its own first line only names the py4j call)."""
    java = getattr(exc, "java_exception", None)
    text = (java.getMessage() if java is not None else None) or str(exc)
    return next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)


class Context:
    """The lake and the lazily started Spark session of one command.

    Spark starts on the first call of :attr:`spark` (directly, or through a store read that needs a
    Spark frame), so read commands and most batches never pay the JVM's start-up. Without
    ``--debug`` everything the JVM prints goes to ``<lake>/_logs/spark.log``; with it, to the
    terminal.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lake = os.path.abspath(args.lake or os.environ.get(LAKE_ENV) or "./lake")
        try:
            self.conf = parse_conf(args.conf)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        try:
            self.wait = default_wait() if args.wait is None else parse_wait(args.wait)
        except ValueError as exc:
            raise CliError(f"--wait: {exc}") from exc
        self.spark = LazySpark(self._start_spark)
        self._owns_spark = False
        self._store = None

    def _start_spark(self):
        from pyspark.sql import SparkSession

        from ..spark import get_spark

        self._owns_spark = SparkSession.getActiveSession() is None   # else: a test run's shared one
        if self.args.debug:
            return get_spark(self.args.master, self.conf)
        quiet_python_loggers()
        return get_spark(self.args.master, self.conf, jvm_log=os.path.join(self.lake, JVM_LOG))

    def store(self):
        """The lake's table store (the backend ``--storage`` chose); Spark stays lazy."""
        if self._store is None:
            from ..storage import open_store

            self._store = open_store(self.lake, self.spark, self.args.storage)
        return self._store

    def require_lake(self):
        """The store, or a one-line error when the lake was never initialised."""
        store = self.store()
        if not store.exists("bronze"):
            raise CliError(f"no lake at {self.lake}; create it with 'lakegraph --lake {self.lake} init'")
        return store

    def close(self) -> None:
        """Stop Spark if the command started it: a session left to die with the process makes the
        JVM log broken-pipe errors while it goes down."""
        if self.spark.started and self._owns_spark:
            self.spark().stop()
