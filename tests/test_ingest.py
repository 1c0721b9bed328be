"""Bronze ingest end to end: table contents, quarantine accounting, idempotence, two concurrent
ingests, crash recovery at every commit, and the bronze expectation suite on the Spark table (its
Arrow row check against GX: test_bronze_suite.py)."""
from __future__ import annotations

import itertools
import multiprocessing
import os
import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipelines.ingest import ingest_paths
from pipelines.storage import open_store
from quality.bronze import bronze_suite, run_suite
from schemas.formats import RAW_LIMIT, parse
from schemas.tables import DEFAULT_STREAM

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LANDING = EXAMPLES / "landing"
BAD = EXAMPLES / "bad_input"
UNI = "http://example.org/uni/"
TEACHING = "http://example.org/streams/teaching"
REGISTRAR = "http://example.org/streams/registrar"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
WALL_CLOCK = {"quarantined_at", "ingested_at"}


def u(local: str) -> str:
    return f"<{UNI}{local}>"


def rows(store, name: str) -> list[dict]:
    return store.read_arrow(name).to_pylist()


def snapshot(store) -> dict[str, list[dict]]:
    """The three ingest tables without their wall-clock columns, in a stable order."""
    out = {}
    for name in ("bronze", "quarantine", "ingest_log"):
        table = [{k: v for k, v in r.items() if k not in WALL_CLOCK} for r in rows(store, name)]
        out[name] = sorted(table, key=lambda r: sorted((k, str(v)) for k, v in r.items()))
    return out


# -- the landing example ------------------------------------------------------------------------
def test_landing_bronze_contents(store):
    report = ingest_paths(store, [str(LANDING)])
    assert report.summary() == "ingested 42 rows, quarantined 0, skipped 0 files already ingested " \
                               "(4 files, 74 lines)"
    bronze = sorted(rows(store, "bronze"), key=lambda r: r["seq"])
    assert [r["seq"] for r in bronze] == list(range(1, 43))
    assert [(r["ingest_id"], int(r["source"].rsplit(":", 1)[1])) for r in bronze] == \
        sorted((r["ingest_id"], int(r["source"].rsplit(":", 1)[1])) for r in bronze)
    log = {r["ingest_id"]: r for r in rows(store, "ingest_log")}
    assert {i: (Path(r["path"]).name, r["format"], r["lines"], r["ingested"], r["first_seq"], r["last_seq"])
            for i, r in log.items()} == {
        1: ("01_initial.nt", "n-triples", 28, 26, 1, 26),
        2: ("02_enrolments.rdfp", "rdf-patch", 23, 6, 27, 32),
        3: ("03_updates.jsonl", "jsonl", 6, 6, 33, 38),
        4: ("04_semester2.rdfp", "rdf-patch", 17, 4, 39, 42),
    }

    by_source = {(Path(r["source"].rsplit(":", 1)[0]).name, int(r["source"].rsplit(":", 1)[1])): r
                 for r in bronze}
    initial = [r for r in bronze if r["ingest_id"] == 1]
    assert {r["event_id"] for r in initial} == {"1:file"}
    assert {r["event_time"] for r in initial} == {log[1]["ingested_at"]}    # no time in the file
    t = lambda s: datetime.fromisoformat(s).astimezone(timezone.utc)   # noqa: E731
    expected = {
        ("02_enrolments.rdfp", 10): ("urn:uuid:0b7e5d2a-8f41-4c1e-9d55-2f0c1a9e0001", t("2025-09-01T09:00:00Z"),
                                     "insert", u("erin"), DEFAULT_STREAM),
        ("02_enrolments.rdfp", 17): ("2:line:16", t("2025-09-01T08:30:00Z"), "insert", u("bob"), DEFAULT_STREAM),
        ("02_enrolments.rdfp", 23): ("2:line:23", t("2025-09-02T08:15:00Z"), "delete", u("alice"),
                                     DEFAULT_STREAM),
        ("03_updates.jsonl", 3): ("3:event:friends-dave-alice", t("2025-09-03T12:05:00Z"), "insert", u("alice"),
                                  DEFAULT_STREAM),
        ("03_updates.jsonl", 4): ("3:event:birthday-alice", t("2025-09-04T08:00:00Z"), "delete", u("alice"),
                                  DEFAULT_STREAM),
        ("03_updates.jsonl", 6): ("3:line:6", t("2025-09-05T14:00:00Z"), "insert", u("dave"), REGISTRAR),
        ("04_semester2.rdfp", 16): ("4:line:14", t("2025-09-11T16:45:00Z"), "insert", u("carol"), TEACHING),
    }
    for key, (event_id, when, op, s, stream) in expected.items():
        r = by_source[key]
        assert (r["event_id"], r["event_time"], r["op"], r["s"], r["stream"]) == (event_id, when, op, s, stream)

    # Replaying bronze in seq order gives the graph the story describes.
    graph: Counter = Counter()
    for r in bronze:
        graph[(r["s"], r["p"], r["o"], r["stream"])] += 1 if r["op"] == "insert" else -1
    facts = {k for k, n in graph.items() if n > 0}
    assert all(n in (0, 1) for n in graph.values())
    enrolled = {(s, o, g) for s, p, o, g in facts if p == u("enrolledIn")}
    assert enrolled == {(u("alice"), u("db101"), DEFAULT_STREAM), (u("alice"), u("alg201"), DEFAULT_STREAM),
                        (u("bob"), u("db101"), DEFAULT_STREAM), (u("erin"), u("db101"), DEFAULT_STREAM),
                        (u("dave"), u("db101"), REGISTRAR)}
    assert (u("alice"), u("age"), f'"22"^^<{XSD_INT}>', DEFAULT_STREAM) in facts
    assert {(o, g) for s, p, o, g in facts if p == u("teaches")} == {(u("alg201"), TEACHING)}
    assert len(facts) == 26 + 6 + 6 + 4 - 2 * (1 + 1 + 2)


