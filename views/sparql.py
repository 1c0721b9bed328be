"""SPARQL text to the :class:`~views.model.Query` model, or a one-line reason why not.

rdflib parses the text (:func:`parseQuery`) and translates it to SPARQL algebra
(:func:`translateQuery`); we walk the algebra with one method per node, the way rdflib's own
evaluator does, accepting only what an incremental BGP engine can maintain: SELECT (``*``, a list,
DISTINCT; REDUCED is treated as a plain SELECT) or ASK over one basic graph pattern (several groups
are joined into it) with FILTERs. Every other construct is refused by name with its line.

Choices worth knowing:

* FILTER scoping follows SPARQL: a FILTER inside a nested group sees only that group's variables;
  variables it mentions that are bound only outside become :class:`~views.model.Unbound`.
* Blank nodes in the pattern act as variables that are never projected: they are renamed to fresh
  variables ``_b0``, ``_b1``... (skipping names the query already uses), in source order.
* ``IN`` / ``NOT IN`` are accepted as the ``||`` of ``=`` / the ``&&`` of ``!=`` SPARQL defines them as.
* Triple patterns keep source order (rdflib's algebra reorders them), duplicates are dropped (a BGP
  is a set), and SELECT * lists the non-blank-node variables in order of first appearance.
* A projected variable that no triple pattern binds is refused (it would be unbound in every row).
* Aggregates (:mod:`views.aggregates`): GROUP BY variables and expressions (``(expr AS ?k)``,
  ``(expr)``), SELECT items that are keys, ``(AGG(?x) AS ?a)`` / ``(COUNT(*) AS ?n)`` or expressions
  over keys, aggregates and earlier ``AS`` variables (arithmetic, STR, LANG, DATATYPE:
  :mod:`views.expressions`), HAVING, and DISTINCT. They are read from a fresh parse tree (prefixes
  resolved): rdflib's algebra rewrites aggregates in place and, with HAVING, loses them. Aggregates
  that SELECT does not name get hidden columns ``_a0``, ``_a1``..., HAVING's arithmetic terms
  ``_e0``..., keys without AS ``_g0``... Still refused: aggregates of expressions and COUNT(DISTINCT *).
* C-SPARQL (:mod:`views.streams`): the ``REGISTER`` header and the stream windows are read and
  blanked before rdflib parses the rest; ``FROM`` clauses reach rdflib as SPARQL dataset clauses,
  and C-SPARQL's ``timestamp(?s, ?p, ?o)`` must name one of the query's triple patterns: it becomes
  that pattern's time variable (:attr:`~views.model.TriplePattern.t`), named by ``(timestamp(...)
  AS ?t)`` in SELECT or ``BIND(timestamp(...) AS ?t)``, else a fresh ``_t0``, ``_t1``... A timestamp
  of a triple outside the pattern would be an OPTIONAL lookup, which the BGP engine does not have.
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import partial
from typing import Any, Callable, Iterable, Iterator

from pyparsing import ParseBaseException
from rdflib.paths import AlternativePath, InvPath, MulPath, NegatedPath, Path, SequencePath
from rdflib.plugins.sparql.algebra import translatePName, translatePrologue, translateQuery, traverse
from rdflib.plugins.sparql.operators import simplify as simplify_expression
from rdflib.plugins.sparql.parser import parseQuery, parseUpdate
from rdflib.plugins.sparql import parser as rdflib_parser
from rdflib.plugins.sparql.parserutils import CompValue, Param
from rdflib.term import BNode, Identifier, Literal, URIRef, Variable

from schemas.tables import RESERVED_COLUMNS

from .aggregates import AggregateCall, Computed, Grouping
from .errors import QuerySyntaxError, UnsupportedQuery
from .expressions import Form, UnsupportedExpression, compile_expr
from .model import (COMPARISONS, FUNCTIONS, TIMESTAMP, And, Arith, Call, Compare, Const, Expr, Not, Or, Query,
                    TriplePattern, Unbound, Var, rebuild, walk)
from .paths import Alt, Link, Negated, Pattern, Repeat, Seq, inverse, translate
from .paths import Path as PathModel
from .source import Source, keyword
from .streams import TIMESTAMP_CALL, TIMESTAMP_IRI, Clauses, strip
from .terms import XSD, XSD_STRING, literal

_RDF_NIL = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#nil")
_TIMESTAMP = URIRef(TIMESTAMP_IRI)
_REGEX_FLAGS = set("smixq")
_AGGREGATE_RE = keyword(r"(COUNT|SUM|MIN|MAX|AVG|SAMPLE|GROUP_CONCAT)") + r"\s*\("
_UPDATE_RE = keyword(r"(INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY|WITH)")
_ARITHMETIC_NODES = {"AdditiveExpression", "MultiplicativeExpression", "UnaryMinus", "UnaryPlus"}
# Graph-pattern algebra nodes we refuse, with the phrase and the keyword that locates them.
_REFUSED_PATTERNS = {
    "LeftJoin": ("OPTIONAL is not supported", keyword("OPTIONAL")),
    "Union": ("UNION is not supported", keyword("UNION")),
    "Minus": ("MINUS is not supported", keyword("MINUS")),
    "Graph": ("GRAPH is not supported", keyword("GRAPH")),
    "ServiceGraphPattern": ("SERVICE is not supported", keyword("SERVICE")),
    "Extend": ("BIND is not supported", keyword("BIND")),
    "values": ("VALUES is not supported", keyword("VALUES")),
}
_SUBQUERY_NODES = {"Project", "Distinct", "Reduced", "Slice", "OrderBy", "AggregateJoin", "Group"}
_AGGREGATES = {"Aggregate_Count": "COUNT", "Aggregate_Sum": "SUM", "Aggregate_Avg": "AVG", "Aggregate_Min": "MIN",
               "Aggregate_Max": "MAX", "Aggregate_Sample": "SAMPLE", "Aggregate_GroupConcat": "GROUP_CONCAT"}


def _keep_inverse_iris_in_negated_sets() -> None:
    """rdflib's grammar drops the IRI of ``^iri`` inside a negated property set (``!^a``,
    ``!(a|^b)`` parse to an empty ``InversePath``); its algebra then cannot say which predicate is
    excluded. Name that IRI ``path`` in the grammar once, so :meth:`_Parser._path` can read it."""
    inverse_item = rdflib_parser.PathOneInPropertySet.exprs[-1]       # Comp("InversePath", "^" + iri)
    sequence = inverse_item.expr
    if not isinstance(sequence.exprs[-1], Param):
        sequence.exprs[-1] = Param("path", sequence.exprs[-1])
        sequence.streamline()


_keep_inverse_iris_in_negated_sets()


def render(term: Identifier) -> str:
    """The canonical N-Triples spelling (:mod:`views.terms`) of an rdflib IRI, blank node or
    literal; here rather than in :mod:`views.terms` so that only the parser imports rdflib."""
    if isinstance(term, URIRef):
        return f"<{term}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    if isinstance(term, Literal):
        return literal(str(term), term.language, str(term.datatype) if term.datatype else None)
    raise TypeError(f"not an RDF term: {term!r}")


def parse_query(text: str, source: str = "query") -> Query:
    """Parse ``text`` into the model, or raise :class:`QuerySyntaxError` / :class:`UnsupportedQuery`.

    ``source`` names the text in messages: ``q1.rq`` gives ``query q1.rq: OPTIONAL is not supported
    (line 5)``; the default gives ``query: ...``.
    """
    src = Source(text)
    label = "query" if source == "query" else f"query {source}"
    return _Parser(src, label, strip(src, label)).query()


class _Parser:
    """One parse: the source (C-SPARQL clauses already read and blanked), the message label, and
    the blank-node renaming being built."""

    def __init__(self, src: Source, label: str, clauses: Clauses) -> None:
        self.src = src
        self.label = label
        self.clauses = clauses
        self.select_nth = 0                 # which SELECT keyword a subquery starts at
        self.groups = 0                     # BGPs seen (a blank node may not span two)
        self.fresh_names: set[str] = set()  # variables standing for blank nodes and unnamed timestamps
        self.stamps: list[tuple[str, tuple[Expr, ...]]] = []   # (?t, timestamp() arguments) of each AS
        self.select_as: set[str] = set()    # the variables of SELECT's (expression AS ?v) items
        self.arithmetic = False             # reading an aggregate query's keys, SELECT or HAVING

    # -- errors ----------------------------------------------------------------------------------
    def refuse(self, what: str, pattern: str | None = None, nth: int = 0,
               in_parens: bool | None = None) -> UnsupportedQuery:
        where = self.src.where(pattern, nth, in_parens) if pattern else ""
        return UnsupportedQuery(f"{self.label}: {what}{where}")

    def invalid(self, what: str, pattern: str | None = None, nth: int = 0) -> QuerySyntaxError:
        where = self.src.where(pattern, nth) if pattern else ""
        return QuerySyntaxError(f"{self.label}: {what}{where}")

    # -- the query -------------------------------------------------------------------------------
    def query(self) -> Query:
        tree = self._parse()
        node = tree[1]
        self._check_form(node)
        grouped = node.name == "SelectQuery" and _has_aggregation(node)
        algebra = self._translate(tree).algebra
        streams, graphs = self.clauses.dataset([render(c.default) for c in algebra.datasetClause or []],
                                               self.src, self.label)
        form = {"AskQuery": "ask", "ConstructQuery": "construct"}.get(node.name, "select")
        self.select_nth = 1 if form == "select" else 0
        distinct = algebra.p.name == "Distinct" or form == "construct"     # a CONSTRUCT builds a graph
        project = algebra.p.p if algebra.p.name in ("Distinct", "Reduced") else algebra.p
        found: list[tuple[int, tuple]] = []
        self.select_as = {str(item["evar"]) for item in node.projection or [] if "evar" in item}
        filters = self.pattern(_below_aggregation(project.p, node) if grouped else project.p, found)
        if not found:
            raise self.refuse("a query without any triple pattern is not supported")
        taken = ({str(t) for _, triple in found for t in triple if isinstance(t, Variable)}
                 | {_projected(item) for item in node.projection or []}
                 | {e.name for f in filters for e in walk(f) if isinstance(e, (Var, Unbound))})
        patterns, path_filters = self._patterns(found, _source_order(node.where), taken)
        filters += path_filters
        patterns, filters = self._timestamps(patterns, filters, taken)
        variables = tuple(dict.fromkeys(v for t in patterns for v in t.variables()))
        template = self._template(algebra.template, variables) if form == "construct" else ()
        grouping = None
        if form == "construct":
            projection = tuple(dict.fromkeys(v for t in template for v in t.variables()))
        elif grouped:
            grouping, projection = self._grouping(variables, taken, distinct)
            distinct = False        # the grouping's: the bag stays one of solutions
        else:
            projection = () if form == "ask" else self._projection(node, variables)
        self._check_names([*variables, *_grouping_names(grouping)] if grouping else variables, filters)
        return Query(text=self.src.text, form=form, patterns=patterns, filters=tuple(filters),
                     projection=projection, distinct=distinct, variables=variables, streams=streams,
                     graphs=graphs, register_name=self.clauses.register_name,
                     register_kind=self.clauses.register_kind, template=template, grouping=grouping)

    def _template(self, triples: list[tuple], variables: tuple[str, ...]) -> tuple[TriplePattern, ...]:
        """A CONSTRUCT template, in source order: constants and variables the WHERE binds (a blank
        node would need a fresh node per solution and window, which lakegraph does not mint)."""
        out = []
        for triple in triples:
            nodes = []
            for term in triple:
                if isinstance(term, BNode):
                    raise self.refuse("blank nodes in a CONSTRUCT template are not supported", keyword("CONSTRUCT"))
                if isinstance(term, Variable):
                    if str(term) not in variables:
                        raise self.refuse(f"the CONSTRUCT template uses ?{term}, which no triple pattern binds",
                                          rf"[?$]{re.escape(str(term))}(?!\w)")
                    nodes.append(Var(str(term)))
                else:
                    nodes.append(render(term))
            out.append(TriplePattern(*nodes))
        return tuple(sorted(set(out), key=lambda t: t.text()))

    def _parse(self) -> Any:
        try:
            return parseQuery(self.src.rewritten)
        except ParseBaseException as exc:
            try:
                parseUpdate(self.src.rewritten)
            except Exception:
                raise self._syntax_error(exc) from None
            raise self.refuse("SPARQL Update is not supported", _UPDATE_RE) from None
        except Exception as exc:            # rdflib's parse actions raise plain errors on odd input
            raise QuerySyntaxError(f"{self.label}: cannot parse: {_one_line(str(exc))}") from None

    def _syntax_error(self, exc: ParseBaseException) -> QuerySyntaxError:
        pos = self.src.original(exc.loc)
        line, col = self.src.line_col(pos)
        rest = self.src.text[pos:].split()
        found = f"found {rest[0][:30]!r}" if rest else "found end of text"
        return QuerySyntaxError(f"{self.label}: syntax error at line {line}, column {col}: "
                                f"{_one_line(exc.msg)}, {found}")

    def _translate(self, tree: Any) -> Any:
        try:
            return translateQuery(tree)
        except Exception as exc:
            prefix = re.match(r"Unknown namespace prefix : (\S*)", str(exc))
            if prefix:
                name = prefix.group(1)
                raise self.invalid(f"undeclared prefix '{name}:'",
                                   rf"(?<![\w?$]){re.escape(name)}:") from None
            raise QuerySyntaxError(f"{self.label}: {_one_line(str(exc))}") from None

    def _check_form(self, node: CompValue) -> None:
        """Refuse query forms and solution modifiers (read from the parse tree, which still says
        what the user wrote)."""
        if node.name == "DescribeQuery":
            raise self.refuse("DESCRIBE is not supported", keyword("DESCRIBE"))
        grouped = _has_aggregation(node)
        if grouped and node.name != "SelectQuery":
            raise self.refuse("aggregates and GROUP BY are supported in SELECT queries only",
                              _AGGREGATE_RE if node.having else keyword(r"GROUP\s+BY"))
        for item in node.projection or []:
            if "expr" in item and not grouped:     # a grouped SELECT's items are read by _grouping
                if any(n.name == "Function" for n in _comp_values(item["expr"])):
                    continue                # maybe a timestamp(): the algebra's Extend decides
                raise self.refuse(f"SELECT expressions (... AS ?{item['evar']}) are not supported",
                                  keyword("AS"))
        for key, what, word in (("orderby", "ORDER BY", r"ORDER\s+BY"), ("valuesClause", "VALUES", "VALUES")):
            if getattr(node, key):
                raise self.refuse(f"{what} is not supported", keyword(word))
        if node.limitoffset:
            word = "LIMIT" if node.limitoffset.limit is not None else "OFFSET"
            raise self.refuse(f"{word} is not supported", keyword(word))

    def _projection(self, node: CompValue, variables: tuple[str, ...]) -> tuple[str, ...]:
        items = node.projection
        if not items:
            return tuple(v for v in variables if v not in self.fresh_names)
        names = tuple(dict.fromkeys(_projected(item) for item in items))
        for name in names:
            if name not in variables:
                raise self.refuse(f"projecting ?{name}, which no triple pattern binds, is not supported",
                                  rf"[?$]{re.escape(name)}(?!\w)")
        return names

    # -- aggregates ------------------------------------------------------------------------------
    def _grouping(self, variables: tuple[str, ...], taken: set[str],
                  distinct: bool) -> tuple[Grouping, tuple[str, ...]]:
        """GROUP BY, SELECT's items and HAVING, from a fresh parse tree with prefixes resolved (the
        one the algebra was built from has had its aggregates rewritten in place).

        SELECT's items are read in order, as SPARQL's chain of Extends: each may use the keys, any
        aggregate, and the ``AS`` variables before it. An expression over more than one aggregate
        (or over none) becomes a computed column, its aggregates hidden ones (``_a0``...), and so
        does each arithmetic term of HAVING (``_e0``...), which then compiles like any FILTER."""
        tree = parseQuery(self.src.rewritten)
        node = traverse(tree[1], visitPost=partial(translatePName, prologue=translatePrologue(tree[0], None)))
        if not node.projection:
            raise self.invalid("SELECT * cannot be used with GROUP BY or aggregates", keyword("SELECT"))
        used = taken | set(variables) | {_projected(item) for item in node.projection}
        self.arithmetic = True
        group_by, keys = self._group_keys(node, variables, _fresh_names(used, "_g"))
        calls: list[AggregateCall] = []
        computed: list[Computed] = []
        hidden = _fresh_names(used | set(group_by), "_a")

        def column_of(expr: Any) -> Variable | None:
            """An aggregate as the column of the same aggregate (a hidden one if there is none yet)."""
            if not (isinstance(expr, CompValue) and expr.name in _AGGREGATES):
                return None
            call = self._call(expr, "", variables)
            same = next((c for c in calls if replace(c, name="") == call), None)
            if same is None:
                same = replace(call, name=next(hidden))
                calls.append(same)
            return Variable(same.name)

        known, projection = set(group_by), []
        for item in node.projection:
            if "var" in item:
                name = str(item["var"])
                if name not in known:
                    raise self.invalid(f"?{name} is projected but neither grouped nor aggregated",
                                       rf"[?$]{re.escape(name)}(?!\w)")
            else:
                name, expr = str(item["evar"]), simplify_expression(item["expr"])
                if name in known or name in variables:
                    raise self.invalid(f"?{name} is bound twice (AS names a variable already in scope)",
                                       rf"[?$]{re.escape(name)}(?!\w)")
                if isinstance(expr, CompValue) and expr.name in _AGGREGATES:
                    calls.append(self._call(expr, name, variables))
                else:
                    expr = traverse(expr, visitPost=column_of)
                    scope = known | {c.name for c in calls}
                    for free in _tree_variables(expr):
                        if str(free) not in scope:
                            raise self.invalid(f"?{free} is used in a SELECT expression but is neither grouped "
                                               "nor aggregated", rf"[?$]{re.escape(str(free))}(?!\w)")
                    computed.append(Computed(name, self._form(self.expr(expr, scope), keyword("AS"))))
                known.add(name)
            projection.append(name)
        raw = [simplify_expression(c) for c in (node.having.condition if node.having else [])]
        for free in (str(v) for c in raw for v in _tree_variables(c)):
            if free in known - set(group_by):
                raise self.refuse(f"HAVING uses ?{free}, which SELECT names with AS: SPARQL evaluates HAVING "
                                  "before SELECT's expressions, so there it is unbound; repeat the aggregate "
                                  "instead, e.g. HAVING (COUNT(?x) > 1)", keyword("HAVING"))
        having = [traverse(c, visitPost=column_of) for c in raw]
        scope = set(group_by) | {c.name for c in calls}
        terms = _fresh_names(used | known | scope, "_e")

        def hoist(expr: Expr) -> Expr:
            """HAVING's arithmetic terms as computed columns (FILTER's SQL has no arithmetic)."""
            if isinstance(expr, Arith):
                computed.append(Computed(next(terms), self._form(expr, keyword("HAVING"))))
                return Var(computed[-1].name)
            return rebuild(expr, hoist)

        conditions = tuple(hoist(self.expr(h, scope)) for h in having)
        self.arithmetic = False
        projection = tuple(dict.fromkeys(projection))
        # DISTINCT merges rows only when SELECT drops a key: each group's row is distinct otherwise
        merge = distinct and not set(group_by) <= set(projection)
        return Grouping(tuple(group_by), tuple(calls), conditions, keys, tuple(computed), merge), projection

    def _group_keys(self, node: CompValue, variables: tuple[str, ...],
                    hidden: Iterator[str]) -> tuple[list[str], tuple[Computed, ...]]:
        """GROUP BY's key columns and the expressions among them: ``?x`` and ``(?x)`` are the
        variable; ``(expr AS ?k)`` is named ``?k``; an expression without AS a hidden ``_gN`` (which
        nothing can read, as SPARQL has it)."""
        group_by, keys = [], []
        for condition in node.groupby.condition if node.groupby else []:
            var = None
            if isinstance(condition, CompValue) and condition.name == "GroupAs":
                var, condition = condition["var"] if "var" in condition else None, simplify_expression(condition.expr)
            if isinstance(condition, Variable) and var is None:
                group_by.append(self._bound(str(condition), variables))
                continue
            name = str(var) if var is not None else next(hidden)
            if name in variables or name in group_by:
                raise self.invalid(f"?{name} is bound twice (AS names a variable already in scope)",
                                   rf"[?$]{re.escape(name)}(?!\w)")
            expr = self.expr(condition, set(variables))
            for free in walk(expr):
                if isinstance(free, Unbound):
                    self._bound(free.name, variables)
            keys.append(Computed(name, self._form(expr, keyword(r"GROUP\s+BY"))))
            group_by.append(name)
        return group_by, tuple(keys)

    def _form(self, expr: Expr, where: str) -> Form:
        """An expression over aggregate rows compiled for Python (:mod:`views.expressions`)."""
        try:
            return compile_expr(expr)
        except UnsupportedExpression as exc:
            raise self.refuse(f"{exc} is not supported in GROUP BY and SELECT expressions of an aggregate "
                              "query (variables, constants, + - * /, STR, LANG and DATATYPE are)", where) from None

    def _call(self, node: CompValue, name: str, variables: tuple[str, ...]) -> AggregateCall:
        """One aggregate of the parse tree, of a variable the pattern binds (or ``COUNT(*)``)."""
        function, distinct = _AGGREGATES[node.name], bool(node.distinct)
        arg = simplify_expression(node.vars)
        if arg == "*":
            if distinct:
                raise self.refuse("COUNT(DISTINCT *) is not supported", _AGGREGATE_RE)
            return AggregateCall(name, function, None)
        if not isinstance(arg, Variable):
            raise self.refuse(f"{function} of an expression is not supported (aggregate a variable)",
                              _AGGREGATE_RE)
        separator = " " if node.separator is None else str(node.separator)
        return AggregateCall(name, function, self._bound(str(arg), variables), distinct, separator)

    def _bound(self, name: str, variables: tuple[str, ...]) -> str:
        if name not in variables:
            raise self.refuse(f"?{name} is grouped or aggregated but no triple pattern binds it",
                              rf"[?$]{re.escape(name)}(?!\w)")
        return name

    def _check_names(self, variables: Iterable[str], filters: list[Expr]) -> None:
        """Variables become column names next to lakegraph's metadata columns."""
        used = set(variables) | {v.name for f in filters for v in walk(f) if isinstance(v, (Var, Unbound))}
        for name in sorted(used):
            if any(name.lower().startswith(col) for col in RESERVED_COLUMNS):
                raise self.refuse(f"variable ?{name} is not allowed (names starting with "
                                  f"{', '.join(sorted(RESERVED_COLUMNS))} are reserved)",
                                  rf"[?$]{re.escape(name)}(?!\w)")
        seen: dict[str, str] = {}
        for name in sorted(used):
            other = seen.setdefault(name.lower(), name)
            if other != name:
                raise self.refuse(f"variables ?{other} and ?{name} differ only in case, and Delta column "
                                  "names are case-insensitive: rename one", rf"[?$]{re.escape(name)}(?!\w)")

    # -- graph patterns: one method per algebra node --------------------------------------------
    def pattern(self, node: CompValue, found: list[tuple[int, tuple]]) -> list[Expr]:
        """Collect the triples under ``node`` into ``found`` (tagged with their BGP) and return its
        FILTER expressions."""
        method: Callable[..., list[Expr]] | None = getattr(self, f"_node_{node.name}", None)
        if method is not None:
            return method(node, found)
        if node.name in _REFUSED_PATTERNS:
            raise self.refuse(*_REFUSED_PATTERNS[node.name])
        if node.name == "ToMultiSet":
            if node.p.name == "values":
                raise self.refuse(*_REFUSED_PATTERNS["values"])
            raise self.refuse("subqueries are not supported", keyword("SELECT"), self.select_nth)
        if node.name in _SUBQUERY_NODES:
            raise self.refuse("subqueries are not supported", keyword("SELECT"), self.select_nth)
        raise self.refuse(f"{node.name} is not supported")

    def _node_BGP(self, node: CompValue, found: list[tuple[int, tuple]]) -> list[Expr]:
        self.groups += 1
        for triple in node.triples:
            found.append((self.groups, tuple(triple)))
        return []

    def _node_Extend(self, node: CompValue, found: list[tuple[int, tuple]]) -> list[Expr]:
        """``BIND(timestamp(...) AS ?t)`` or ``SELECT (timestamp(...) AS ?t)``: names a pattern's
        time variable; any other expression is refused."""
        expr = node.expr
        if not (isinstance(expr, CompValue) and expr.name == "Function" and expr.iri == _TIMESTAMP):
            if str(node.var) in self.select_as:
                raise self.refuse(f"SELECT expressions (... AS ?{node.var}) other than timestamp() are not "
                                  "supported", keyword("AS"))
            raise self.refuse(*_REFUSED_PATTERNS["Extend"])
        inner = self.pattern(node.p, found)
        scope = {str(t) for _, triple in found for t in triple if isinstance(t, Variable)}
        self.stamps.append((str(node.var), self._expr_Function(expr, scope).args))
        return inner

    def _node_Join(self, node: CompValue, found: list[tuple[int, tuple]]) -> list[Expr]:
        return self.pattern(node.p1, found) + self.pattern(node.p2, found)

    def _node_Filter(self, node: CompValue, found: list[tuple[int, tuple]]) -> list[Expr]:
        start, binds = len(found), len(self.stamps)
        inner = self.pattern(node.p, found)
        scope = ({str(t) for _, triple in found[start:] for t in triple if isinstance(t, Variable)}
                 | {name for name, _ in self.stamps[binds:]})      # a group's BINDs are in its scope
        return inner + [self.expr(node.expr, scope)]

    # -- expressions: one method per algebra node -----------------------------------------------
    def expr(self, node: Any, scope: set[str]) -> Expr:
        """The model of an algebra expression; ``scope`` is the variables the FILTER can see."""
        if isinstance(node, Variable):
            return Var(str(node)) if str(node) in scope else Unbound(str(node))
        if isinstance(node, (URIRef, Literal)):
            return Const(render(node))
        name = node.name
        if name in _ARITHMETIC_NODES and not self.arithmetic:
            raise self.refuse("arithmetic is not supported", _ARITHMETIC_RE, in_parens=True)
        method: Callable[..., Expr] | None = getattr(self, f"_expr_{name}", None)
        if method is not None:
            return method(node, scope)
        if name in ("Builtin_EXISTS", "Builtin_NOTEXISTS"):
            word = "NOT EXISTS" if name == "Builtin_NOTEXISTS" else "EXISTS"
            raise self.refuse(f"FILTER {word} is not supported", keyword(word.replace(" ", r"\s+")))
        if name.startswith("Aggregate_"):
            raise self.refuse("aggregates are allowed only in SELECT and HAVING", _AGGREGATE_RE)
        if name.startswith("Builtin_"):
            builtin = name[len("Builtin_"):].upper()
            if builtin == "ISURI":
                builtin = "ISIRI"
            if builtin in FUNCTIONS:
                return Call(builtin, tuple(self.expr(node[k], scope) for k in _ARGS if k in node))
            raise self.refuse(f"function {builtin} is not supported", keyword(builtin) + r"\s*\(")
        raise self.refuse(f"expression {name} is not supported")

    def _expr_ConditionalOrExpression(self, node: CompValue, scope: set[str]) -> Expr:
        return Or(tuple(self.expr(a, scope) for a in [node.expr, *node.other]))

    def _expr_ConditionalAndExpression(self, node: CompValue, scope: set[str]) -> Expr:
        return And(tuple(self.expr(a, scope) for a in [node.expr, *node.other]))

    def _expr_AdditiveExpression(self, node: CompValue, scope: set[str]) -> Expr:
        """``a + b - c`` (and ``*``, ``/``), left-associative."""
        result = self.expr(node.expr, scope)
        for op, other in zip(node.op, node.other):
            result = Arith(op, (result, self.expr(other, scope)))
        return result

    _expr_MultiplicativeExpression = _expr_AdditiveExpression

    def _expr_UnaryMinus(self, node: CompValue, scope: set[str]) -> Expr:
        return Arith("-", (self.expr(node.expr, scope),))

    def _expr_UnaryPlus(self, node: CompValue, scope: set[str]) -> Expr:
        return Arith("+", (self.expr(node.expr, scope),))

    def _expr_UnaryNot(self, node: CompValue, scope: set[str]) -> Expr:
        return Not(self.expr(node.expr, scope))

    def _expr_RelationalExpression(self, node: CompValue, scope: set[str]) -> Expr:
        left = self.expr(node.expr, scope)
        if node.op in COMPARISONS:
            return Compare(node.op, left, self.expr(node.other, scope))
        # IN / NOT IN: ``x IN (a, b)`` is ``x = a || x = b``; ``x NOT IN (a, b)`` is ``x != a && x != b``
        items = [] if node.other == _RDF_NIL else [self.expr(o, scope) for o in node.other]
        if node.op == "IN":
            return Or(tuple(Compare("=", left, i) for i in items)) if items else Const(_FALSE)
        return And(tuple(Compare("!=", left, i) for i in items)) if items else Const(_TRUE)

    def _expr_Function(self, node: CompValue, scope: set[str]) -> Expr:
        """C-SPARQL's ``timestamp(s, p, o)``, of a triple spelled with variables and constants; no
        other function IRI."""
        if node.iri != _TIMESTAMP:
            raise self.refuse(f"function <{node.iri}> is not supported", r"[>\w]\s*\(")
        args = node.expr or []
        if len(args) != 3 or not all(isinstance(a, (Variable, URIRef, Literal)) for a in args):
            raise self.refuse("timestamp() takes a triple: three variables or constants", TIMESTAMP_CALL,
                              in_parens=True)
        return Call(TIMESTAMP, tuple(self.expr(a, scope) for a in args))

    def _expr_Builtin_REGEX(self, node: CompValue, scope: set[str]) -> Expr:
        """REGEX with a constant pattern and flags: a pattern read from data could be invalid and
        fail the whole Spark job, so it must be checkable (and compiled) once, up front."""
        args = [self.expr(node.text, scope)]
        for key in ("pattern", "flags"):
            if key not in node:
                continue
            value = node[key]
            if not (isinstance(value, Literal) and value.language is None
                    and (value.datatype is None or str(value.datatype) == XSD_STRING)):
                raise self.refuse(f"REGEX with a non-constant {key} is not supported", keyword("REGEX"))
            if key == "flags" and not set(str(value)) <= _REGEX_FLAGS:
                raise self.refuse(f"REGEX flags {str(value)!r} are not supported (use s, m, i, x, q)",
                                  keyword("REGEX"))
            args.append(Const(render(value)))
        return Call("REGEX", tuple(args))

    # -- patterns to the model -------------------------------------------------------------------
    def _timestamps(self, patterns: tuple[TriplePattern, ...], filters: list[Expr],
                    taken: set[str]) -> tuple[tuple[TriplePattern, ...], list[Expr]]:
        """Each ``timestamp(s, p, o)`` made the time variable of the pattern ``s p o``: the one its
        ``AS`` names, else a fresh ``_tN``; FILTER calls become that variable."""
        by_triple = {(t.s, t.p, t.o): t for t in patterns}
        variables = {v for t in patterns for v in t.variables()}
        named: dict[tuple, str] = {}

        def triple_of(args: tuple[Expr, ...]) -> tuple:
            key = tuple(Var(a.name) if isinstance(a, (Var, Unbound)) else a.term for a in args)
            if key not in by_triple:
                text = " ".join(f"?{n.name}" if isinstance(n, Var) else n for n in key)
                raise self.refuse(f"timestamp({text}) must name one of the query's triple patterns",
                                  TIMESTAMP_CALL, in_parens=True)
            return key

        for name, args in self.stamps:
            key = triple_of(args)
            if name in variables:
                raise self.refuse(f"?{name} is bound twice (AS may not name a variable of the pattern)",
                                  rf"[?$]{re.escape(name)}(?!\w)")
            if named.setdefault(key, name) != name:
                raise self.refuse(f"timestamp() of one triple pattern is named ?{named[key]} and ?{name}",
                                  keyword("AS"))
        calls = [e for f in filters for e in walk(f) if isinstance(e, Call) and e.name == TIMESTAMP]
        fresh = _fresh_names(taken | set(named.values()), "_t")
        for call in calls:
            key = triple_of(call.args)
            if key not in named:
                named[key] = next(fresh)
                self.fresh_names.add(named[key])
        if not named:
            return patterns, filters
        patterns = tuple(replace(t, t=Var(named[(t.s, t.p, t.o)])) if (t.s, t.p, t.o) in named else t
                         for t in patterns)

        def stamp(expr: Expr) -> Expr:
            if isinstance(expr, Call) and expr.name == TIMESTAMP:
                return Var(named[triple_of(expr.args)])
            return rebuild(expr, stamp)

        return patterns, [stamp(f) for f in filters]

    def _patterns(self, found: list[tuple[int, tuple]], order: dict[tuple, int],
                  taken: set[str]) -> tuple[tuple[Pattern, ...], list[Expr]]:
        """Distinct patterns in source order, blank nodes renamed to fresh variables (none of the
        ``taken`` names the query uses anywhere), property paths translated
        (:func:`views.paths.translate`), with the FILTERs their negated property sets add."""
        groups: dict[BNode, int] = {}
        for group, triple in found:
            for term in triple:
                if isinstance(term, BNode) and groups.setdefault(term, group) != group:
                    raise self.invalid(f"blank node _:{term} is used in two groups",
                                       rf"_:{re.escape(str(term))}(?![\w.-])", 1)
        triples = sorted((t for _, t in found), key=lambda t: order.get(t, len(order)))
        names = _fresh_names(taken)
        fresh: dict[BNode, str] = {}

        def node(term: Identifier) -> Var | str:
            if isinstance(term, Variable):
                return Var(str(term))
            if isinstance(term, BNode):
                if term not in fresh:
                    fresh[term] = next(names)
                return Var(fresh[term])
            return render(term)

        patterns: list[Pattern] = []
        filters: list[Expr] = []
        in_paths = _fresh_names(taken, "_p")
        for s, p, o in triples:
            if isinstance(p, Path):
                more, where = translate(node(s), self._path(p), node(o), in_paths)
                patterns += more
                filters += where
                self.fresh_names |= {v for t in more for v in t.variables() if v.startswith("_p")} - taken
            else:
                patterns.append(TriplePattern(node(s), node(p), node(o)))
        self.fresh_names |= set(fresh.values())
        return tuple(dict.fromkeys(patterns)), filters

    def _path(self, path: Path | URIRef) -> PathModel:
        """An rdflib property path as :mod:`views.paths` models it."""
        if isinstance(path, URIRef):
            return Link(render(path))
        if isinstance(path, InvPath):
            return inverse(self._path(path.arg))
        if isinstance(path, (SequencePath, AlternativePath)):
            parts = tuple(self._path(a) for a in path.args)
            kind = Seq if isinstance(path, SequencePath) else Alt
            return kind(tuple(q for part in parts for q in (part.parts if isinstance(part, kind) else (part,))))
        if isinstance(path, MulPath):
            return Repeat(self._path(path.path), *_REPEATS[path.mod])
        if isinstance(path, NegatedPath):
            forward = tuple(render(a) for a in path.args if isinstance(a, URIRef))
            backward = tuple(render(a.path) for a in path.args if isinstance(a, CompValue))
            return Negated(forward or None, backward or None)
        raise TypeError(f"not an rdflib property path: {path!r}")


