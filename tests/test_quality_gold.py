"""The gold suites with real GX on Spark: a healthy lake passes, and each kind of damage fails the
expectation that names it; outcomes are kept in ``quality_results``."""
from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest

from pipelines.lake import ANSWER_CHANGES, BatchLog, gold_table
from pipelines.ops.maintain import maintain
from pipelines.engine.runner import Runner
from pipelines.storage import open_store
from pipelines.ops.validate import QUALITY_RESULTS, validate, validate_gold

from pipelines.cli import CliError

from .lakes import build_lake, ops_context

QUERIES = {
    "pairs": "SELECT ?x ?z WHERE { ?x ex:knows ?y . ?y ex:knows ?z }",
    "gate": "ASK { ?x ex:type ex:Person . ?x ex:knows ?y }",
    # SUM of strings: an unbound aggregate in every answer, which the row suite must accept
    "sums": "SELECT ?x (SUM(?l) AS ?s) (COUNT(?l) AS ?n) WHERE { ?x ex:label ?l } GROUP BY ?x",
    "windowed": "SELECT ?x ?z FROM STREAM <urn:lakegraph:stream:default> [RANGE 20s STEP 10s] "
                "WHERE { ?x ex:knows ?y . ?y ex:knows ?z }",
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):
    return build_lake(tmp_path_factory.mktemp("gold"), spark, QUERIES, batches=3, seed=21)


def _failed(report) -> list[tuple[str, str, str]]:
    return [(o.suite, o.table, o.expectation.split(":")[0]) for o in report.failures()]


def test_a_healthy_lake_passes_every_suite_and_keeps_the_outcomes(lake, spark):
    report = validate(lake.store, spark)
    assert report.success, report.text()
    tables = {o.table for o in report.outcomes}
    assert tables == {"bronze", "gold_pairs", "gold_gate", "gold_sums", "gold_windowed"}
    windows = [o for o in report.outcomes if "each window" in o.expectation]
    assert [o.table for o in windows] == ["gold_windowed"] and windows[0].observed.startswith("0 (windows 1..")
    steps = [o for o in report.outcomes if o.expectation.startswith("expect_table_row_count") and "each batch" in
             o.expectation and o.table == "gold_pairs"]
    assert steps[0].observed == "0 (batches 0..3)"
    kept = [r for r in lake.store.read_arrow(QUALITY_RESULTS).to_pylist() if r["run_id"] == report.run_id]
    assert len(kept) == len(report.outcomes) and all(r["success"] for r in kept)
    assert report.text().splitlines()[0].startswith("PASS  bronze")


def test_one_table_only_and_an_unknown_table(lake, spark):
    without_spark = open_store(lake.store.root, backend="delta-rs")   # as ingest opens it
    report = validate(without_spark, spark, table="gold_pairs")
    assert {o.table for o in report.outcomes} == {"gold_pairs"} and report.success
    with pytest.raises(ValueError, match="cannot validate 'gold_nope': choose one of bronze, gold_gate, gold_pairs, "
                                         "gold_sums, gold_windowed"):
        validate(lake.store, spark, table="gold_nope")


def _gold_row(store, binding: tuple[str, str], mult: int) -> pa.Table:
    return pa.Table.from_pylist([{"x": binding[0], "z": binding[1], "_mult": mult}],
                                schema=store.schema(gold_table("pairs")))


def test_a_zero_multiplicity_fails_only_the_row_suite(lake, spark, tmp_path):
    store = lake.copy(tmp_path / "lake")
    store.append(gold_table("pairs"), _gold_row(store, ("<http://example.org/zz>",) * 2, 0))
    report = validate(store, spark, table="gold_pairs")
    assert _failed(report) == [("gold", "gold_pairs", "expect_column_values_to_be_between(_mult)")]
    assert report.gate_message().startswith("table gold_pairs: expect_column_values_to_be_between(_mult): "
                                            "every answer has multiplicity at least 1 failed [observed: 1 of")