# -- the bad corpus -----------------------------------------------------------------------------
EXPECTED_QUARANTINE = {
    ("broken.ttl", 4): "Turtle syntax error: expected '.' or '}' or ']' at end of statement",
    ("graphs.nq", 2): "graph name must be an IRI",
    ("graphs.nq", 3): "graph name must be an IRI",
    ("huge_line.jsonl", 2): "bad term in 'o': unterminated literal (truncated)",
    ("latin1_and_more.nt", 2): "invalid UTF-8 at byte 62",
    ("latin1_and_more.nt", 3): "invalid lexical form '1.x' for xsd:integer",
    ("latin1_and_more.nt", 4): "too many terms (at most 3)",
    ("latin1_and_more.nt", 5): "missing ' .' at end of statement",
    ("latin1_and_more.nt", 7): "invalid UTF-8 at byte 0",
    ("mixed.jsonl", 2): "unknown op '*' (expected '+' or '-')",
    ("mixed.jsonl", 3): "missing field 'o'",
    ("mixed.jsonl", 4): "time '2025-09-12 10:00:00' has no UTC offset",
    ("mixed.jsonl", 5): "bad time 'yesterday': not ISO-8601",
    ("mixed.jsonl", 6): "invalid JSON: Expecting property name enclosed in double quotes (column 137)",
    ("mixed.jsonl", 7): "bad term in 's': unterminated IRI",
    ("mixed.jsonl", 8): "bad term in 'o': invalid lexical form 'twenty' for xsd:integer",
    ("mixed.jsonl", 11): "line is not a JSON object",
    ("mixed.jsonl", 12): "expect_column_values_to_match_regex(p): predicate must be an IRI",
    ("mixed.rdfp", 5): "unterminated IRI",
    ("mixed.rdfp", 6): "bad escape \\q",
    ("mixed.rdfp", 7): "invalid lexical form 'abc' for xsd:integer",
    ("mixed.rdfp", 8): "invalid lexical form '300' for xsd:byte",
    ("mixed.rdfp", 9): "space in IRI",
    ("mixed.rdfp", 10): "relative IRI",
    ("mixed.rdfp", 11): "missing ' .' at end of statement",
    ("mixed.rdfp", 12): "undeclared prefix 'foaf:'",
    ("mixed.rdfp", 13): "unknown row code 'X'",
    ("mixed.rdfp", 14): "expect_column_values_to_match_regex(s): subject must be an IRI or a blank node",
    ("mixed.rdfp", 15): "expect_column_values_to_match_regex(p): predicate must be an IRI",
    ("mixed.rdfp", 19): "transaction aborted",
    ("mixed.rdfp", 20): "transaction aborted",
    ("mixed.rdfp", 24): "transaction rejected: bad row at line 25",
    ("mixed.rdfp", 25): "invalid lexical form '2004-02-30' for xsd:date",
    ("mixed.rdfp", 28): "invalid lexical form 'not a time' for xsd:dateTime",
    ("mixed.rdfp", 29): "TC without TX",
    ("mixed.rdfp", 34): "graph name must be an IRI",
    ("mixed.rdfp", 36): "transaction not committed (no TC before end of file)",
    ("roster.csv", 0): "unsupported file type .csv",
}


