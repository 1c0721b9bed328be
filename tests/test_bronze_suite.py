"""The bronze suite's two runners agree: ingest's Arrow row check rejects exactly the rows, with
exactly the reasons, that the Great Expectations suite rejects (GX on pandas, COMPLETE result, as
ingest ran it before), on every example file and on rows made to break each expectation."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.ingest import bronze_batch
from quality.bronze import EXPECTATIONS, bronze_suite, row_failures, run_suite
from quality.gx import describe
from schemas.formats import parse
from schemas.tables import BRONZE, DEFAULT_STREAM

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted([*(EXAMPLES / "landing").iterdir(), *(EXAMPLES / "bad_input").iterdir()])
AT = datetime(2025, 1, 1, tzinfo=timezone.utc)
UNI = "http://example.org/uni/"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"


def u(local: str) -> str:
    return f"<{UNI}{local}>"


def gx_failures(batch: pa.Table) -> dict[int, list[str]]:
    """``{row: reasons}`` from the GX suite run on ``batch`` as pandas, reasons in result order."""
    found: dict[int, list[str]] = {}
    for outcome in run_suite(bronze_suite(), batch.to_pandas(), "COMPLETE").results:
        assert not (outcome.exception_info or {}).get("raised_exception"), outcome.exception_info
        for index in outcome.result.get("unexpected_index_list") or []:
            found.setdefault(index, []).append(describe(outcome.expectation_config))
    return dict(sorted(found.items()))


def rows(**changes: list) -> pa.Table:
    """Three good bronze rows, with whole columns replaced by ``changes``."""
    base = {"seq": [1, 2, 3], "event_id": ["1:a", "1:a", "1:b"], "event_time": [AT] * 3,
            "op": ["insert", "delete", "insert"], "s": [u("a"), "_:b", u("c")], "p": [u("p")] * 3,
            "o": [u("x"), '"l"@en', f'"1"^^<{XSD_INT}>'], "stream": [DEFAULT_STREAM] * 3,
            "source": ["f:1", "f:2", "f:3"], "ingest_id": [1, 1, 1]}
    return pa.Table.from_pydict({**base, **changes}, schema=BRONZE)


#: Batches that break every expectation, and each regex in several ways; nulls outside not_null
#: columns pass (GX skips them), as do terms only the regexes' finer points accept.
HAND_MADE = {
    "good": rows(),
    "literal subject, upsert, blank node predicate, bad objects, duplicate seq, no event id": rows(
        op=["insert", "upsert", "insert"], s=['"lit"', "_:b", u("c")], p=[u("p"), u("p"), "_:p"],
        o=[u("x"), '"unterminated', '"x"^^<rel>'], seq=[1, 2, 2], event_id=["1:a", None, "1:b"]),
    "no event time, all seqs equal": rows(event_time=[AT, None, None], seq=[7, 7, 7]),
    "null op, subject and object": rows(op=[None, "delete", "INSERT"], s=[None, u("a"), u("b")],
                                        o=[u("x"), None, u("y")]),
    "IRIs": rows(s=["<rel>", "<http://ex/a b>", "<http://ex/é>"],
                 p=["<1http://ex/p>", "<urn:x:y>", "<http://ex/p>x"],
                 o=["<http://ex/a{b}>", "<mailto:a@b>", "http://ex/bare"]),
    "blank nodes": rows(s=["_:a:b", "_:", "_:é.x"], p=["_:p", u("p"), u("p")],
                        o=["_:x y", "_:ok", "__:x"]),
    "literals": rows(o=['"a\\u00e9"', '"a\\u00E9"@en', '"\\U0001F600"^^<http://ex/t>']),
    "long escapes": rows(o=['"\\U0001f600"', '"\\u00E"', '"\\U0001F60"']),
    "more literals": rows(o=['"x"@EN', '"x"@en-GB', '"x"@en-gb-1']),
    "escapes": rows(o=['"a\\qb"', '"tab\tin"', '"q\\"uote\\\\"']),
    "datatypes": rows(o=['"1"^^<rel>', '"1"^^xsd:int', '"1"^^<http://ex/t> '], op=["delete"] * 3),
    "trailing text": rows(s=[f"{u('a')} ", f" {u('a')}", u("a")], o=['"x" ', '"x"@', '""']),
}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_examples_reject_the_same_rows_in_arrow_and_gx(path):
    parsed = parse(str(path), path.read_bytes())
    batch = bronze_batch(parsed, str(path), 1, 1, AT)
    assert row_failures(batch) == gx_failures(batch)


@pytest.mark.parametrize("batch", HAND_MADE.values(), ids=HAND_MADE.keys())
def test_hand_made_rows_reject_the_same_rows_in_arrow_and_gx(batch):
    assert row_failures(batch) == gx_failures(batch)


def test_hand_made_rows_break_every_expectation():
    seen = {reason for batch in HAND_MADE.values() for why in row_failures(batch).values() for reason in why}
    assert seen == {e.reason for e in EXPECTATIONS}
    assert row_failures(HAND_MADE["good"]) == {}
    assert row_failures(HAND_MADE["literal subject, upsert, blank node predicate, bad objects, duplicate seq, "
                                  "no event id"]) == {
        0: ["expect_column_values_to_match_regex(s): subject must be an IRI or a blank node"],
        1: ["expect_column_values_to_be_in_set(op): op must be insert or delete",
            "expect_column_values_to_match_regex(o): object must be an IRI, a blank node or a literal",
            "expect_column_values_to_be_unique(seq): seq must be unique",
            "expect_column_values_to_not_be_null(event_id): event id must be set"],
        2: ["expect_column_values_to_match_regex(p): predicate must be an IRI",
            "expect_column_values_to_match_regex(o): object must be an IRI, a blank node or a literal",
            "expect_column_values_to_be_unique(seq): seq must be unique"],
    }


def test_example_files_have_rows_the_suite_rejects():
    """The corpus exercises the suite, so its parity is not only over clean rows."""
    rejected = {path.name for path in FILES
                if row_failures(bronze_batch(parse(str(path), path.read_bytes()), str(path), 1, 1, AT))}
    assert rejected == {"mixed.jsonl", "mixed.rdfp"}
