"""The Airflow DAGs, run for real with ``dag.test()`` (no scheduler; tasks run in this process and
reuse the test run's Spark session) against a temp lake and landing directory."""
from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path

from datetime import datetime, timezone

import pyarrow as pa
import pytest

from pipelines import answers as A
from pipelines.lake import BRONZE, INGEST_LOG, BatchLog, gold_table
from pipelines.engine.register import register
from pipelines.storage import open_store
from pipelines.ops.validate import QUALITY_RESULTS
from schemas import tables as S
from views.plan import compile_query
from views.sparql import parse_query

from .oracle import oracle_bag, table_bag
from .streams import PREFIXES, Stream

DAG_DIR = Path(__file__).resolve().parents[1] / "airflow_dags"
QUERY = "SELECT ?x ?z WHERE { ?x ex:knows ?y . ?y ex:knows ?z . ?z ex:type ex:Person }"


@pytest.fixture(scope="module")
def dags(tmp_path_factory):
    """The DAG module, imported after pointing Airflow at a fresh sqlite home (``AIRFLOW_HOME`` is
    read when Airflow is first imported, so it is set here, before that) and migrating it."""
    home = tmp_path_factory.mktemp("airflow_home")
    os.environ.update({"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                       "AIRFLOW__CORE__DAGS_FOLDER": str(DAG_DIR)})
    airflow = Path(sys.executable).parent / "airflow"
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, env=os.environ)
    root_handlers = list(logging.root.handlers)
    spec = importlib.util.spec_from_file_location("lakegraph_dag", DAG_DIR / "lakegraph_dag.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    # Airflow points the root logger at this test's captured stdout; later log calls (py4j closing
    # its connections at exit) must not write to that closed stream.
    logging.root.handlers[:] = root_handlers


def test_dag_file_defines_both_dags_with_their_tasks(dags):
    main, maintenance = dags.LAKEGRAPH, dags.MAINTENANCE
    assert main.dag_id == "lakegraph" and maintenance.dag_id == "lakegraph_maintenance"
    assert main.max_active_runs == 1 and main.catchup is False
    assert set(main.params) == {"lake", "landing", "master"}
    chain = ["ingest", "validate_ingest", "run_batches", "validate_gold"]
    assert set(main.task_ids) == set(chain)
    for upstream, downstream in zip(chain, chain[1:]):
        assert main.get_task(upstream).downstream_task_ids == {downstream}
        assert main.get_task(downstream).trigger_rule == "all_success"
    assert all(main.get_task(t).retries == 2 for t in chain)
    assert maintenance.task_ids == ["maintain_tables"]
    assert {"retention_hours", "force"} <= set(maintenance.params)


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):
    """A lake with one registered query and a landing directory of three JSON Lines files."""
    root = tmp_path_factory.mktemp("dag")
    store = open_store(str(root / "lake"), spark, backend="delta-rs")
    register(store, spark, compile_query(parse_query(PREFIXES + QUERY, "q"), "q"))
    stream = Stream(seed=5)
    for i in range(3):
        Stream.write(root / "landing" / f"{i:02d}.jsonl", stream.next_batch())
    conf = {"lake": str(root / "lake"), "landing": str(root / "landing"), "master": "local[2]"}
    return store, stream, conf


def _states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def test_a_dag_run_ingests_validates_and_answers_like_pyoxigraph(dags, lake):
    store, stream, conf = lake
    run = dags.LAKEGRAPH.test(run_conf=conf)
    assert _states(run) == dict.fromkeys(["ingest", "validate_ingest", "run_batches", "validate_gold"], "success")
    projection = ("x", "z")
    assert table_bag(A.answers(store, "q"), projection) == oracle_bag(PREFIXES + QUERY, stream.graph, projection)
    kept = store.read_arrow(QUALITY_RESULTS).to_pylist()
    assert {r["suite"] for r in kept} == {"bronze", "gold", "gold_changes"} and all(r["success"] for r in kept)


def test_a_planted_bad_gold_row_fails_the_gold_gate(dags, lake, capfd):
    store, _, conf = lake
    bad = pa.Table.from_pylist([{"x": "<http://example.org/zz>", "z": "<http://example.org/zz>", "_mult": 0}],
                               schema=store.schema(gold_table("q")))
    store.append(gold_table("q"), bad)
    run = dags.LAKEGRAPH.test(run_conf=conf)
    assert _states(run)["validate_gold"] == "failed"
    failed = [r for r in store.read_arrow(QUALITY_RESULTS).to_pylist() if not r["success"]]
    assert [(r["table"], r["expectation"].split(":")[0]) for r in failed] == \
        [("gold_q", "expect_column_values_to_be_between(_mult)")]
    assert run.run_id in failed[0]["run_id"] and "e.g. [0]" in failed[0]["observed"]
    logged = "".join(capfd.readouterr())
    assert "AirflowFailException: quality gate failed: table gold_q: " \
           "expect_column_values_to_be_between(_mult)" in logged


def test_the_maintenance_dag_keeps_the_answers_and_refuses_a_short_retention(dags, lake):
    store, _, conf = lake
    before = table_bag(A.answers(store, "q"), ("x", "z"))
    lake_conf = {"lake": conf["lake"], "master": conf["master"]}
    assert _states(dags.MAINTENANCE.test(run_conf=lake_conf)) == {"maintain_tables": "success"}
    assert table_bag(A.answers(store, "q"), ("x", "z")) == before
    refused = dags.MAINTENANCE.test(run_conf={**lake_conf, "retention_hours": 1})
    assert _states(refused) == {"maintain_tables": "failed"}


def test_a_failed_ingest_gate_stops_the_batches(dags, lake, capfd):
    """A bad bronze row carrying the id the next ingest gets fails the ingest gate: the batches and
    the gold gate do not run."""
    store, stream, conf = lake
    Stream.write(Path(conf["landing"]) / "03.jsonl", stream.next_batch())
    next_id = max(store.read_arrow(INGEST_LOG, columns=["ingest_id"])["ingest_id"].to_pylist()) + 1
    row = {"seq": 10**9, "event_id": "planted", "event_time": datetime.now(timezone.utc), "op": "upsert",
           "s": "<http://example.org/a>", "p": "<http://example.org/knows>", "o": "<http://example.org/b>",
           "stream": "urn:planted", "source": "planted:1", "ingest_id": next_id}
    store.append(BRONZE, pa.Table.from_pylist([row], schema=S.BRONZE))
    last = BatchLog(store).last_done().batch
    states = _states(dags.LAKEGRAPH.test(run_conf=conf))
    assert states["ingest"] == "success" and states["validate_ingest"] == "failed"
    assert states["run_batches"] == states["validate_gold"] == "upstream_failed"
    assert BatchLog(store).last_done().batch == last
    assert "quality gate failed: table bronze: expect_column_values_to_be_in_set(op)" in "".join(capfd.readouterr())


def test_a_dag_run_on_delta_spark_answers_like_pyoxigraph(dags, tmp_path, spark, monkeypatch):
    """The same DAG with ``LAKEGRAPH_STORAGE=delta-spark``: every commit of every task is Spark's."""
    monkeypatch.setenv("LAKEGRAPH_STORAGE", "delta-spark")
    store = open_store(str(tmp_path / "lake"), spark)
    assert store.backend == "delta-spark"
    register(store, spark, compile_query(parse_query(PREFIXES + QUERY, "q"), "q"))
    stream = Stream(seed=5)
    Stream.write(tmp_path / "landing" / "00.jsonl", stream.next_batch())
    conf = {"lake": str(tmp_path / "lake"), "landing": str(tmp_path / "landing"), "master": "local[2]"}
    assert set(_states(dags.LAKEGRAPH.test(run_conf=conf)).values()) == {"success"}
    projection = ("x", "z")
    assert table_bag(A.answers(store, "q"), projection) == oracle_bag(PREFIXES + QUERY, stream.graph, projection)
