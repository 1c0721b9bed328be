"""lakegraph on a real standalone Spark cluster (a master and two workers, separate JVMs started
from PySpark's own launcher): the example lake's batch runs with ``--master spark://...`` and
``--engine spark`` (so each query's delta rules run in a task on the workers' executors, which
open the lake themselves, and the driver commits what they give with delta-rs, the storage auto
takes), and its answers and changes equal those of the same lake run in process. One application on the cluster keeps the test short (its
cold JVMs take most of its time); the lake is made once, then copied."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from pipelines.lake import BatchLog
from pipelines.ops.cluster import standalone_cluster
from pipelines.storage import open_store

from .lakes import snapshot
from .processes import LAKEGRAPH

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ("teaching", "classmates", "enrolment")


def _cli(lake: Path, *argv: str) -> None:
    done = subprocess.run([LAKEGRAPH, "--lake", str(lake), "-q", *argv], cwd=ROOT, capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("LAKEGRAPH_")})
    assert done.returncode == 0, f"lakegraph {' '.join(argv)}: {done.stderr.strip()}"


def _answers(lake: Path) -> dict[str, list[str]]:
    """Each query's answer table and the answer changes table, as sorted rows."""
    tables = snapshot(lake)
    return {name: tables[name] for name in [f"gold_{q}" for q in QUERIES] + ["answer_changes"]}


def test_a_lake_run_on_a_standalone_cluster_equals_one_run_in_process(tmp_path):
    """The example's first file, the queries, the rest of its landing files, as the README's
    tour gives them; then the batch, on the cluster and, in a copy of the lake, in process."""
    local, remote = tmp_path / "local", tmp_path / "remote"
    _cli(local, "init")
    _cli(local, "ingest", "examples/landing/01_initial.nt")
    for query in QUERIES:
        _cli(local, "register", f"examples/queries/{query}.rq")
    _cli(local, "ingest", "examples/landing")
    shutil.copytree(local, remote)
    _cli(local, "run")
    with standalone_cluster(tmp_path / "cluster-logs", workers=2) as master:
        _cli(remote, "--master", master, "run", "--engine", "spark")
        apps = list((tmp_path / "cluster-logs").glob("worker*/app-*"))
    assert _answers(remote) == _answers(local)
    assert all(_answers(local).values()), "a query had no answers or no changes"
    assert apps, "no executor ran on the workers"
    done = BatchLog(open_store(str(remote), None, backend="delta-rs")).records("done")
    assert [(r.stats["engine"], r.stats["tasks"]) for r in done if "engine" in r.stats] == [("spark", len(QUERIES))]
    commits = sorted((remote / "gold_teaching" / "_delta_log").glob("*.json"))
    info = json.loads(commits[-1].read_text(encoding="utf-8").splitlines()[0])["commitInfo"]
    # committed from the driver by the delta-rs backend (by the store itself, or through delta-rs), not by Spark
    assert info["clientVersion"] == "lakegraph" or info["clientVersion"].startswith("delta-rs"), info