_TRUE = f'"true"^^<{XSD}boolean>'
_FALSE = f'"false"^^<{XSD}boolean>'
_ARGS = ("arg", "arg1", "arg2")
# Where arithmetic starts: ``*``, ``/``, a sign that does not start a number, or a variable and a sign.
_ARITHMETIC_RE = r"[*/]|(?<=[\s()\"'])[-+](?![\d.])|[?$]\w+\s*[-+]"
_REPEATS = {"*": (0, None), "+": (1, None), "?": (0, 1)}


def _projected(item: CompValue) -> str:
    """The variable a SELECT item projects: ``?x``, or the ``?t`` of ``(expression AS ?t)``."""
    return str(item["var"] if "var" in item else item["evar"])


def _has_aggregation(node: CompValue) -> bool:
    """Whether a query groups: GROUP BY, HAVING, or an aggregate in SELECT (read from the parse tree)."""
    items = [item["expr"] for item in node.projection or [] if "expr" in item]
    return bool(node.groupby or node.having
                or any(n.name.startswith("Aggregate_") for n in _comp_values(items)))


def _below_aggregation(node: CompValue, tree: CompValue) -> CompValue:
    """The WHERE pattern under the algebra rdflib builds for an aggregate query
    (Extend* / Filter (HAVING) / AggregateJoin / Group / one Extend per parenthesised GROUP BY
    condition of the parse ``tree``, ``(expr AS ?k)`` or ``(expr)`` / the pattern)."""
    while node.name != "AggregateJoin":
        node = node.p
    node = node.p.p
    named = [c for c in (tree.groupby.condition if tree.groupby else [])
             if isinstance(c, CompValue) and c.name == "GroupAs"]
    for _ in named:
        node = node.p
    return node


