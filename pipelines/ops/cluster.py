"""A standalone Spark cluster on this machine, from the launcher that ships with PySpark.

PySpark's wheel has no ``sbin/start-master.sh``, but it has ``bin/spark-class``, which runs the
standalone Master and Worker daemons: enough for a master and a few workers, each a JVM of its own,
so that lakegraph's Spark path (``--master spark://...``, executors in other processes, the Delta
jars shipped to them) runs as on a real cluster. Used by the cluster test and the benchmark; by
hand::

    python -m pipelines.ops.cluster --workers 2      # prints the master URL, Ctrl-C stops it
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pyspark


class ClusterError(RuntimeError):
    """The cluster did not come up (the message names the daemon's log)."""


def _daemon(cls: str, args: list[str], log: Path) -> subprocess.Popen:
    home = os.path.dirname(pyspark.__file__)
    env = {**os.environ, "SPARK_HOME": home}
    with open(log, "wb") as out:
        return subprocess.Popen([os.path.join(home, "bin", "spark-class"), cls, *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


# What the master logs once it has bound its ports (Spark's default log layout). The daemons bind
# port 0 and the ports are read back from here: a port picked free beforehand can be taken by
# another process in the seconds a JVM takes to start, and then the master moves to another port
# while the caller polls a server that is not it.
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_MASTER_UI = re.compile(r"MasterWebUI\b.* started at \S+:(\d+)")


def _logged(log: Path, pattern: re.Pattern[str]) -> str | None:
    """The first group of ``pattern``'s first match in ``log`` so far (None before it is written)."""
    match = pattern.search(log.read_text(errors="replace")) if log.exists() else None
    return match.group(1) if match else None


def _alive_workers(master: str, ui: int) -> int:
    """Workers the master at ``ui`` reports ALIVE (0 while its page does not answer, or is not
    that master's)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as page:
            state = json.load(page)
    except OSError:
        return 0
    if state.get("url") != master:
        return 0
    return sum(w.get("state") == "ALIVE" for w in state.get("workers", []))


@contextmanager
def standalone_cluster(logs: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                       timeout: float = 180) -> Iterator[str]:
    """A master and ``workers`` workers (``cores`` and ``memory`` each) while the block runs; yields
    the master URL. Daemon logs go to ``logs``."""
    logs.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    master_log = logs / "master.log"
    daemons = [_daemon("org.apache.spark.deploy.master.Master",
                       ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"], master_log)]

    def wait(ready: Callable[[], object]) -> None:
        while not ready():
            if time.monotonic() > deadline or any(d.poll() is not None for d in daemons):
                raise ClusterError(f"the standalone cluster did not start within {timeout:.0f} s (logs: {logs})")
            time.sleep(0.5)

    try:
        wait(lambda: _logged(master_log, _MASTER_URL) and _logged(master_log, _MASTER_UI))
        master, ui = _logged(master_log, _MASTER_URL), int(_logged(master_log, _MASTER_UI))
        for i in range(workers):
            daemons.append(_daemon("org.apache.spark.deploy.worker.Worker",
                                   [master, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                                    "--webui-port", "0", "--work-dir", str(logs / f"worker{i}")],
                                   logs / f"worker{i}.log"))
        wait(lambda: _alive_workers(master, ui) >= workers)
        yield master
    finally:
        for daemon in daemons:
            daemon.terminate()
        for daemon in daemons:
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m pipelines.ops.cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1g", help="memory per worker")
    parser.add_argument("--logs", default="cluster-logs", help="folder of the daemons' logs")
    args = parser.parse_args()
    # stopped by a TERM (kill, a supervisor) as by Ctrl-C: the daemons run in sessions of their own
    # and outlive this process unless the block's cleanup runs
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with standalone_cluster(Path(args.logs), args.workers, args.cores, args.memory) as master:
        print(master, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
