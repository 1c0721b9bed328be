"""The driver JVM's class archive (:mod:`pipelines.jvm_archive`): set-up makes it, a session loads
Spark's classes from it, and a JVM it does not fit starts without it, saying nothing."""
from __future__ import annotations

import os
import re
import subprocess

from pipelines import jvm_archive

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
