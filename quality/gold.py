"""The gold expectation suites: what a query's answer table and its change log must satisfy.

Two kinds of checks, both real GX expectations run on Spark DataFrames:

* rows: every answer has ``_mult`` >= 1 (a zero or negative multiplicity is a MERGE that failed to
  delete), every projected variable is bound (except those the gold schema lets be unbound: an
  aggregate, a ``timestamp()``), and each binding appears once (the MERGE key; for an aggregate
  query that is one row per group when SELECT keeps the GROUP BY variables);
* consistency: the answer changes summed up to the last completed batch equal the answers at that
  batch, and, through time travel, the answers after each batch equal the answers before it plus
  that batch's changes; for a windowed query, the answers of each window equal the previous
  window's plus that window's changes (RStream k = RStream k-1 + IStream k - DStream k), are a
  bag (multiplicities at least 1) and number what the window log counted. A batch commits gold
  once, so the RStream of a window before its batch's last is gold minus the batch's later
  windows' changes: the window log's counts are what catches a change filed under the wrong
  window of its batch. Each is a *difference* frame, one row per binding (or window count) that
  disagrees, expected to have no rows; a failure's observed value is how many disagree.

The step check reads one gold version per batch, so it covers only the batches whose versions time
travel guarantees (completed within the horizon maintenance keeps), and the Airflow gate narrows it
to the batches of its own run; the sum check covers all history at the cost of one read.
"""
from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime, timedelta
from functools import cache, lru_cache

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines import catalog
from pipelines.answers import gold_version, windows
from pipelines.engine import answer_changes
from pipelines.engine.step import gold_schema
from pipelines.lake import ANSWER_CHANGES, BatchLog, gold_table, now
from pipelines.ops.maintain import TIME_TRAVEL_HORIZON_HOURS
from pipelines.storage import TableStore
from schemas.tables import BATCH, COUNT, MULT, SIGN, WINDOW

from . import gx as gxp
from .gx import ExpectationSuite, expectations
from .report import Outcome, check

ROWS_SUITE = "gold"
CONSISTENCY_SUITE = "gold_changes"


@cache
def rows_suite(projection: tuple[str, ...], bound: tuple[str, ...]) -> ExpectationSuite:
    """The row suite for a projection whose ``bound`` columns may never be unbound. Its name carries
    a digest of the columns because the GX context caches suites by name and a query may be
    re-registered with other variables."""
    E = expectations
    checks = [E.ExpectColumnValuesToBeBetween(column=MULT, min_value=1,
                                              description="every answer has multiplicity at least 1")]
    checks += [E.ExpectColumnValuesToNotBeNull(column=v, description=f"?{v} is bound in every answer")
               for v in bound]
    if len(projection) == 1:
        checks.append(E.ExpectColumnValuesToBeUnique(column=projection[0], description="each binding appears once"))
    elif projection:
        checks.append(E.ExpectCompoundColumnsToBeUnique(column_list=list(projection),
                                                        description="each binding appears once"))
    digest = hashlib.sha256("\0".join([*projection, "|", *bound]).encode()).hexdigest()[:12]
    return gxp.register(ExpectationSuite(name=f"{ROWS_SUITE}_rows_{digest}", expectations=checks))


def _no_rows_suite(name: str, description: str) -> ExpectationSuite:
    E = expectations
    return gxp.register(ExpectationSuite(
        name=name, expectations=[E.ExpectTableRowCountToEqual(value=0, description=description)]))


@lru_cache(maxsize=1)
def sum_suite() -> ExpectationSuite:
    return _no_rows_suite(f"{CONSISTENCY_SUITE}_sum",
                          "answer changes summed over all batches equal the answers (differing bindings)")


@lru_cache(maxsize=1)
def window_suite() -> ExpectationSuite:
    return _no_rows_suite(f"{CONSISTENCY_SUITE}_windows", "the answers of each window equal the previous "
                          "window's plus its changes and number what its log row counts (differing "
                          "bindings and counts)")


@lru_cache(maxsize=1)
def step_suite() -> ExpectationSuite:
    return _no_rows_suite(f"{CONSISTENCY_SUITE}_steps",
                          "answers after each batch equal the answers before plus its changes (differing bindings)")


