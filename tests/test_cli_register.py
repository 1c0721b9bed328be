"""`lakegraph register` through the CLI: a refused query or name is one line on stderr, a non-zero
exit, and nothing written to the lake; `queries` lists, `unregister` drops only what one query uses."""
from __future__ import annotations

import os

import pytest

from pipelines import cli
from pipelines.lake import VIEWS
from pipelines.storage.delta_rs import DeltaRsStore
from schemas.tables import MULT, VIEW

REFUSED = {
    "optional.rq": ("SELECT * { ?s <http://e/p> ?o OPTIONAL { ?o <http://e/q> ?z } }", "OPTIONAL"),
    "union.rq": ("SELECT * { { ?s <http://e/p> ?o } UNION { ?s <http://e/q> ?o } }", "UNION"),
    "graph.rq": ("SELECT * { GRAPH ?g { ?s <http://e/p>+ ?o } }", "GRAPH"),
    "minus.rq": ("SELECT * { ?s <http://e/p> ?o MINUS { ?s <http://e/q> ?o } }", "MINUS"),
    "syntax.rq": ("SELECT ?s WHERE { ?s <http://e/p> }", "syntax error at line 1"),
}


def lake_state(lake: str) -> dict[str, list[str]]:
    """Every table of the lake and its log entries: a refused command must leave it unchanged."""
    return {t: sorted(os.listdir(os.path.join(lake, t, "_delta_log")))
            for t in sorted(os.listdir(lake)) if os.path.isdir(os.path.join(lake, t, "_delta_log"))}


def views_held(lake: str) -> set[str]:
    """The views the lake's views table holds rows of (summing to a positive multiplicity)."""
    rows = DeltaRsStore(lake).read_arrow(VIEWS)
    sums = rows.group_by(VIEW).aggregate([(MULT, "sum")]).to_pylist()
    return {r[VIEW] for r in sums if r[f"{MULT}_sum"] > 0}


def register_on(lake: str, tmp_path, queries: dict[str, str], graph: str) -> None:
    """Ingest N-Triples ``graph`` into ``lake``, then register ``queries`` (name: text) in order."""
    (tmp_path / "g.nt").write_text(graph, encoding="utf-8")
    assert cli.main(["--lake", lake, "ingest", str(tmp_path / "g.nt")]) == 0
    for name, text in queries.items():
        (tmp_path / f"{name}.rq").write_text(text, encoding="utf-8")
        assert cli.main(["--lake", lake, "register", str(tmp_path / f"{name}.rq")]) == 0


@pytest.fixture()
def lake(tmp_path, spark):  # noqa: ARG001 - the shared session, which the CLI reuses
    path = str(tmp_path / "lake")
    assert cli.main(["--lake", path, "init"]) == 0
    return path