def test_an_answer_without_a_change_fails_uniqueness_and_both_consistency_checks(lake, spark, tmp_path):
    store = lake.copy(tmp_path / "lake")
    existing = store.read_arrow(gold_table("pairs")).to_pylist()[0]
    store.append(gold_table("pairs"), _gold_row(store, (existing["x"], existing["z"]), 1))
    report = validate(store, spark, table="gold_pairs")
    assert _failed(report) == [("gold", "gold_pairs", "expect_compound_columns_to_be_unique"),
                               ("gold_changes", "gold_pairs", "expect_table_row_count_to_equal"),
                               ("gold_changes", "gold_pairs", "expect_table_row_count_to_equal")]
    assert [o.observed for o in report.failures()[1:]] == ["1", "1 (batches 0..3)"]


def test_a_change_without_an_answer_fails_the_consistency_checks(lake, spark, tmp_path):
    store = lake.copy(tmp_path / "lake")
    last = BatchLog(store).last_done()
    row = {"_query": "pairs", "_batch": last.batch, "_bronze_from": last.bronze_from, "_bronze_to": last.bronze_to,
           "_sign": "+", "_count": 2, "x": "<http://example.org/zz>", "z": "<http://example.org/zz>"}
    store.append(ANSWER_CHANGES, pa.Table.from_pylist([row], schema=store.schema(ANSWER_CHANGES)))
    failed = validate(store, spark, table="gold_pairs").failures()
    assert [(o.suite, o.observed) for o in failed] == [("gold_changes", "1"), ("gold_changes", "1 (batches 0..3)")]


def test_a_change_filed_under_the_wrong_window_fails_only_the_window_check(lake, spark, tmp_path):
    """Moving a DStream row to the next window of the same batch keeps every batch's sum right; only
    RStream k = RStream k-1 + IStream k - DStream k catches it."""
    store = lake.copy(tmp_path / "lake")
    changes = store.read_arrow(ANSWER_CHANGES).to_pylist()
    windowed = [r for r in changes if r["_query"] == "windowed"]
    batches = {}
    for row in windowed:
        batches.setdefault(row["_batch"], set()).add(row["_window"])
    row = next(r for r in windowed if max(batches[r["_batch"]]) > r["_window"])
    row["_window"] += 1
    store.delete(ANSWER_CHANGES)
    store.append(ANSWER_CHANGES, pa.Table.from_pylist(changes, schema=store.schema(ANSWER_CHANGES)))
    failed = validate(store, spark, table="gold_windowed").failures()
    assert [(o.suite, "each window" in o.expectation) for o in failed] == [("gold_changes", True)]


def test_after_a_forced_vacuum_the_gate_still_checks_its_own_batches(lake, spark, tmp_path):
    """A forced vacuum gives up time travel: the full step check reports the unreadable version as a
    failure (not a crash), while the gate's check of the batches run since then passes."""
    store = lake.copy(tmp_path / "lake")
    maintain(store, retention_hours=0, force=True)
    since = datetime.now(timezone.utc)
    lake.ingest(store)
    Runner(store, spark).run()
    assert validate_gold(store, spark, since=since).success
    failed = validate(store, spark, table="gold_pairs").failures()
    assert len(failed) == 1 and failed[0].observed.startswith("error: ")


def test_the_validate_command_prints_the_report_and_fails_on_a_failed_gate(lake, tmp_path, capsys):
    ctx = ops_context(lake.store, ["validate", "--table", "gold_gate"])
    ctx.args.func(ctx)
    assert capsys.readouterr().out.splitlines()[-1].endswith("3 expectation(s), 0 failed")
    store = lake.copy(tmp_path / "lake")
    store.append(gold_table("pairs"), _gold_row(store, ("<http://example.org/zz>",) * 2, 0))
    ctx = ops_context(store, ["validate"])
    with pytest.raises(CliError, match=r"^quality gate failed: table gold_pairs: expect_column_values_to_be_between"):
        ctx.args.func(ctx)
    assert "FAIL  gold " in capsys.readouterr().out