def _signed() -> Column:
    """A change row's count with its sign."""
    return F.when(F.col(SIGN) == "+", F.col(COUNT)).otherwise(-F.col(COUNT))


def _differences(parts: list[DataFrame], keys: list[str]) -> DataFrame:
    """Sum the signed ``_mult`` of ``parts`` per key; the rows that do not cancel out."""
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    return union.groupBy(*keys).agg(F.sum(MULT).alias(MULT)).where(F.col(MULT) != 0)


def sum_difference(answers: DataFrame, changes: DataFrame, projection: tuple[str, ...]) -> DataFrame:
    """Bindings whose multiplicity in ``answers`` differs from the sum of their ``changes``."""
    keys = list(projection)
    return _differences([answers.select(*keys, MULT),
                         changes.select(*keys, (-_signed()).alias(MULT))], keys)


def _step_batches(store: TableStore, name: str, registered: int,
                  since: datetime | None) -> tuple[list[int], dict[int, int]]:
    """The batches to check as steps, and the gold version after each batch a step needs: the
    batches completed within the time-travel horizon (and after ``since``) and the batch before
    each, except for the registration batch, which starts from no answers."""
    cutoff = now() - timedelta(hours=TIME_TRAVEL_HORIZON_HOURS)
    if since is not None:
        cutoff = max(cutoff, since)
    steps = [r.batch for r in BatchLog(store).records("done") if r.batch >= registered and r.logged_at >= cutoff]
    needed = set(steps) | {b - 1 for b in steps if b > registered}
    return steps, {b: gold_version(store, name, batch=b) for b in sorted(needed)}


def _changes(store: TableStore, name: str) -> DataFrame:
    """Query ``name``'s answer changes, as the lake's answer changes table holds them."""
    return answer_changes.of_query_spark(store.read(ANSWER_CHANGES), catalog.lookup(store, name).plan)


def step_difference(store: TableStore, name: str, projection: tuple[str, ...], steps: list[int],
                    versions: dict[int, int]) -> DataFrame:
    """``(_batch, binding)`` rows where the answers after a batch differ from the answers before it
    plus the batch's changes. A batch that left gold at the same version must have no changes."""
    table, keys = gold_table(name), list(projection)
    changes = _changes(store, name)
    parts = [changes.where(F.col(BATCH).isin(steps)).select(F.col(BATCH), *keys, (-_signed()).alias(MULT))]
    for batch in steps:
        before, after = versions.get(batch - 1), versions[batch]
        if before == after:
            continue
        parts.append(store.read(table, after).select(F.lit(batch).alias(BATCH), *keys, MULT))
        if before is not None:
            parts.append(store.read(table, before).select(F.lit(batch).alias(BATCH), *keys, (-F.col(MULT)).alias(MULT)))
    return _differences(parts, [BATCH] + keys)


def window_difference(store: TableStore, name: str, projection: tuple[str, ...], windows: list[dict],
                      logged: list[dict]) -> DataFrame:
    """``(_window, binding)`` rows where the answers of a window (its RStream: gold at the version
    the window log names minus the changes of its batch's later windows) differ from the previous
    window's plus the window's changes (IStream minus DStream), or have a multiplicity below 1; and
    one ``(_window)`` row (bindings null) per window whose answers do not number what the window
    log counted. ``logged`` is the whole window log (a window's predecessor may be outside
    ``windows``)."""
    keys = list(projection)
    numbers = {w["window"] for w in windows}
    wanted = [w for w in logged if w["window"] in numbers or w["window"] + 1 in numbers]
    rstreams = _rstreams(store, name, keys, wanted)
    changes = _changes(store, name).where(F.col(WINDOW).isin(sorted(numbers)))
    current = rstreams.where(F.col(WINDOW).isin(sorted(numbers)))
    previous = (rstreams.where(F.col(WINDOW).isin(sorted(n - 1 for n in numbers)))
                .select((F.col(WINDOW) + 1).alias(WINDOW), *keys, (-F.col(MULT)).alias(MULT)))
    steps = _differences([current, previous, changes.select(WINDOW, *keys, (-_signed()).alias(MULT))],
                         [WINDOW] + keys)
    below = current.where(F.col(MULT) < 1)
    counted = store.spark.createDataFrame([(w["window"], -w["answers"]) for w in windows],
                                          f"{WINDOW} long, {MULT} long")
    sizes = (current.select(WINDOW, MULT).unionByName(counted).groupBy(WINDOW).agg(F.sum(MULT).alias(MULT))
             .where(F.col(MULT) != 0).select(WINDOW, *[F.lit(None).cast("string").alias(k) for k in keys], MULT))
    return steps.unionByName(below).unionByName(sizes)


