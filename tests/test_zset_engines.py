"""The two Z-set engines agree operation by operation (joins, products, sums, consolidation,
support changes, filters) on random signed bags, and the engine choice follows its rule."""
from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from pipelines import cli
from pipelines.engine.conditions import where_in_process
from pipelines.engine.runner import ARROW_MAX_BACKFILL, ARROW_MAX_MESSAGES, Runner, choose_engine, zset_engine
from pipelines.engine.zsets import binding_schema
from pipelines.engine.spark import SparkZSets, filter_arrow
from schemas.tables import MULT
from views.conditions import Condition, compile_filter
from views.sparql import parse_query

TERMS = ["<http://e/a>", "<http://e/b>", "<http://e/c>", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>']


def bag(table: pa.Table, columns: list[str]) -> Counter:
    """A Z-set as a Counter of rows (zero entries dropped), whatever its column order."""
    out: Counter = Counter()
    for row in table.to_pylist():
        out[tuple(row[c] for c in columns)] += row[MULT]
    return Counter({k: v for k, v in out.items() if v})


def random_zset(rng: random.Random, columns: list[str], rows: int) -> pa.Table:
    data = {c: [rng.choice(TERMS) for _ in range(rows)] for c in columns}
    data[MULT] = [rng.choice([-2, -1, 1, 1, 2]) for _ in range(rows)]
    return pa.table(data, schema=binding_schema(columns))


@pytest.fixture(scope="module")
def engines(spark):
    tables = {}
    arrow = zset_engine("arrow", spark, tables.__getitem__, tables.__getitem__)
    sparkz = SparkZSets(spark, tables.__getitem__, tables.__getitem__)
    return tables, arrow, sparkz


def both(engines, build, schema: pa.Schema) -> tuple[pa.Table, pa.Table]:
    """``build(z)`` on each engine, collected in ``schema``."""
    _, arrow, sparkz = engines
    return tuple(z.collect({"out": build(z)}, {"out": schema})["out"] for z in (arrow, sparkz))


@pytest.mark.parametrize("seed", range(4))
def test_join_sum_consolidate_agree(engines, seed):
    rng = random.Random(seed)
    left = random_zset(rng, ["x", "y"], 12)
    right = random_zset(rng, ["y", "z"], 12)
    other = random_zset(rng, ["x", "y", "z"], 6)
    columns = ["x", "y", "z"]

    def build(z):
        joined = z.join(z.from_arrow(left), z.from_arrow(right))
        return z.consolidate(z.add([joined, z.from_arrow(other)]), columns)

    arrow, spark = both(engines, build, binding_schema(columns))
    expected: Counter = Counter()
    for a in left.to_pylist():
        for b in right.to_pylist():
            if a["y"] == b["y"]:
                expected[(a["x"], a["y"], b["z"])] += a[MULT] * b[MULT]
    expected.update({k: v for k, v in bag(other, columns).items()})
    expected = Counter({k: v for k, v in expected.items() if v})
    assert bag(arrow, columns) == bag(spark, columns) == expected
    assert expected, "the random inputs should join"
    assert all(m != 0 for m in arrow[MULT].to_pylist()), "consolidation drops cancelled rows"


def test_product_empty_and_zero_columns_agree(engines):
    rng = random.Random(9)
    a, b = random_zset(rng, ["x"], 3), random_zset(rng, ["y"], 4)
    empty = binding_schema(["y"]).empty_table()
    arrow, spark = both(engines, lambda z: z.join(z.from_arrow(a), z.from_arrow(b)), binding_schema(["x", "y"]))
    assert bag(arrow, ["x", "y"]) == bag(spark, ["x", "y"]) and arrow.num_rows == 12
    arrow, spark = both(engines, lambda z: z.join(z.from_arrow(a), z.from_arrow(empty)), binding_schema(["x", "y"]))
    assert arrow.num_rows == spark.num_rows == 0
    total = sum(a[MULT].to_pylist())
    arrow, spark = both(engines, lambda z: z.consolidate(z.from_arrow(a), []), binding_schema([]))
    assert arrow[MULT].to_pylist() == spark[MULT].to_pylist() == ([total] if total else [])


def test_support_delta_agrees(engines):
    tables, _, _ = engines
    schema = binding_schema(["x"])
    old = pa.table({"x": TERMS[:3], MULT: [1, 2, 1]}, schema=schema)
    change = pa.table({"x": [TERMS[0], TERMS[1], TERMS[3]], MULT: [-1, -1, 3]}, schema=schema)
    tables["bag"] = old
    arrow, spark = both(engines, lambda z: z.support_delta(z.from_arrow(change), z.read("bag"), ["x"]), schema)
    # a: 1 -> 0 leaves the support, b: 2 -> 1 stays, the new literal enters
    assert bag(arrow, ["x"]) == bag(spark, ["x"]) == Counter({(TERMS[0],): -1, (TERMS[3],): 1})


def condition(text: str) -> Condition:
    """A FILTER over ?x and ?y, compiled as a plan compiles it."""
    query = parse_query(f"SELECT * {{ ?x <urn:p> ?y FILTER({text}) }}")
    return compile_filter(query.filters[0], {"x", "y"})


def test_where_agrees_on_both(engines):
    """The Arrow engine decides the FILTER in process, the Spark engine in SQL: the same rows."""
    rng = random.Random(3)
    rows = random_zset(rng, ["x", "y"], 20)
    predicate = condition("?x = ?y || ?x = <http://e/a>")
    arrow, spark = both(engines, lambda z: z.where(z.from_arrow(rows), predicate), binding_schema(["x", "y"]))
    expected = Counter()
    for r in rows.to_pylist():
        if r["x"] == r["y"] or r["x"] == TERMS[0]:
            expected[(r["x"], r["y"])] += r[MULT]
    assert bag(arrow, ["x", "y"]) == bag(spark, ["x", "y"]) == Counter({k: v for k, v in expected.items() if v})


def test_a_table_in_pieces_some_empty_keeps_every_row_on_spark(engines):
    """PySpark 4.2's createDataFrame drops the rows after an empty chunk: a FILTER over a join of
    a lookup's pieces lost answers until tables went to Spark in one chunk."""
    rng = random.Random(4)
    whole = random_zset(rng, ["x", "y"], 12)
    pieces = pa.concat_tables([whole.slice(0, 5), whole.slice(5, 0), whole.slice(5)])
    assert [c.num_chunks for c in pieces.columns] == [3, 3, 3]
    predicate = Condition("`x` IS NOT NULL")      # SQL alone: the Arrow engine hands it to Spark
    arrow, spark = both(engines, lambda z: z.where(z.from_arrow(pieces), predicate), binding_schema(["x", "y"]))
    assert bag(arrow, ["x", "y"]) == bag(spark, ["x", "y"]) == bag(whole, ["x", "y"])


def test_in_process_where_hands_spark_only_the_undecided_rows(spark):
    """Rows whose value the in-process operators cannot promise (here an integer beyond Spark's
    DECIMAL(38,18)) go to the SQL, alone; every other row is decided without it; the union is
    what Spark keeps of all rows."""
    big = '"123456789012345678901234"^^<http://www.w3.org/2001/XMLSchema#integer>'
    rows = pa.table({"x": [TERMS[3], big, TERMS[0], '"abc"'], "y": [TERMS[3]] * 4, MULT: [1, 2, 3, 4]},
                    schema=binding_schema(["x", "y"]))
    predicate = condition("?x > 0 || isIRI(?x)")
    handed: list[pa.Table] = []

    def by_sql(undecided: pa.Table, sql: str) -> pa.Table:
        handed.append(undecided)
        return filter_arrow(spark, undecided, sql)

    kept = where_in_process(rows, predicate, by_sql)
    assert [t["x"].to_pylist() for t in handed] == [[big]]
    assert bag(kept, ["x", "y"]) == bag(filter_arrow(spark, rows, predicate.sql), ["x", "y"])
    assert sorted(kept[MULT].to_pylist()) == [1, 3]   # 1 > 0 and an IRI; the SQL errs on the big number
    assert where_in_process(rows.slice(0, 1), predicate, lambda *_: pytest.fail("asked the SQL")).num_rows == 1


def test_engine_choice():
    assert choose_engine("auto", 1000, "local[*]") == "arrow"
    assert choose_engine("auto", ARROW_MAX_MESSAGES + 1, "local[2]") == "spark"
    assert choose_engine("auto", ARROW_MAX_MESSAGES + 1, "local[2]", ARROW_MAX_BACKFILL) == "arrow"   # a backfill
    assert choose_engine("auto", 10, "spark://cluster:7077") == "spark"
    assert choose_engine("spark", 10, "local[*]") == "spark"
    assert choose_engine("arrow", 10**9, "yarn") == "arrow"
    with pytest.raises(ValueError, match="unknown engine 'fast': use one of auto, arrow, spark"):
        Runner(None, None, engine="fast")  # type: ignore[arg-type]


def test_cli_refuses_an_unknown_engine(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--lake", str(tmp_path / "lake"), "run", "--engine", "fast"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'fast'" in capsys.readouterr().err


def test_session_conf_is_restored_after_the_block(spark):
    """The Spark engine sets :data:`BATCH_CONF` for its own jobs only: what the session had before
    comes back, and a key it did not have is unset again."""
    from pipelines.engine.spark import BATCH_CONF
    from pipelines.spark import session_conf

    before = {key: spark.conf.get(key) for key in BATCH_CONF}
    with pytest.raises(RuntimeError), session_conf(spark, {**BATCH_CONF, "lakegraph.test.key": "1"}):
        assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
        assert spark.conf.get("lakegraph.test.key") == "1"
        raise RuntimeError("the block fails: the settings still come back")
    assert {key: spark.conf.get(key) for key in BATCH_CONF} == before
    assert spark.conf.get("lakegraph.test.key", None) is None


def test_the_spark_plan_reads_a_relation_twice_and_leaves_no_temporary_view(engines, spark):
    """The Spark engine's plan is SQL text over temporary views registered only while Spark
    analyses it: a relation read by two branches (a join of a table with itself, renamed) is one
    common table expression, the answer is right, and the session's catalog holds no view after."""
    tables, _, sparkz = engines
    tables["t_self"] = pa.table({"a": ["x", "y", "y"], "b": ["y", "z", "x"], MULT: [1, 2, -1]},
                                schema=binding_schema(["a", "b"]))
    before = {t.name for t in spark.catalog.listTables()}

    def build(z):
        stored = z.read("t_self")
        return z.consolidate(z.join(z.rename(stored, [("a", "x"), ("b", "y")]),
                                    z.rename(stored, [("a", "y"), ("b", "z")])), ["x", "z"])

    arrow, on_spark = both(engines, build, binding_schema(["x", "z"]))
    # x->y (1) with y->z (2) and y->x (-1): (x, z) 2, (x, x) -1; y->x (-1) with x->y (1): (y, y) -1
    assert bag(arrow, ["x", "z"]) == bag(on_spark, ["x", "z"]) == {("x", "z"): 2, ("x", "x"): -1, ("y", "y"): -1}
    assert {t.name for t in spark.catalog.listTables()} == before


def test_the_probes_agree_on_awkward_terms_and_unconsolidated_views(engines):
    """The Spark probe selects a view's stored rows through SQL text literals: quotes, backslashes
    and non-ASCII in terms must select exactly the keys the messages touch, and a key whose stored
    copies sum to zero (merge on read) is absent: the Arrow probe reads the view consolidated, as
    a run holds it, the Spark probe as stored."""
    from pipelines.engine.merge_on_read import content_arrow
    from pipelines.engine.views import compute_view_changes, probe_arrow, probe_spark
    from views.plan import ViewDef

    tables, arrow, sparkz = engines
    awkward = ['"it\'s"', '"back\\\\slash \\"q\\""', '"é {x}"@fr', "<http://e/a'b>"]
    view = ViewDef(id="v_probe", canonical="?v0 <http://e/p> ?v1", s=None, p="<http://e/p>", o=None,
                   columns=("v0", "v1"), positions=(("s", "v0"), ("o", "v1")), filter_sql=None)
    stored = [(a, b, 1) for a in awkward[:3] for b in awkward[1:]] + [(awkward[3], awkward[0], 1),
                                                                      (awkward[3], awkward[0], -1)]
    tables[view.id] = pa.table({"v0": [r[0] for r in stored], "v1": [r[1] for r in stored],
                                MULT: [r[2] for r in stored]}, schema=binding_schema(view.columns))
    triples = [(a, b) for a in awkward for b in awkward]
    messages = pa.table({"seq": list(range(len(triples))), "op": ["insert", "delete"] * (len(triples) // 2),
                         "s": [t[0] for t in triples], "p": ["<http://e/p>"] * len(triples),
                         "o": [t[1] for t in triples]})
    consolidated = content_arrow({view.id}, tables.__getitem__)
    on_arrow = probe_arrow(messages, [view], lambda v, keys: consolidated(v.id), arrow.where)
    on_spark = probe_spark(sparkz, messages, [view])
    deltas = [compute_view_changes(p, [view]).deltas[view.id] for p in (on_arrow, on_spark)]
    assert bag(deltas[0], ["v0", "v1"]) == bag(deltas[1], ["v0", "v1"])
    assert bag(deltas[1], ["v0", "v1"]), "the messages change the view"