def test_bad_corpus_every_line_accounted(store):
    report = ingest_paths(store, [str(BAD)])
    bronze, quarantine = rows(store, "bronze"), rows(store, "quarantine")
    assert {(Path(q["file"]).name, q["line"]): q["reason"] for q in quarantine} == EXPECTED_QUARANTINE
    assert len(quarantine) == len(EXPECTED_QUARANTINE)
    log = {r["path"]: r for r in rows(store, "ingest_log")}
    assert len(log) == len(report.rows) == 8

    for file in report.rows:
        landed = sum(1 for b in bronze if b["source"].rsplit(":", 1)[0] == file.path)
        held = sum(1 for q in quarantine if q["file"] == file.path)
        assert (landed, held) == (file.ingested, file.quarantined) == \
               (log[file.path]["ingested"], log[file.path]["quarantined"])
        assert log[file.path]["lines"] == file.lines
        if parse(file.path, b"").line_based:
            assert landed + held + file.skipped_lines == file.lines, file.path
    by_name = {Path(f.path).name: f for f in report.rows}
    assert (by_name["broken.ttl"].lines, by_name["broken.ttl"].quarantined) == (4, 1)   # whole file
    assert (by_name["roster.csv"].lines, by_name["roster.csv"].quarantined) == (0, 1)
    assert log[str(BAD / "empty.nq")]["lines"] == 0 and by_name["empty.nq"].quarantined == 0
    assert report.lines == 65 and report.ingested + report.quarantined + report.skipped_lines == \
        65 - 4 + 1 + 1                                      # Turtle: 4 lines, 1 row; .csv: 0 lines, 1 row
    assert report.summary() == "ingested 10 rows, quarantined 38, skipped 0 files already ingested " \
                               "(8 files, 65 lines)"

    raw = {(Path(q["file"]).name, q["line"]): q["raw"] for q in quarantine}
    assert len(raw[("huge_line.jsonl", 2)]) == RAW_LIMIT
    assert "M\\xfcnchen" in raw[("latin1_and_more.nt", 2)]
    assert raw[("mixed.rdfp", 14)] == 'A "Frank" ex:isNameOf ex:frank .'     # the line as written
    assert raw[("broken.ttl", 4)] == (BAD / "broken.ttl").read_text()
    assert sorted(b["seq"] for b in bronze) == list(range(1, 11))          # quarantined rows leave no gap


def test_reingest_is_idempotent(store, tmp_path):
    first = ingest_paths(store, [str(LANDING)])
    versions = {t: store.version(t) for t in ("bronze", "quarantine", "ingest_log")}
    again = ingest_paths(store, [str(LANDING), str(LANDING / "03_updates.jsonl")])
    assert again.summary() == "ingested 0 rows, quarantined 0, skipped 4 files already ingested " \
                              "(4 files, 0 lines)"
    assert [r.ingest_id for r in again.rows] == [r.ingest_id for r in first.rows]
    assert {t: store.version(t) for t in versions} == versions

    copy = tmp_path / "copy.jsonl"                      # same content, other path: another file
    shutil.copy(LANDING / "03_updates.jsonl", copy)
    report = ingest_paths(store, [str(copy)])
    assert report.ingested == 6
    lines = len((LANDING / "03_updates.jsonl").read_text().splitlines())
    assert report.summary() == \
        f"ingested 6 rows, quarantined 0, skipped 0 files already ingested (1 file, {lines} lines)"
    assert ingest_paths(store, [str(copy)]).summary() == \
        "ingested 0 rows, quarantined 0, skipped 1 file already ingested (1 file, 0 lines)"
    copy.write_text(copy.read_text().splitlines()[0] + "\n")          # same path, new content: again
    changed = ingest_paths(store, [str(copy)])
    assert (changed.ingested, changed.skipped_files) == (1, 0)
    assert sorted(b["seq"] for b in rows(store, "bronze")) == list(range(1, 42 + 6 + 1 + 1))


def test_missing_path_is_an_error(store):
    with pytest.raises(FileNotFoundError, match="no such file or directory: nope.nt"):
        ingest_paths(store, ["nope.nt"])


