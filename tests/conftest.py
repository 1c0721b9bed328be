"""Shared fixtures: one Spark session for the whole test run, a fresh lake per test."""
from __future__ import annotations

import pytest

from pipelines.spark import get_spark, has_delta_jars
from pipelines.storage import BACKENDS, open_store

JARS_MISSING = "Delta Lake jars missing: run scripts/setup.sh (python -m pipelines.delta_jars)"


@pytest.fixture(scope="session")
def spark():
    """The one Spark session of the run (starting one costs seconds; sharing keeps CI short)."""
    session = get_spark("local[2]")
    yield session


@pytest.fixture
def store(tmp_path, spark):
    """An empty lake in a temp dir on the default (delta-rs) backend."""
    return open_store(str(tmp_path / "lake"), spark, backend="delta-rs")


@pytest.fixture(params=BACKENDS)
def backend(request, spark) -> str:
    """Each storage backend in turn. Set-up fetches the Delta jars, so in CI their absence is a
    failure here (with set-up's reason in its output), not a skip that would hide it."""
    if request.param == "delta-spark":
        assert has_delta_jars(spark), JARS_MISSING
    return request.param
