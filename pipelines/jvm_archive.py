"""The driver JVM's class-data archive: Spark's classes mapped from one file at start-up instead of
read, parsed and verified from hundreds of jars, so that a command that needs Spark waits less.

Every ``lakegraph sql``, every Spark-engine ``run`` and every Airflow task that starts Spark pays
the JVM's start: some ten thousand classes loaded before the first query. A dynamic CDS archive
(the JDK's class-data sharing, ``-XX:ArchiveClassesAtExit``) holds those classes as the JVM had
them in memory. Set-up makes it once (``python -m pipelines.jvm_archive``, run by
``scripts/setup.sh``) from a session that does the kinds of work lakegraph's commands do
(:func:`_dump`), and every later session's driver maps it (:func:`java_options`). It is valid for
one JVM build and one classpath: when either changes, the JVM ignores it, silently (its CDS log is
off), and starts as it would without it; set-up makes it again for what is installed then
(:func:`current`). Executors on a cluster start from a classpath of their own and do not use it.
Deleting the file turns it off.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from importlib.metadata import version

from . import delta_jars

#: The JVM's CDS messages (an archive made by another JVM build, or for another classpath) off:
#: the JVM then starts without the archive, as it would have anyway.
_QUIET = "-Xlog:cds*=off"


def path() -> str:
    """Where the archive lives: in the environment's prefix (the venv), beside the Delta jars it
    was made with."""
    return os.path.join(sys.prefix, "jvm-archive", "driver.jsa")


def _stamp() -> str:
    """What the archive was made for: the JVM build (the one pyspark launches: ``$JAVA_HOME``'s,
    else ``java`` on the path), pyspark and the Delta jars."""
    home = os.environ.get("JAVA_HOME")
    launcher = os.path.join(home, "bin", "java") if home else "java"
    java = subprocess.run([launcher, "-version"], capture_output=True, text=True).stderr.strip()
    return "\n".join([java, f"pyspark {version('pyspark')}", *map(os.path.basename, delta_jars.jars())])


def current() -> bool:
    """Whether the archive exists and was made for what is installed now."""
    try:
        with open(path() + ".stamp", encoding="utf-8") as stamp:
            return os.path.isfile(path()) and stamp.read() == _stamp()
    except OSError:
        return False


def java_options() -> str:
    """The driver's JVM options that map the archive ('' when there is none)."""
    return f"-XX:SharedArchiveFile={path()} {_QUIET}" if os.path.isfile(path()) else ""


def create() -> str:
    """Make the archive for what is installed (a no-op when :func:`current`): a child process
    starts a session that dumps the classes it loaded when its JVM exits. Returns the path; raises
    ``RuntimeError`` with the child's last line when it fails."""
    target = path()
    if current():
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(target)) as work:
        dumped = os.path.join(work, "driver.jsa")
        done = subprocess.run([sys.executable, "-m", __spec__.name, "--dump", dumped], capture_output=True, text=True)
        if done.returncode != 0 or not os.path.isfile(dumped):
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the JVM did not write its class archive ({last})")
        os.replace(dumped, target)
    with open(target + ".stamp", "w", encoding="utf-8") as stamp:
        stamp.write(_stamp())
    return target


def _dump(target: str) -> None:
    """In the child: a session on a local master whose JVM writes ``target`` as it exits, after the
    kinds of work lakegraph's commands do (a join and an aggregate collected as Arrow; with the
    Delta jars, a table written, MERGEd, read at an old version and read as a change feed)."""
    from pyspark import SparkContext

    from .spark import GC_OPTIONS, LOG4J_OPTIONS, get_spark

    spark = get_spark("local[2]", conf={"spark.driver.extraJavaOptions":
                                        f"{LOG4J_OPTIONS} {GC_OPTIONS} -XX:ArchiveClassesAtExit={target} {_QUIET}"})
    spark.sql("SELECT a.id % 3 AS k, count(*) AS n FROM range(100) a JOIN range(100) b ON a.id = b.id "
              "GROUP BY a.id % 3").toArrow()
    if delta_jars.jars():
        with tempfile.TemporaryDirectory() as lake:
            location = os.path.join(lake, "t")
            table = "delta.`" + location.replace("`", "``") + "`"
            spark.sql(f"CREATE TABLE {table} (id BIGINT, n BIGINT) USING delta "
                      "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
            spark.sql(f"INSERT INTO {table} SELECT id, 1 FROM range(10)")
            spark.sql(f"MERGE INTO {table} t USING (SELECT id, 2 AS n FROM range(5, 15)) s ON t.id = s.id "
                      "WHEN MATCHED THEN UPDATE SET n = t.n + s.n WHEN NOT MATCHED THEN INSERT *")
            spark.sql(f"SELECT count(*) FROM {table} VERSION AS OF 1").toArrow()
            (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1)
                .load(location).toArrow())
    jvm = SparkContext._gateway.proc        # the archive is written at exit: wait for it
    spark.stop()
    SparkContext._gateway.shutdown()
    jvm.stdin.close()
    jvm.wait()


def main(argv: list[str]) -> int:
    """Make the archive; one line on success or failure (set-up goes on without it when it fails)."""
    if argv[:1] == ["--dump"]:
        try:
            _dump(argv[1])
        except Exception as exc:    # noqa: BLE001 - the parent reports it, as one line
            print(f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}", file=sys.stderr)
            return 1
        return 0
    try:
        made = create()
    except (RuntimeError, OSError) as exc:
        print(f"setup: JVM class archive not made ({exc}); Spark starts without it", file=sys.stderr)
        return 1
    print(f"setup: JVM class archive: {made} ({os.path.getsize(made) // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
