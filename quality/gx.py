"""Great Expectations plumbing shared by the expectation suites.

Why one cached ephemeral context: creating a GX context and its data sources costs far more than
running a small suite, and one validation run checks several suites and tables. The context keeps
nothing on disk, sends no analytics and shows no progress bars. Suites are registered once; a
validation definition is made once per (suite, pandas|spark) pair and reused with each new DataFrame
as its batch.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator


@contextmanager
def _safe_pyspark_connect_import() -> Iterator[None]:
    """GX imports ``pyspark.sql.connect``, which calls ``sys.exit(0)`` ("Skipping doctests") when
    its optional dependencies are missing and ``__main__`` has no file, taking the process for a
    doctest run. That is the case under ``python -c`` and in multiprocessing spawn children, which
    then vanish silently. Looking interactive for the import makes pyspark raise an ImportError
    instead, which GX handles (Spark Connect support off; classic Spark DataFrames still validate)."""
    main = sys.modules.get("__main__")
    bare = main is not None and getattr(main, "__spec__", None) is None and not hasattr(main, "__file__")
    if not bare or hasattr(sys, "ps1"):
        yield
        return
    sys.ps1 = ">>> "
    try:
        yield
    finally:
        del sys.ps1


os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
with _safe_pyspark_connect_import():
    import great_expectations as gx  # noqa: E402  (after the environment and the guard are set)
import pandas as pd  # noqa: E402
from great_expectations.core import ExpectationSuiteValidationResult  # noqa: E402
from great_expectations.data_context.types.base import (  # noqa: E402
    DataContextConfig, InMemoryStoreBackendDefaults, ProgressBarsConfig)

from . import expectation_reason  # noqa: E402

#: What suite modules need from GX, re-exported so that they never import it unguarded.
ExpectationSuite = gx.ExpectationSuite
ValidationResult = ExpectationSuiteValidationResult
expectations = gx.expectations


@lru_cache(maxsize=1)
def context() -> Any:
    """The process's ephemeral GX context (created on first use)."""
    config = DataContextConfig(store_backend_defaults=InMemoryStoreBackendDefaults(),
                               progress_bars=ProgressBarsConfig(globally=False),
                               analytics_enabled=False)
    return gx.get_context(mode="ephemeral", project_config=config)


def register(suite: ExpectationSuite) -> ExpectationSuite:
    """``suite`` as stored in the context (added on first use, by name)."""
    ctx = context()
    try:
        return ctx.suites.get(suite.name)
    except gx.exceptions.DataContextError:
        return ctx.suites.add(suite)


def _kind(data: Any) -> str:
    if isinstance(data, pd.DataFrame):
        return "pandas"
    if hasattr(data, "sparkSession"):
        return "spark"
    raise TypeError(f"cannot validate a {type(data).__name__}: expected a pandas or Spark DataFrame")


@lru_cache(maxsize=None)
def _definition(suite_name: str, kind: str) -> gx.ValidationDefinition:
    ctx = context()
    source_name = f"{kind}_frames"
    try:
        source = ctx.data_sources.get(source_name)
    except KeyError:
        source = ctx.data_sources.add_pandas(source_name) if kind == "pandas" else \
            ctx.data_sources.add_spark(source_name)
    asset = source.add_dataframe_asset(f"{suite_name}_frame")
    batch = asset.add_batch_definition_whole_dataframe("whole")
    suite = ctx.suites.get(suite_name)
    return ctx.validation_definitions.add(
        gx.ValidationDefinition(name=f"{suite_name}_{kind}", data=batch, suite=suite))


def run(suite: ExpectationSuite, data: Any, result_format: str = "SUMMARY") -> ValidationResult:
    """Validate a pandas or Spark DataFrame against ``suite``. ``COMPLETE`` lists every unexpected
    row index (pandas); ``SUMMARY`` gives counts and a sample, which suits whole tables."""
    name = register(suite).name
    return _definition(name, _kind(data)).run(batch_parameters={"dataframe": data},
                                              result_format={"result_format": result_format})


def describe(config: Any) -> str:
    """``expectation_type(column): description``, how an expectation's outcome is named."""
    return expectation_reason(config.type, config.kwargs.get("column"), config.description)