# -- two ingests at once ------------------------------------------------------------------------
def _ingest_in_child(lake: str, paths: list[str], barrier, results) -> None:
    store = open_store(lake, None, backend="delta-rs")
    barrier.wait(timeout=120)
    report = ingest_paths(store, paths)
    results.put([(r.path, r.status) for r in report.rows])
    results.close()
    results.join_thread()
    os._exit(0)     # skip interpreter teardown: delta-rs with pyarrow may abort at exit (delta-rs#2184)


def test_concurrent_ingests_lose_and_double_nothing(tmp_path):
    files = sorted(str(p) for p in [*LANDING.iterdir(), *BAD.iterdir()] if p.name != "huge_line.jsonl")
    first, second = files[:7], files[4:][::-1]               # three files in both, opposite orders
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    lake = str(tmp_path / "lake")
    workers = [ctx.Process(target=_ingest_in_child, args=(lake, paths, barrier, results))
               for paths in (first, second)]
    for w in workers:
        w.start()
    reports = [results.get(timeout=180) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0

    statuses = Counter(status for report in reports for _, status in report)
    assert statuses == {"ingested": len(files), "skipped": 3}
    store = open_store(lake, None, backend="delta-rs")
    log = rows(store, "ingest_log")
    assert sorted(r["path"] for r in log) == files and sorted(r["ingest_id"] for r in log) == \
        list(range(1, len(files) + 1))

    reference = open_store(str(tmp_path / "reference"), None, backend="delta-rs")
    ingest_paths(reference, files)
    strip = lambda rs: Counter((r["op"], r["s"], r["p"], r["o"], r["stream"], r["source"],   # noqa: E731
                                r["event_id"].split(":", 1)[1] if r["event_id"][0].isdigit() else r["event_id"])
                               for r in rs)
    assert strip(rows(store, "bronze")) == strip(rows(reference, "bronze"))
    quarantined = lambda s: Counter((q["file"], q["line"], q["reason"]) for q in rows(s, "quarantine"))  # noqa
    assert quarantined(store) == quarantined(reference)

    bronze = rows(store, "bronze")
    assert sorted(r["seq"] for r in bronze) == list(range(1, len(bronze) + 1))
    for entry in log:                       # each file's rows hold exactly its contiguous seq range
        seqs = sorted(r["seq"] for r in bronze if r["ingest_id"] == entry["ingest_id"])
        expected = list(range(entry["first_seq"], entry["last_seq"] + 1)) if seqs else []
        assert seqs == expected
    feed = store.changes("bronze", 1).sort_by([("_commit_version", "ascending"), ("seq", "ascending")])
    assert feed["seq"].to_pylist() == sorted(feed["seq"].to_pylist())       # commit order is seq order


# -- crashes ------------------------------------------------------------------------------------
CRASH_FILES = [str(BAD / "mixed.jsonl"), str(BAD / "broken.ttl"), str(LANDING / "03_updates.jsonl")]
CRASH_APPENDS = 7           # quarantine+bronze+log, quarantine+log, bronze+log


class Crash(RuntimeError):
    pass


def crashing_store(lake: str, after: int, monkeypatch):
    """A store whose ``after``-th append commits and then raises, as if the process died there."""
    store = open_store(lake, None, backend="delta-rs")
    real, calls = store.append, itertools.count(1)

    def append(*args, **kwargs):
        done = real(*args, **kwargs)
        if next(calls) == after:
            raise Crash(f"crash after append {after}")
        return done

    monkeypatch.setattr(store, "append", append)
    return store


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The tables of an uninterrupted run, which must make exactly CRASH_APPENDS appends."""
    store = open_store(str(tmp_path_factory.mktemp("reference")), None, backend="delta-rs")
    real, calls = store.append, []
    store.append = lambda name, *args, **kwargs: calls.append(name) or real(name, *args, **kwargs)
    ingest_paths(store, CRASH_FILES)
    assert calls == ["quarantine", "bronze", "ingest_log", "quarantine", "ingest_log", "bronze", "ingest_log"]
    assert len(calls) == CRASH_APPENDS
    return snapshot(store)


@pytest.mark.parametrize("crash_at", range(1, CRASH_APPENDS + 1))
def test_rerun_after_a_crash_gives_the_uninterrupted_tables(crash_at, uninterrupted, tmp_path, monkeypatch):
    lake = str(tmp_path / "lake")
    with pytest.raises(Crash):
        ingest_paths(crashing_store(lake, crash_at, monkeypatch), CRASH_FILES)
    if crash_at < CRASH_APPENDS:     # the re-run itself dies after its first commit (recovery included)
        with pytest.raises(Crash):
            ingest_paths(crashing_store(lake, 1, monkeypatch), CRASH_FILES)
    ingest_paths(open_store(lake, None, backend="delta-rs"), CRASH_FILES)
    assert snapshot(open_store(lake, None, backend="delta-rs")) == uninterrupted


def test_rolled_back_file_may_be_followed_by_another(tmp_path, monkeypatch):
    """After a crash between a file's quarantine and bronze commits, the next run may ingest other
    files first: the reused ingest id still gets its quarantine rows."""
    mixed, broken = CRASH_FILES[0], CRASH_FILES[1]
    lake = str(tmp_path / "lake")
    with pytest.raises(Crash):
        ingest_paths(crashing_store(lake, 1, monkeypatch), [mixed])
    ingest_paths(open_store(lake, None, backend="delta-rs"), [broken])
    ingest_paths(open_store(lake, None, backend="delta-rs"), [mixed])
    reference = open_store(str(tmp_path / "reference"), None, backend="delta-rs")
    ingest_paths(reference, [broken, mixed])
    assert snapshot(open_store(lake, None, backend="delta-rs")) == snapshot(reference)


# -- the bronze expectation suite ---------------------------------------------------------------
def test_bronze_suite_runs_on_the_spark_table(store, spark):
    """One run over the real bronze table with two rows spoiled: exactly those two expectations
    fail (so the Java regexes accept every real term), with the right counts."""
    from pyspark.sql import functions as F

    ingest_paths(store, [str(LANDING)])
    broken = (store.read("bronze")
              .withColumn("p", F.when(F.col("seq") == 5, F.lit('"not a predicate"')).otherwise(F.col("p")))
              .withColumn("seq", F.when(F.col("seq") == 7, F.lit(8)).otherwise(F.col("seq"))))
    result = run_suite(bronze_suite(), broken)
    failed = {(r.expectation_config.type, r.expectation_config.kwargs["column"]): r.result["unexpected_count"]
              for r in result.results if not r.success}
    assert failed == {("expect_column_values_to_match_regex", "p"): 1,
                      ("expect_column_values_to_be_unique", "seq"): 2}
    assert len(result.results) == 7


def test_stream_and_time_options_default_what_a_format_does_not_carry(tmp_path, capsys):
    """``ingest --stream IRI --time ISO``: N-Triples lines get both; a JSON Lines line keeps its own
    time and stream and takes the default stream only where it names none; bad values are one line."""
    from pipelines import cli

    lake = str(tmp_path / "lake")
    jsonl = tmp_path / "mixed_streams.jsonl"
    jsonl.write_text(
        '{"time": "2026-01-01T00:00:05Z", "op": "+", "s": "<http://e/a>", "p": "<http://e/p>", "o": "<http://e/b>"}\n'
        '{"time": "2026-01-01T00:00:06Z", "op": "+", "s": "<http://e/a>", "p": "<http://e/p>", "o": "<http://e/c>",'
        ' "stream": "http://e/own"}\n', encoding="utf-8")
    argv = ["--lake", lake, "-q", "ingest", str(LANDING / "01_initial.nt"), str(jsonl),
            "--stream", "<http://example.org/rooms>", "--time", "2026-11-23T09:00:00Z"]
    assert cli.main(argv) == 0
    bronze = rows(open_store(lake, None, "delta-rs"), "bronze")
    initial = [b for b in bronze if b["source"].startswith(str(LANDING))]
    assert len(initial) == 26 and {b["stream"] for b in initial} == {"http://example.org/rooms"}
    assert {b["event_time"].isoformat() for b in initial} == {"2026-11-23T09:00:00+00:00"}
    own = {b["o"]: (b["stream"], b["event_time"].isoformat()) for b in bronze if b["s"] == "<http://e/a>"}
    assert own == {"<http://e/b>": ("http://example.org/rooms", "2026-01-01T00:00:05+00:00"),
                   "<http://e/c>": ("http://e/own", "2026-01-01T00:00:06+00:00")}
    capsys.readouterr()
    for bad, reason in ((["--stream", "not an iri"], "bad stream"), (["--time", "yesterday"], "bad time")):
        assert cli.main(["--lake", lake, "ingest", str(jsonl), *bad]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"lakegraph: error: {reason}"), err
