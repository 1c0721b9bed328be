"""lakegraph on a real standalone Spark cluster (a master and two workers, separate JVMs started
from PySpark's own launcher): the example lake's batch runs with ``--master spark://...`` and
``--engine spark`` (so its joins run on the workers' executors and its commits go through
delta-spark, the Delta jars shipped to the executors), and its answers and changes equal those of
the same lake run in process. One application on the cluster keeps the test short."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pipelines.ops.cluster import standalone_cluster

from .processes import LAKEGRAPH

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ("teaching", "classmates", "enrolment")


def _cli(lake: Path, *argv: str) -> str:
    done = subprocess.run([LAKEGRAPH, "--lake", str(lake), "-q", *argv], cwd=ROOT, capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("LAKEGRAPH_")})
    assert done.returncode == 0, f"lakegraph {' '.join(argv)}: {done.stderr.strip()}"
    return done.stdout


def _lake(path: Path, master: str | None) -> dict[str, list[str]]:
    """The example: the first file, the queries, the rest of the landing files, then the batch,
    on ``master`` with the Spark engine (else in process); each query's answers and changes (as
    sorted lines: the order rows are printed in is not part of the answer)."""
    _cli(path, "init")
    _cli(path, "ingest", "examples/landing/01_initial.nt")
    for query in QUERIES:
        _cli(path, "register", f"examples/queries/{query}.rq")
    _cli(path, "ingest", "examples/landing")
    _cli(path, *(["--master", master] if master else []), "run", *(["--engine", "spark"] if master else []))
    return {q: sorted(_cli(path, "answers", q).splitlines()) + sorted(_cli(path, "changes", q).splitlines())
            for q in QUERIES}


def test_a_lake_run_on_a_standalone_cluster_equals_one_run_in_process(tmp_path):
    local = _lake(tmp_path / "local", None)
    with standalone_cluster(tmp_path / "cluster-logs", workers=2) as master:
        remote = _lake(tmp_path / "remote", master)
        apps = list((tmp_path / "cluster-logs").glob("worker*/app-*"))
    assert remote == local
    assert apps, "no executor ran on the workers"
    commits = sorted((tmp_path / "remote" / "gold_teaching" / "_delta_log").glob("*.json"))
    assert "Delta-Lake/" in commits[-1].read_text(encoding="utf-8"), "the cluster run committed with delta-spark"