def _grouping_names(grouping: Grouping) -> list[str]:
    """The columns an aggregation adds to the pattern's variables (keys, aggregates, computed)."""
    return [*grouping.group_by, *(c.name for c in grouping.calls), *(c.name for c in grouping.computed)]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fresh_names(taken: set[str], prefix: str = "_b") -> Iterator[str]:
    """``_b0``, ``_b1``, ... (or another ``prefix``) skipping names the query uses."""
    i = 0
    while True:
        name = f"{prefix}{i}"
        if name not in taken:
            yield name
        i += 1


def _comp_values(value: Any) -> Iterator[CompValue]:
    """Every CompValue inside a parse-tree value."""
    return (node for node in _tree_nodes(value) if isinstance(node, CompValue))


def _tree_variables(value: Any) -> Iterator[Variable]:
    """Every variable inside a parse-tree value."""
    return (node for node in _tree_nodes(value) if isinstance(node, Variable))


def _tree_nodes(value: Any) -> Iterator[Any]:
    """Every node inside a parse-tree value, ``value`` first."""
    yield value
    children = value.values() if isinstance(value, CompValue) else value if isinstance(value, (list, tuple)) else ()
    for child in children:
        yield from _tree_nodes(child)


def _source_order(where: CompValue) -> dict[tuple, int]:
    """Each triple's first position in the (prefix-resolved) parse tree: rdflib's algebra sorts
    triples, the parse tree keeps them as written."""
    order: dict[tuple, int] = {}
    for block in _comp_values(where):
        if block.name == "TriplesBlock":
            for flat in block.triples:
                for i in range(0, len(flat) - 2, 3):
                    order.setdefault(tuple(flat[i:i + 3]), len(order))
    return order
