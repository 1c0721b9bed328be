"""Shared fixtures: one Spark session for the whole test run, a fresh lake per test."""
from __future__ import annotations

import pytest

from pipelines.spark import get_spark
from pipelines.storage import open_store


@pytest.fixture(scope="session")
def spark():
    """The one Spark session of the run (starting one costs seconds; sharing keeps CI short)."""
    session = get_spark("local[2]")
    yield session


@pytest.fixture
def store(tmp_path, spark):
    """An empty lake in a temp dir on the default (delta-rs) backend."""
    return open_store(str(tmp_path / "lake"), spark, backend="delta-rs")