@pytest.mark.parametrize("file", sorted(REFUSED))
def test_a_refused_query_is_one_line_and_writes_nothing(lake, tmp_path, capsys, file):
    text, construct = REFUSED[file]
    query = tmp_path / file
    query.write_text(text, encoding="utf-8")
    before = lake_state(lake)
    capsys.readouterr()
    assert cli.main(["--lake", lake, "register", str(query)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and construct in err and file in err, err
    assert lake_state(lake) == before


@pytest.mark.parametrize("name", ["1abc", "a-b", "x" * 65, "gold_x;drop"])
def test_a_bad_name_is_refused(lake, tmp_path, capsys, name):
    query = tmp_path / "ok.rq"
    query.write_text("SELECT ?s { ?s <http://e/p> ?o }", encoding="utf-8")
    before = lake_state(lake)
    capsys.readouterr()
    assert cli.main(["--lake", lake, "register", str(query), "--name", name]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err
    assert lake_state(lake) == before


def test_queries_lists_and_unregister_keeps_shared_views(lake, tmp_path, capsys):
    register_on(lake, tmp_path, {"a": "SELECT ?s { ?s <http://e/p> ?o . ?o <http://e/q> ?z }",
                                 "b": "SELECT ?s { ?s <http://e/p> ?o }"},
                "<http://e/a> <http://e/p> <http://e/b> .\n<http://e/b> <http://e/q> <http://e/c> .\n")
    capsys.readouterr()
    assert cli.main(["--lake", lake, "queries"]) == 0
    listed = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["a", "b"]
    views_before = views_held(lake)
    assert len(views_before) == 2 and not {t for t in lake_state(lake) if t.startswith("v_")}
    capsys.readouterr()
    assert cli.main(["--lake", lake, "unregister", "a"]) == 0
    gone = (views_before - views_held(lake)).pop()
    assert capsys.readouterr().out.strip() == ("unregistered a; dropped 1 table(s): gold_a; "
                                               f"removed 1 view(s) from the views table: {gone}")
    tables = set(lake_state(lake))
    assert not any(t.startswith("gold_a") for t in tables) and "gold_b" in tables
    logged = set(DeltaRsStore(lake).read_arrow("answer_changes")["_query"].to_pylist())
    assert logged == {"b"}, "a's answer changes left the answer changes table, b's stayed"
    assert len(views_held(lake)) == 1 and views_held(lake) < views_before   # b's pattern stays, a's own one is gone


def test_a_registered_path_is_shared_and_kept_while_a_query_uses_it(lake, tmp_path, capsys):
    """``?m b* ?y`` bound at ?m by another pattern walks b* from a's objects, unless the lake keeps
    b* from every node already (for query ``walk``): then the query shares that path view, which
    stays when ``walk`` goes."""
    register_on(lake, tmp_path, {"walk": "SELECT * { ?x <http://e/b>* ?y }",
                                 "from_a": "SELECT * { ?x <http://e/a> ?m . ?m <http://e/b>* ?y }"},
                "<http://e/s> <http://e/a> <http://e/n> .\n<http://e/n> <http://e/b> <http://e/o> .\n")
    paths = {t for t in lake_state(lake) if t.startswith("p_")}
    assert len(paths) == 2                      # one path view and its reach table, for both queries
    capsys.readouterr()
    assert cli.main(["--lake", lake, "explain", "from_a"]) == 0
    assert "roots: every node with a first move" in capsys.readouterr().out
    assert cli.main(["--lake", lake, "unregister", "walk"]) == 0
    assert {t for t in lake_state(lake) if t.startswith("p_")} == paths
    capsys.readouterr()
    assert cli.main(["--lake", lake, "answers", "from_a", "--format", "csv"]) == 0
    assert sorted(capsys.readouterr().out.splitlines()[1:]) == ["http://e/s,http://e/n,http://e/n",
                                                                "http://e/s,http://e/n,http://e/o"]


def test_a_registration_writes_its_views_and_a_paths_tables_as_part_of_a_fold(lake, tmp_path):
    """A registration appends its new views' rows to the views table as part of the table's fold,
    and writes a path's tables as folds: a run then takes those rows as they are
    (:meth:`TableStore.read_folded`), and sums only what batches appended. Here the fold's rows
    are both registrations' views, none repeated, each view's together; the others are what the
    batch between them appended."""
    register_on(lake, tmp_path, {"a": "SELECT ?s { ?s <http://e/p> ?o . ?o <http://e/q> ?z }"},
                "<http://e/a> <http://e/p> <http://e/b> .\n<http://e/b> <http://e/q> <http://e/c> .\n")
    (tmp_path / "more.nt").write_text("<http://e/b> <http://e/p> <http://e/c> .\n<http://e/c> <http://e/q> <http://e/d> .\n"
                                      "<http://e/b> <http://e/r> <http://e/c> .\n<http://e/c> <http://e/r> <http://e/b> .\n",
                                      encoding="utf-8")
    assert cli.main(["--lake", lake, "ingest", str(tmp_path / "more.nt")]) == 0
    assert cli.main(["--lake", lake, "run"]) == 0
    (tmp_path / "b.rq").write_text("SELECT * { ?s <http://e/p> ?o . ?o <http://e/r>+ ?y }", encoding="utf-8")
    assert cli.main(["--lake", lake, "register", str(tmp_path / "b.rq")]) == 0
    store = DeltaRsStore(lake)
    folded, rest = store.read_folded(VIEWS)
    assert set(folded[MULT].to_pylist()) == {1}
    rows = [tuple(r.values()) for r in folded.drop_columns([MULT]).to_pylist()]
    assert len(rows) == len(set(rows)) == 4     # a's p and q edges, b's two r edges
    runs = [view for i, view in enumerate(folded[VIEW].to_pylist()) if i == 0 or view != folded[VIEW][i - 1].as_py()]
    assert len(runs) == len(set(runs)) == len(views_held(lake)) == 3     # ?s p ?o, ?o q ?z (a's), the r edges (b's)
    assert sorted((r["v0"], r["v1"]) for r in rest.to_pylist()) == [("<http://e/b>", "<http://e/c>"),
                                                                     ("<http://e/c>", "<http://e/d>")]
    paths = [t for t in lake_state(lake) if t.startswith("p_")]
    assert paths and all(store.read_folded(t)[1].num_rows == 0 < store.read_folded(t)[0].num_rows for t in paths)


def test_a_register_query_header_names_the_query(lake, tmp_path, capsys):
    query = tmp_path / "file_name.rq"
    query.write_text("REGISTER QUERY byHeader AS\nSELECT ?s { ?s <http://e/p> ?o }", encoding="utf-8")
    assert cli.main(["--lake", lake, "register", str(query)]) == 0
    assert cli.main(["--lake", lake, "register", str(query), "--name", "byOption"]) == 0
    assert cli.main(["--lake", lake, "queries"]) == 0
    names = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines() if "\t" in line]
    assert names == ["byHeader", "byOption"]


@pytest.mark.parametrize("clause", ["FROM STREAM <http://e/s> [RANGE 10s STEP 5s]", "FROM <http://e/g>"])
def test_a_windowed_query_keeps_its_own_tables_and_unregistering_removes_them(lake, tmp_path, capsys, clause):
    query = tmp_path / "windowed.rq"
    query.write_text(f"REGISTER QUERY w AS\nSELECT ?s\n{clause}\nWHERE {{ ?s <http://e/p> ?o }}", encoding="utf-8")
    assert cli.main(["--lake", lake, "explain", str(query)]) == 0
    assert clause.split(" [")[0].replace("FROM ", "") in capsys.readouterr().out
    before = lake_state(lake)
    assert cli.main(["--lake", lake, "register", str(query)]) == 0
    tables = set(lake_state(lake)) - set(before)
    assert {"gold_w", "w_w_background"} <= tables
    # its windows and its state go to the lake's window log and window state table
    assert not {t for t in tables if t.endswith("_windows") or t.endswith("_state")}
    assert ("w_w_buffer" in tables) == ("STREAM" not in clause)    # background messages: rewritten
    assert not views_held(lake)            # its views are parts of its state, not of the views table
    assert cli.main(["--lake", lake, "unregister", "w"]) == 0
    assert set(lake_state(lake)) == set(before)