def _rstreams(store: TableStore, name: str, keys: list[str], windows: list[dict]) -> DataFrame:
    """``(_window, binding, _mult)``: the RStream of each window in ``windows`` (window-log rows),
    each gold version read once, the batches' later changes found by one join."""
    log = store.spark.createDataFrame([(w["window"], w["batch"], w["gold_version"]) for w in windows],
                                      "_of_window long, _of_batch long, _of_version long")
    changes = _changes(store, name)
    later = changes.join(log, (changes[BATCH] == log["_of_batch"]) & (changes[WINDOW] > log["_of_window"]))
    parts = [later.select(F.col("_of_window").alias(WINDOW), *keys, (-_signed()).alias(MULT))]
    for version in sorted({w["gold_version"] for w in windows}):
        at = log.where(F.col("_of_version") == version).select(F.col("_of_window").alias(WINDOW))
        parts.append(store.read(gold_table(name), version).crossJoin(at).select(WINDOW, *keys, MULT))
    return _differences(parts, [WINDOW] + keys)


def _window_outcomes(store: TableStore, name: str, projection: tuple[str, ...], steps: list[int]) -> list[Outcome]:
    """The window check over the windows emitted by the batches ``steps`` (those time travel keeps)."""
    table = gold_table(name)
    logged = windows(store, name)
    checked = [w for w in logged if w["batch"] in set(steps)]
    frame = window_difference(store, name, projection, checked, logged)
    covered = f"windows {checked[0]['window']}..{checked[-1]['window']}" if checked else "no window in range"
    return [replace(o, observed=f"{o.observed} ({covered})")
            for o in check(window_suite(), frame, CONSISTENCY_SUITE, table)]


def _step_outcomes(store: TableStore, name: str, projection: tuple[str, ...], registered: int,
                   since: datetime | None) -> list[Outcome]:
    """The step check, its observed value naming the batches covered. A gold version that can no
    longer be read (only a forced vacuum removes one within the horizon) fails the check, the way
    GX reports an expectation that raised."""
    table = gold_table(name)
    steps, versions = _step_batches(store, name, registered, since)
    try:
        frame = step_difference(store, name, projection, steps, versions)
    except Exception as exc:  # noqa: BLE001 - any read failure means time travel is broken here
        expectation = gxp.describe(step_suite().expectations[0].configuration)
        reason = str(exc).strip().splitlines()[0]
        return [Outcome(CONSISTENCY_SUITE, table, expectation, False, f"error: {reason}")]
    covered = f"batches {steps[0]}..{steps[-1]}" if steps else "no batch in range"
    found = [replace(o, observed=f"{o.observed} ({covered})")
             for o in check(step_suite(), frame, CONSISTENCY_SUITE, table)]
    if catalog.lookup(store, name).plan.streams:
        found += _window_outcomes(store, name, projection, steps)
    return found


def check_query(store: TableStore, name: str, since: datetime | None = None) -> list[Outcome]:
    """Every gold expectation for registered query ``name``; the step check covers the batches
    completed after ``since`` (default: every batch within the time-travel horizon)."""
    query = catalog.lookup(store, name)
    projection = query.plan.projection
    table = gold_table(name)
    bound = tuple(f.name for f in gold_schema(query.plan) if not f.nullable and f.name != MULT)
    found = check(rows_suite(projection, bound), store.read(table), ROWS_SUITE, table)
    last = BatchLog(store).last_done()   # registration wrote one, so a registered query has a batch
    answers = store.read(table, gold_version(store, name, batch=last.batch))
    changes = _changes(store, name).where(F.col(BATCH) <= last.batch)
    found += check(sum_suite(), sum_difference(answers, changes, projection), CONSISTENCY_SUITE, table)
    return found + _step_outcomes(store, name, projection, query.registered_batch, since)
