"""The machine and software a run measured on, recorded next to its figures."""
from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pyspark.sql import SparkSession

PACKAGES = ("pyspark", "deltalake", "pyarrow", "pyoxigraph", "great-expectations")


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _java() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (out.stderr or out.stdout).splitlines()[0] if (out.stderr or out.stdout) else "unknown"


def _commit() -> str:
    """The checkout's commit (with ``+`` when files differ from it): which code the figures measure."""
    try:
        here = Path(__file__).parent
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (head + ("+" if dirty else "")) or "unknown"


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine_info(spark: SparkSession | None) -> dict:
    """Cores, memory, OS, Python, Java, package versions and the Spark master and driver memory
    (none without a session: a run that needs no Spark starts none)."""
    info = {
        "cores": os.cpu_count(), "memory_bytes": _memory_bytes(), "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
        "java": _java(), "versions": {p: _version(p) for p in PACKAGES}, "commit": _commit(),
        "spark_master": "none (not started)",
    }
    if spark is not None:
        conf = spark.sparkContext.getConf()
        info.update({"spark_master": spark.sparkContext.master,
                     "spark_driver_memory": conf.get("spark.driver.memory", "default"),
                     "spark_shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions")})
    return info


def speed_probe() -> float:
    """Milliseconds a fixed pure-Python loop takes now, lower is faster. The bench machine is a
    shared virtual one whose speed drifts (the same loop took 0.7 to 1.3 s within minutes): a
    ratio between two systems measured one after the other holds only as well as this figure
    held around them, so it is recorded before and after each measurement."""
    start = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i
    return (time.perf_counter() - start) * 1000
