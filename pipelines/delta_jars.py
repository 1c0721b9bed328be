"""The Delta Lake JVM jars: which ones match the installed ``delta-spark``, where they live, and the
Spark settings that load them.

Why a folder of jars fetched once (``python -m pipelines.delta_jars``, run by ``scripts/setup.sh``)
rather than ``spark.jars.packages``: Spark resolves packages at every session start (an Ivy round
trip, and a failure when the repository is unreachable), and it would also put on the classpath the
older copies of Hadoop, Parquet, Jackson and Scala that delta-spark's pom declares, which pyspark
already ships in newer versions. The folder keeps only the artifacts pyspark lacks. On a cluster
where Delta is not preinstalled, ``--conf spark.jars.packages=`` :func:`coordinate` does the same
job (docs/storage.md).

The artifact is the one ``delta.configure_spark_with_delta_pip`` names: ``delta-spark_<spark
major.minor>_2.13`` at the Python package's version.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version

#: Overrides the jar folder (a directory of jars); ``off`` keeps Delta out of the session.
JARS_ENV = "LAKEGRAPH_DELTA_JARS"
SCALA = "2.13"

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Sized like pipelines.spark.DEFAULT_CONF for small tables on few cores: Delta rebuilds a
    # snapshot's state in 50 tasks and VACUUM lists files in 10,000 by default, which made a MERGE
    # cost 16 s and a VACUUM 105 s here instead of 9 s and 11 s (2 busy cores).
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
}

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>lakegraph</groupId><artifactId>delta-jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies><dependency>
    <groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>
  </dependency></dependencies>
</project>
"""


def coordinate() -> str:
    """``io.delta:delta-spark_<spark>_2.13:<version>`` for the installed pyspark and delta-spark."""
    spark = ".".join(version("pyspark").split(".")[:2])
    return f"io.delta:delta-spark_{spark}_{SCALA}:{version('delta-spark')}"


def folder() -> str:
    """Where the jars live: ``$LAKEGRAPH_DELTA_JARS``, else ``delta-jars`` in the environment's prefix
    (the venv), so they come and go with the packages they match."""
    return os.environ.get(JARS_ENV) or os.path.join(sys.prefix, "delta-jars")


def jars() -> list[str]:
    """The jars to load, or [] when Delta is off or was never fetched (or fetched for another
    version: a stale folder must not load jars that do not match the Python package)."""
    if os.environ.get(JARS_ENV) == "off":
        return []
    found = sorted(glob.glob(os.path.join(folder(), "*.jar")))
    _, artifact, ver = coordinate().split(":")
    return found if any(os.path.basename(j) == f"{artifact}-{ver}.jar" for j in found) else []


def spark_conf() -> dict[str, str]:
    """Settings that put Delta into a session when its jars are present (nothing otherwise)."""
    found = jars()
    return {"spark.jars": ",".join(found), **DELTA_CONF} if found else {}


def _provided_by_pyspark() -> set[str]:
    """Artifact names (without version) of the jars pyspark ships."""
    import pyspark

    names = os.listdir(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    return {n.rsplit("-", 1)[0] for n in names if n.endswith(".jar")}


def fetch(target: str | None = None) -> list[str]:
    """Resolve :func:`coordinate` with Maven into ``target`` (default :func:`folder`), keeping the
    artifacts pyspark does not provide. Idempotent: a folder that already holds them is left alone.
    Raises ``RuntimeError`` with Maven's error line when resolution fails."""
    target = target or folder()
    if jars() and os.path.abspath(target) == os.path.abspath(folder()):
        return jars()
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (mvn) is not installed")
    group, artifact, ver = coordinate().split(":")
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "pom.xml"), "w") as pom:
            pom.write(_POM.format(group=group, artifact=artifact, version=ver))
        staged = os.path.join(work, "jars")
        done = subprocess.run(["mvn", "-q", "-B", "-f", os.path.join(work, "pom.xml"),
                               "dependency:copy-dependencies", "-DincludeScope=runtime",
                               f"-DoutputDirectory={staged}"], capture_output=True, text=True)
        if done.returncode != 0:
            errors = [ln for ln in done.stdout.splitlines() if ln.startswith("[ERROR]") and ln[8:].strip()]
            raise RuntimeError(errors[0][8:].strip() if errors else f"mvn exited with {done.returncode}")
        provided = _provided_by_pyspark()
        os.makedirs(target, exist_ok=True)
        for old in glob.glob(os.path.join(target, "*.jar")):
            os.remove(old)
        for jar in sorted(os.listdir(staged)):
            if jar.rsplit("-", 1)[0] not in provided:
                shutil.copy(os.path.join(staged, jar), target)
    return sorted(glob.glob(os.path.join(target, "*.jar")))


def main() -> int:
    """Fetch the jars; one line on success or failure (set-up goes on with delta-rs when it fails)."""
    try:
        fetched = fetch()
    except (RuntimeError, OSError) as exc:
        print(f"setup: Delta Lake jars for {coordinate()} not fetched ({exc}); "
              "storage stays on delta-rs", file=sys.stderr)
        return 1
    print(f"setup: Delta Lake jars for {coordinate()}: {len(fetched)} in {folder()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
