"""The gold expectation suites: what a query's answer table and its change log must satisfy.

Two kinds of checks, both real GX expectations run on Spark DataFrames:

* rows: every answer has ``_mult`` >= 1 (a zero or negative multiplicity is a MERGE that failed to
  delete), every projected variable is bound, and each binding appears once (the MERGE key);
* consistency: the answer changes summed up to the last completed batch equal the answers at that
  batch, and, through time travel, the answers after each batch equal the answers before it plus
  that batch's changes. Each is a *difference* frame, one row per binding whose counts disagree,
  expected to have no rows; a failure's observed value is how many bindings disagree.

The step check covers the batches whose gold versions time travel guarantees (completed within the
horizon that maintenance keeps), so it still runs after old files were vacuumed.
"""
from __future__ import annotations

import hashlib
from datetime import timedelta
from functools import lru_cache

import great_expectations as gx
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines import catalog
from pipelines.answers import gold_version
from pipelines.lake import BatchLog, changes_table, gold_table, now
from pipelines.maintain import TIME_TRAVEL_HORIZON_HOURS
from pipelines.storage import TableStore
from schemas.tables import BATCH, COUNT, MULT, SIGN

from . import gx as gxp
from .report import Outcome, outcomes

ROWS_SUITE = "gold"
CONSISTENCY_SUITE = "gold_changes"


@lru_cache(maxsize=None)
def rows_suite(projection: tuple[str, ...]) -> gx.ExpectationSuite:
    """The row suite for a projection. Its name carries a digest of the columns because the GX
    context caches suites by name and a query may be re-registered with other variables."""
    E = gx.expectations
    expectations = [E.ExpectColumnValuesToBeBetween(column=MULT, min_value=1,
                                                    description="every answer has multiplicity at least 1")]
    expectations += [E.ExpectColumnValuesToNotBeNull(column=v, description=f"?{v} is bound in every answer")
                     for v in projection]
    if len(projection) == 1:
        expectations.append(E.ExpectColumnValuesToBeUnique(column=projection[0],
                                                           description="each binding appears once"))
    elif projection:
        expectations.append(E.ExpectCompoundColumnsToBeUnique(column_list=list(projection),
                                                              description="each binding appears once"))
    digest = hashlib.sha256("\0".join(projection).encode()).hexdigest()[:12]
    return gxp.register(gx.ExpectationSuite(name=f"{ROWS_SUITE}_rows_{digest}", expectations=expectations))


def _no_rows_suite(name: str, description: str) -> gx.ExpectationSuite:
    E = gx.expectations
    return gxp.register(gx.ExpectationSuite(
        name=name, expectations=[E.ExpectTableRowCountToEqual(value=0, description=description)]))


@lru_cache(maxsize=1)
def sum_suite() -> gx.ExpectationSuite:
    return _no_rows_suite(f"{CONSISTENCY_SUITE}_sum",
                          "answer changes summed over all batches equal the answers (differing bindings)")


@lru_cache(maxsize=1)
def step_suite() -> gx.ExpectationSuite:
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


def step_difference(store: TableStore, name: str, projection: tuple[str, ...], registered: int) -> DataFrame:
    """``(_batch, binding)`` rows where the answers after a batch differ from the answers before it
    plus the batch's changes, for the batches whose versions lie within the time-travel horizon.
    The registration batch is a step from no answers; a batch that left gold unchanged must have
    no changes."""
    cutoff = now() - timedelta(hours=TIME_TRAVEL_HORIZON_HOURS)
    done = [r.batch for r in BatchLog(store).records("done") if r.batch >= registered and r.logged_at >= cutoff]
    versions = {b: gold_version(store, name, batch=b) for b in done}
    steps = [b for b in done if b == registered or b - 1 in versions]
    table, keys = gold_table(name), list(projection)
    changes = store.read(changes_table(name))
    parts = [changes.where(F.col(BATCH).isin(steps))
             .select(F.col(BATCH), *keys, (-_signed()).alias(MULT))]
    for b in steps:
        before = versions.get(b - 1)
        if before == versions[b]:
            continue
        parts.append(store.read(table, versions[b]).select(F.lit(b).alias(BATCH), *keys, MULT))
        if before is not None:
            parts.append(store.read(table, before).select(F.lit(b).alias(BATCH), *keys, (-F.col(MULT)).alias(MULT)))
    return _differences(parts, [BATCH] + keys)


def check_query(store: TableStore, name: str) -> list[Outcome]:
    """Every gold expectation for registered query ``name``."""
    query = catalog.lookup(store, name)
    projection = query.plan.projection
    table = gold_table(name)
    found = outcomes(gxp.run(rows_suite(projection), store.read(table)), ROWS_SUITE, table)
    last = BatchLog(store).last_done()   # registration wrote one, so a registered query has a batch
    answers = store.read(table, gold_version(store, name, batch=last.batch))
    changes = store.read(changes_table(name)).where(F.col(BATCH) <= last.batch)
    found += outcomes(gxp.run(sum_suite(), sum_difference(answers, changes, projection)), CONSISTENCY_SUITE, table)
    steps = step_difference(store, name, projection, query.registered_batch)
    found += outcomes(gxp.run(step_suite(), steps), CONSISTENCY_SUITE, table)
    return found
