"""Adversarial names: query names, stream IRIs, file names and lake paths with quotes, ``..``, ``/``,
backticks, SQL comments, 300 characters or Unicode look-alikes are refused in one line or kept as
data: nothing is written outside the lake, and nothing reaches a SQL text or predicate as code."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipelines import catalog, cli
from pipelines.storage import open_store

ROOT = Path(__file__).resolve().parents[1]
TEACHING = str(ROOT / "examples" / "queries" / "teaching.rq")
INITIAL = str(ROOT / "examples" / "landing" / "01_initial.nt")

BAD_NAMES = ["x'; DROP TABLE queries; --", "x' OR '1'='1", "../escape", "a/b", "/tmp/abs", "gold`x", "q--c",
             "q/*c*/", "q" * 300, "tеaching",          # a Cyrillic е
             "ｔeaching", "q\nr", "", "1q", "q.r", "q name"]


def lakegraph(capsys, lake: Path, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["--lake", str(lake), "-q", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def files_under(path: Path) -> set[Path]:
    return set(path.rglob("*"))


@pytest.fixture
def lake(tmp_path, capsys) -> Path:
    path = tmp_path / "work" / "lake"
    assert lakegraph(capsys, path, "ingest", INITIAL)[0] == 0
    return path


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_query_name_is_refused_in_one_line_and_writes_nothing(lake, tmp_path, capsys, name):
    before = files_under(tmp_path)
    code, out, err = lakegraph(capsys, lake, "register", TEACHING, "--name", name)
    assert code == 1 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("lakegraph: error: invalid query name"), err
    header = tmp_path / "header.rq"
    header.write_text(f"REGISTER QUERY {name} AS\n" + Path(TEACHING).read_text())
    code, _, err = lakegraph(capsys, lake, "register", str(header))
    assert code == 1 and len(err.splitlines()) == 1, err
    assert files_under(tmp_path) - before == {header}


@pytest.mark.parametrize("name", ["nope' OR '1'='1", "../../etc"])
def test_a_bad_name_never_reaches_a_predicate(lake, capsys, name):
    code, _, err = lakegraph(capsys, lake, "unregister", name)
    assert code == 1 and err.startswith("lakegraph: error: no registered query named"), err
    with pytest.raises(ValueError, match="invalid query name"):
        catalog.remove(open_store(str(lake), None, backend="delta-rs"), name)


def test_names_differing_only_in_case_are_one_name(lake, capsys):
    assert lakegraph(capsys, lake, "register", TEACHING, "--name", "Teaching")[0] == 0
    code, _, err = lakegraph(capsys, lake, "register", TEACHING, "--name", "teaching")
    assert code == 1 and "a query named 'Teaching' is already registered" in err


@pytest.mark.parametrize("stream,refused", [("http://x/a'b--c/*d*/", False), ("../../etc/passwd", True),
                                            ("http://x/a`b", True), ('http://x/a"b', True),
                                            ("http://x/a> <http://y/b", True), ("http://x/" + "s" * 300, False)])
def test_a_stream_is_an_iri_kept_as_data(lake, tmp_path, capsys, stream, refused):
    data = tmp_path / "one.nt"
    data.write_text("<http://x/s> <http://x/p> <http://x/o> .\n")
    before = files_under(tmp_path)
    code, _, err = lakegraph(capsys, lake, "ingest", str(data), "--stream", stream)
    if refused:
        assert code == 1 and err.startswith("lakegraph: error: bad stream") and len(err.splitlines()) == 1, err
        assert files_under(tmp_path) == before
        return
    assert code == 0, err
    bronze = open_store(str(lake), None, backend="delta-rs").read_arrow("bronze")
    assert bronze["stream"].to_pylist().count(stream) == 1
    assert {p for p in files_under(tmp_path) - before if lake not in p.parents} == set()


def test_an_output_stream_is_refused_unless_an_iri(lake, tmp_path, capsys):
    query = ROOT / "examples" / "windows" / "together.rq"
    code, _, err = lakegraph(capsys, lake, "register", str(query), "--output-stream", "../../x'`--")
    assert code == 1 and err.startswith("lakegraph: error: --output-stream: bad stream"), err


@pytest.mark.parametrize("stem", ["it's", "a`b`", "x -- y; DROP", "50% off", "dots..", "ü" * 100])
def test_a_landing_file_name_is_data(lake, tmp_path, capsys, stem):
    data = tmp_path / f"{stem}.nt"
    data.write_text("<http://x/s> <http://x/p> <http://x/o> .\n")
    before = files_under(tmp_path)
    code, out, err = lakegraph(capsys, lake, "ingest", str(data))
    assert code == 0 and "ingested 1 rows" in out, err
    log = open_store(str(lake), None, backend="delta-rs").read_arrow("ingest_log")
    assert str(data) in log["path"].to_pylist()
    assert all(lake in p.parents for p in files_under(tmp_path) - before)
    assert lakegraph(capsys, lake, "ingest", str(data))[1].startswith("ingested 0 rows")   # once


def test_a_lake_whose_path_has_quotes_backticks_comments_and_percents(tmp_path, capsys, spark):
    lake = tmp_path / "it's a `lake` -- 100% /* x */"
    assert lakegraph(capsys, lake, "ingest", INITIAL)[0] == 0
    assert lakegraph(capsys, lake, "register", TEACHING)[0] == 0
    code, out, err = lakegraph(capsys, lake, "sql", "SELECT count(*) AS n FROM bronze@v1", "--format", "tsv")
    assert code == 0 and out.split() == ["n", "26"], err
    code, out, err = lakegraph(capsys, lake, "sql", "SELECT count(*) AS n FROM gold_teaching", "--format", "tsv")
    assert code == 0 and out.split() == ["n", "1"], err
