"""Airflow DAGs for lakegraph: ``lakegraph`` keeps the answers current, ``lakegraph_maintenance``
keeps the tables small.

``lakegraph`` (every 10 minutes): ingest new landing files -> validate the rows of that ingest
(bronze suite) -> run micro-batches until bronze is consumed -> validate gold (gold suites over the
batches of this run). A failed quality gate raises ``AirflowFailException`` naming the expectation and
the table: the task fails without retrying and the tasks after it do not run.

Retries are safe: a file already in the ingest log is skipped (a crashed one is finished by ingest's
recovery), and every micro-batch commits exactly once (each commit carries the batch's app
transaction, and a planned batch without a done record is finished, not redone), so a retried task
completes the work of the failed try instead of doubling it.

Tasks run Spark in-process (``get_spark``); the Spark master is a DAG param. The task that commits
state (micro-batches, maintenance) runs in the pool ``$LAKEGRAPH_POOL`` (default ``default_pool``):
give it one slot so that maintenance never competes with a batch for the same tables.
"""
from __future__ import annotations

import logging
import os
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from pipelines.cli import LAKE_ENV
from pipelines.ops.maintain import TIME_TRAVEL_HORIZON_HOURS
from pipelines.spark import MASTER_ENV

LANDING_ENV = "LAKEGRAPH_LANDING"
POOL = os.environ.get("LAKEGRAPH_POOL", "default_pool")
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
DEFAULT_ARGS = {"owner": "lakegraph", "retries": 2, "retry_delay": timedelta(minutes=1)}

log = logging.getLogger(__name__)


def _lake_params() -> dict[str, Param]:
    return {
        "lake": Param(os.environ.get(LAKE_ENV, "./lake"), type="string", minLength=1,
                      description=f"lake directory (default ${LAKE_ENV})"),
        "master": Param(os.environ.get(MASTER_ENV, "local[*]"), type="string", minLength=1,
                        description=f"Spark master URL (default ${MASTER_ENV})"),
    }


def _params() -> dict[str, Any]:
    return get_current_context()["params"]


def _store():
    """The lake of this run. Spark starts in the task process only when a step needs it (a gate, a
    FILTER, a batch on the Spark engine): ingest and most batches never start it."""
    from pipelines.spark import LazySpark, get_spark
    from pipelines.storage import open_store

    params = _params()
    return open_store(params["lake"], LazySpark(lambda: get_spark(params["master"])))


def _gate(report) -> None:
    """Log the report; fail the task (no retry: bad data does not heal) when an expectation failed."""
    log.info("%s", report.text())
    if not report.success:
        raise AirflowFailException(f"quality gate failed: {report.gate_message()}")


def _run_id(name: str) -> str:
    return f"{get_current_context()['run_id']}/{name}"


@dag(dag_id="lakegraph", schedule="*/10 * * * *", start_date=START, catchup=False, max_active_runs=1,
     default_args=DEFAULT_ARGS, tags=["lakegraph"], doc_md=__doc__,
     params={**_lake_params(),
             "landing": Param(os.environ.get(LANDING_ENV, "./landing"), type="string", minLength=1,
                              description=f"landing directory of update files (default ${LANDING_ENV})")})
def lakegraph() -> None:
    @task
    def ingest() -> list[int]:
        """Ingest the landing directory; returns the ids of the files ingested now. A file that
        could not be ingested (unreadable, changed while read) is a warning: the files ingested
        are validated and run, and the next run tries that file again."""
        from pipelines.ingest import ingest_paths

        report = ingest_paths(_store(), [_params()["landing"]])
        log.info("%s", report.summary())
        for failed in report.failed:
            log.warning("%s", failed.line())
        return [r.ingest_id for r in report.rows if r.status == "ingested"]

    @task
    def validate_ingest(ingest_ids: list[int]) -> None:
        from pipelines.ops.validate import validate_ingest as check

        store = _store()
        _gate(check(store, store.spark, ingest_ids, _run_id("validate_ingest")))

    @task(pool=POOL)
    def run_batches() -> dict[str, int]:
        from pipelines.engine.runner import Runner

        store = _store()
        report = Runner(store, lambda: store.spark, master=_params()["master"]).run()
        log.info("%s", report.summary())
        return {"batches": len(report.batches), "messages": sum(b["messages"] for b in report.batches)}

    @task
    def validate_gold() -> None:
        from pipelines.ops.validate import validate_gold as check

        store = _store()
        since = get_current_context()["dag_run"].start_date
        _gate(check(store, store.spark, since, _run_id("validate_gold")))

    validate_ingest(ingest()) >> run_batches() >> validate_gold()


@dag(dag_id="lakegraph_maintenance", schedule="@daily", start_date=START, catchup=False, max_active_runs=1,
     default_args=DEFAULT_ARGS, tags=["lakegraph"],
     params={**_lake_params(),
             "retention_hours": Param(TIME_TRAVEL_HORIZON_HOURS, type="integer", minimum=0,
                                      description="vacuum retention; below the time-travel horizon needs force"),
             "force": Param(False, type="boolean", description="allow a retention below the horizon")})
def lakegraph_maintenance() -> None:
    @task(pool=POOL)
    def maintain_tables() -> int:
        """Compact and vacuum every table; returns the number of files vacuumed."""
        from pipelines.ops.maintain import MaintenanceError, maintain

        params = _params()
        try:
            report = maintain(_store(), params["retention_hours"], params["force"])
        except MaintenanceError as exc:   # a refusal is not transient: do not retry it
            raise AirflowFailException(f"maintenance refused: {exc}") from exc
        log.info("%s", report.summary())
        return sum(t.vacuumed for t in report.tables)

    maintain_tables()


LAKEGRAPH = lakegraph()
MAINTENANCE = lakegraph_maintenance()
