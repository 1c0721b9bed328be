"""``lakegraph sql``: read-only Spark SQL over the lake's tables, ``name@vN`` for a past version.

Read-only because Spark SQL can otherwise write anywhere the process can reach (``INSERT OVERWRITE
DIRECTORY``, ``CREATE TABLE ... LOCATION``), change the session (``SET``, ``ADD JAR``) or call Java
(``reflect``). The statement is parsed by Spark's own parser, without running it, and runs only when
it is a query (``SELECT``, ``WITH``, ``VALUES``, ``TABLE``, ``FROM``), a ``SHOW`` or ``DESCRIBE``, or
an ``EXPLAIN`` of a query: no node of its plan may be a command or a write.

Time travel: ``name VERSION AS OF n`` and ``name TIMESTAMP AS OF 'time'`` (Delta's SQL) on either
backend. On delta-spark they are Delta's own, on the table's path; on delta-rs (no Delta SQL) they
become a view of the version, as ``name@vN`` does on both.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING

from .context import CliError, one_line

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .context import Context

_VERSIONED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)@v(\d+)\b")
_AS_OF = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s+(VERSION|TIMESTAMP)\s+AS\s+OF\s+(\d+|'[^']*')", re.I)
#: Commands that only read the catalog; everything else that Spark calls a command is refused.
_READING_COMMANDS = re.compile(r"^(Show\w*|Describe\w*)$")
#: Plan nodes that write without being commands (an INSERT, possibly under a WITH) or run a string.
_WRITING_NODES = re.compile(r"Insert|ExecuteImmediate")
#: Functions that call arbitrary Java methods.
_JAVA_CALLS = re.compile(r"'(reflect|try_reflect|java_method)\(", re.I)
ALLOWED = "only SELECT, WITH, VALUES, TABLE, SHOW, DESCRIBE and EXPLAIN of a query run"


def _nodes(plan) -> list:
    """Every node of a JVM logical plan, the root first."""
    found, stack = [], [plan]
    while stack:
        node = stack.pop()
        found.append(node)
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return found


def check_read_only(spark, sql: str) -> str:
    """Raise :class:`CliError` unless ``sql`` is one read-only statement (see the module doc);
    returns the class of the statement's root node (``Project``, ``ShowTables``, ...)."""
    jvm = spark._jvm
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
    except Exception as exc:  # a syntax error (or two statements)
        raise CliError(f"SQL failed: {one_line(exc)}") from None
    command = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.Command")
    root = plan.getClass().getSimpleName()
    if root == "ExplainCommand":
        plan = plan.logicalPlan()
    elif command.isInstance(plan) and _READING_COMMANDS.match(root):
        return root
    for node in _nodes(plan):
        name = node.getClass().getSimpleName().rstrip("$")
        if command.isInstance(node) or _WRITING_NODES.search(name):
            raise CliError(f"lakegraph sql is read-only: refused a {name} statement ({ALLOWED})")
    if _JAVA_CALLS.search(plan.treeString()):
        raise CliError("lakegraph sql is read-only: refused a call of reflect/java_method (Java from SQL)")
    return root


def _at(store, name: str, kind: str, when: str) -> int:
    """The version ``VERSION AS OF``/``TIMESTAMP AS OF`` names (an ISO time; naive means UTC)."""
    if kind.upper() == "VERSION":
        return int(when)
    try:
        stamp = datetime.fromisoformat(when.strip("'"))
    except ValueError:
        raise CliError(f"TIMESTAMP AS OF expects an ISO time such as '2026-11-23 09:00:00', got {when}") from None
    return store.version_at(name, stamp)


def cmd_sql(ctx: "Context") -> None:
    from ..engine import answer_changes
    from ..lake import ANSWER_CHANGES

    store = ctx.require_lake()
    spark = ctx.spark()
    tables = set(store.tables())
    # each query's rows of the answer changes table, by the name its own table had
    derived = answer_changes.sql_views(store) if ANSWER_CHANGES in tables else {}
    names = tables | set(derived)

    def known(name: str) -> str:
        if name not in names:
            raise CliError(f"no table {name!r} in the lake (tables: {', '.join(sorted(names))})")
        return name

    def stored(name: str) -> str:
        """The table a name's rows are kept in."""
        return ANSWER_CHANGES if name in derived else name

    def frame(name: str, version: int | None = None):
        if name in derived:
            return answer_changes.of_query_spark(store.read(ANSWER_CHANGES, version), derived[name])
        return store.read(name, version)

    def view(name: str, version: int) -> str:
        table = stored(name)
        if version > store.version(table):
            what = f"{name!r} (a view of {table!r})" if table != name else repr(name)
            raise CliError(f"table {what} has no version {version} (latest: {store.version(table)})")
        alias = f"{name}__v{version}"
        frame(name, version).createOrReplaceTempView(alias)
        return alias

    def pinned(match: re.Match) -> str:
        return view(known(match.group(1)), int(match.group(2)))

    def as_of(match: re.Match) -> str:
        name, kind, when = known(match.group(1)), match.group(2), match.group(3)
        if store.backend == "delta-spark" and name not in derived:
            location = store.path(name).replace("`", "``")
            return f"delta.`{location}` {kind.upper()} AS OF {when}"
        return view(name, _at(store, stored(name), kind, when))

    sql = _AS_OF.sub(as_of, _VERSIONED.sub(pinned, ctx.args.query))
    root = check_read_only(spark, sql)
    # a table becomes a temporary view when the statement names it (each costs a file listing);
    # SHOW lists them all
    for name in names:
        if root.startswith("Show") or re.search(rf"\b{re.escape(name)}\b", sql):
            frame(name).createOrReplaceTempView(name)
    try:
        result = spark.sql(sql).toArrow()
    except Exception as exc:  # Spark's analysis errors are long; keep their first line
        raise CliError(f"SQL failed: {one_line(exc)}") from None
    fmt = ctx.args.format
    if fmt == "table":
        print(result.to_pandas().to_string(index=False) if result.num_rows else "(no rows)")
    elif fmt == "json":
        print(json.dumps(result.to_pylist(), default=str, indent=1))
    else:
        sep = "\t" if fmt == "tsv" else ","
        print(sep.join(result.schema.names))
        for row in result.to_pylist():
            print(sep.join("" if v is None else str(v) for v in row.values()))


def add_commands(add) -> None:
    """Declare ``sql`` with ``add(name, func, help)`` (see :func:`pipelines.cli.build_parser`)."""
    p = add("sql", cmd_sql, "read-only Spark SQL over the lake's tables; name@vN reads version N of a table")
    p.add_argument("query", help=f"one statement ({ALLOWED})")
    p.add_argument("--format", choices=["table", "tsv", "csv", "json"], default="table",
                   help="output format (default table)")
