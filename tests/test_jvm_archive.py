"""The driver JVM's class archive (:mod:`pipelines.jvm_archive`): set-up makes it, a session loads
Spark's classes from it, and a JVM it does not fit starts without it, saying nothing."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from pipelines import jvm_archive

ROOT = Path(__file__).resolve().parents[1]

#: Classes the JDK's own archive gives a JVM without ours (1,231 for a Spark driver here).
JDK_ONLY = 2_000


def test_set_up_made_the_archive_and_the_session_maps_spark_from_it(spark):
    assert jvm_archive.current(), "scripts/setup.sh makes the archive for what is installed"
    jvm = spark._jvm
    jcmd = os.path.join(jvm.java.lang.System.getProperty("java.home"), "bin", "jcmd")
    pid = jvm.java.lang.ProcessHandle.current().pid()
    counters = subprocess.run([jcmd, str(pid), "PerfCounter.print"], capture_output=True, text=True, check=True).stdout
    shared = int(re.search(r"java\.cls\.sharedLoadedClasses=(\d+)", counters).group(1))
    assert shared > JDK_ONLY, f"{shared} classes from archives: the driver did not map ours"


def test_a_jvm_the_archive_does_not_fit_starts_without_it_quietly():
    # plain `java` has another classpath than the Spark driver the archive was made for
    done = subprocess.run(["java", *jvm_archive.java_options().split(), "-version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stderr.splitlines()[0].startswith(("openjdk version", "java version")), done.stderr
    assert "cds" not in (done.stdout + done.stderr).lower() and "warning" not in done.stderr.lower(), done.stderr


def test_the_documented_command_keeps_an_archive_that_fits():
    """docs/engines.md's command, as written: with an archive made for what is installed, it leaves
    the file as it is and says where it is."""
    before = os.stat(jvm_archive.path()).st_mtime_ns
    done = subprocess.run([".venv/bin/python", "-m", "pipelines.jvm_archive"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith(f"setup: JVM class archive: {jvm_archive.path()} ("), done.stderr
    assert os.stat(jvm_archive.path()).st_mtime_ns == before, "an archive that fits was made again"
