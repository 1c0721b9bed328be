"""Shared fixtures: one Spark session for the whole test run, a fresh lake per test.

The suite runs on two pytest-xdist workers (``-n 2 --dist loadgroup`` in ``pyproject.toml``). Every
test that needs the Spark session (it asks for ``spark``, directly or through ``store``, ``backend``
or a replay) runs on one worker, as the group ``spark``, so the run starts one session. The other
tests, those of the same modules included, go to either worker, each module a group so that its
module fixtures are built once (a test sharing one with a Spark test goes with it). A test that
gets the session at run time (an oracle's replay picked by its parameter) carries the mark
``spark`` instead (:func:`tests.oracle.on_spark`); the Arrow engine's replays take ``no_spark``. The
two workers' shares are now close (the Spark group 1,132 s, the rest 1,042 s, of 2,173 s of tests
on a slow day): a test that does not need the session stays out of the group. A test that must
run without Spark takes ``no_spark``, a Spark source any use of which fails it; a test outside the
group that starts a session anyway fails too, saying so, rather than quietly starting a second one
on the other worker.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

from pipelines.spark import LazySpark, get_spark, has_delta_jars
from pipelines.storage import BACKENDS, open_store

JARS_MISSING = "Delta Lake jars missing: run scripts/setup.sh (python -m pipelines.delta_jars)"


SPARK_GROUP = "spark"


@pytest.hookimpl(tryfirst=True)     # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test in the group ``spark`` when it asks for the session, or carries the mark ``spark``
    (a replay it picks by name as it runs needs the session, which pytest cannot see), or shares a
    module fixture with a test of its module that does (built once, on that worker); else in its
    module's group."""
    shared: dict[str, set[tuple]] = defaultdict(set)    # module -> module fixtures of its Spark tests
    for item in items:
        if _asks_for_spark(item):
            shared[_module(item)] |= _module_fixtures(item)
    for item in items:
        needs = _asks_for_spark(item) or bool(_module_fixtures(item) & shared[_module(item)])
        item.add_marker(pytest.mark.xdist_group(SPARK_GROUP if needs else Path(_module(item)).stem))


def _asks_for_spark(item: pytest.Item) -> bool:
    return "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("spark") is not None


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def _module_fixtures(item: pytest.Item) -> set[tuple]:
    """The module-scoped fixtures a test uses, each with its parameter (the instances of a
    parametrised one are different fixtures: the Arrow and Spark replays of one module)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    params = getattr(getattr(item, "callspec", None), "params", {})
    return {(name, repr(params.get(name))) for name, defs in info.name2fixturedefs.items()
            if defs and defs[-1].scope == "module"}


def _spark_running() -> bool:
    if "pyspark" not in sys.modules:
        return False
    from pyspark import SparkContext
    return SparkContext._active_spark_context is not None


@pytest.fixture(autouse=True)
def _spark_only_in_its_group(request: pytest.FixtureRequest):
    """Fails a test outside the ``spark`` group that starts a Spark session: on the worker without
    one it would start a second JVM; it should ask for the ``spark`` fixture instead."""
    before = _spark_running()
    yield
    marks = [m.args[0] for m in request.node.iter_markers("xdist_group")]
    if not before and _spark_running() and SPARK_GROUP not in marks:
        pytest.fail(f"{request.node.nodeid} started Spark without the spark fixture: ask for it, "
                    "so that the test runs in the one Spark session's group")


@pytest.fixture(scope="session")
def spark():
    """The one Spark session of the run (starting one costs seconds; sharing keeps CI short)."""
    session = get_spark("local[2]")
    yield session


@pytest.fixture(scope="session")
def no_spark() -> LazySpark:
    """A Spark source for a test whose lake must not need Spark (the Arrow engine, delta-rs): any
    use of it fails the test, as a command given no session would start one (``LazySpark``)."""
    def refuse():
        pytest.fail("Spark was used where the test said it is not needed: ask for the spark fixture")
    return LazySpark(refuse)


@pytest.fixture
def replay(request: pytest.FixtureRequest):
    """The replay a test's parameter names (its module's ``arrow_replay``, ``spark_replay``...),
    picked as the test runs; a case on Spark says so with :func:`tests.oracle.on_spark`."""
    return request.getfixturevalue(f"{request.param}_replay")


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
