"""The compiled plan the Spark engine executes, its JSON form, and a readable explanation.

A query becomes:

* **views**, one per distinct canonical triple pattern plus the FILTERs that only need that
  pattern's variables (pushed down so rows are pruned before being stored). Variables are renamed
  ``?v0, ?v1...`` in order of first appearance, so equal patterns of different queries (up to
  renaming) with the same pushed filter share one view, identified by a hash of that form;
* **components**, the connected-variable decomposition (see :mod:`views.decompose`), each a join of
  its patterns' views with a delta join order per pattern and the FILTERs that need several of its
  patterns;
* a **query filter** for FILTERs spanning components (or with no variable bound by the pattern),
  applied to the product of the components before projection.

An aggregate query (:mod:`views.aggregates`) is planned the same way with the group and
aggregated variables as the projection; its :class:`~views.aggregates.Aggregation` turns that bag
into answer rows.

A FILTER is split at its top-level ``&&`` first, so each conjunct goes as low as it can; a conjunct
is pushed into *every* pattern holding all its variables (each copy prunes its own view).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from typing import Collection, Sequence

from .aggregates import Aggregation, aggregation_plan
from .decompose import Part, decompose, delta_orders, overlap_edges, query_class, star_decomposition
from .conditions import Condition, compile_filter, condition
from .errors import UnsupportedQuery
from .expressions import Form, form_from_json
from .model import (And, Expr, Query, TriplePattern, Unbound, Var, conjuncts, expr_text, expr_variables,
                    map_vars, validate_name)
from .path_views import ALL, PathDef, path_def
from .paths import Pattern, PathPattern
from .source import Source
from .streams import TIMESTAMP_CALL, StreamWindow


class _Filtered:
    """A plan part with a FILTER kept as SQL and as its in-process form (:mod:`views.conditions`)."""

    filter_sql: str | None
    filter_form: Form | None

    @property
    def filter(self) -> Condition | None:
        return condition(self.filter_sql, self.filter_form)


@dataclass(frozen=True)
class ViewDef(_Filtered):
    """One distinct canonical triple pattern (+ pushed atomic filters); shared across queries."""

    id: str                                   # "v_" + first 16 hex of sha256(canonical)
    canonical: str                            # e.g. '?v0 <http://x/knows> ?v1 FILTER(...)'
    s: str | None                             # constant at the subject, None for a variable
    p: str | None
    o: str | None
    columns: tuple[str, ...]                  # ("v0", "v1", ...), distinct variables in order
    positions: tuple[tuple[str, str], ...]    # (position, column) for every variable position
    filter_sql: str | None                    # pushed filters over the view columns
    filter_form: Form | None = None           # the same, decided in process (views.conditions)


@dataclass(frozen=True)
class PatternRef:
    view: str                                 # ViewDef.id
    bind: tuple[tuple[str, str], ...]         # (view column, query variable)


@dataclass(frozen=True)
class Component(_Filtered):
    """One subquery of the connected-variable decomposition."""

    kind: str                                 # 'ground' | 'simple var-centric star' | 'var-connected'
    variables: tuple[str, ...]                # empty for ground
    patterns: tuple[PatternRef, ...]
    filter_sql: str | None                    # filters over several of its patterns, on query variables
    stars: tuple[tuple[str, tuple[int, ...]], ...]   # (centre, indexes into patterns)
    delta_orders: tuple[tuple[int, ...], ...]        # delta_orders[i] starts with i
    filter_form: Form | None = None


@dataclass(frozen=True)
class QueryPlan(_Filtered):
    name: str
    text: str
    form: str                                 # 'select' | 'ask'
    query_class: str
    projection: tuple[str, ...]
    distinct: bool
    views: tuple[ViewDef, ...]
    components: tuple[Component, ...]
    filter_sql: str | None                    # filters spanning components, on query variables
    # The query's C-SPARQL windows and background graphs (empty in plans stored before them).
    streams: tuple[StreamWindow, ...] = ()
    graphs: tuple[str, ...] = ()
    lateness_ms: int = 0                      # allowed lateness of the time and [NOW] windows
    # a CONSTRUCT's template: (s, p, o) as N-Triples terms or ?variables
    template: tuple[tuple[str, str, str], ...] = ()
    output_stream: str | None = None          # REGISTER STREAM: where each window's triples go (bare IRI)
    aggregation: Aggregation | None = None    # GROUP BY / aggregates: projection is then the answer columns
    paths: tuple[PathDef, ...] = ()           # path views, joined by components like views
    filter_form: Form | None = None

    @property
    def bag_columns(self) -> tuple[str, ...]:
        """The columns the delta rules project the BGP's solutions onto: the aggregation's inputs,
        else the answer columns."""
        return self.aggregation.inputs if self.aggregation else self.projection

    @property
    def stamps(self) -> tuple[str, ...]:
        """The query variables bound to a ``timestamp()`` (a view's ``t`` position), in plan order."""
        views = {v.id: v for v in self.views}
        return tuple(dict.fromkeys(dict(ref.bind)[col] for c in self.components for ref in c.patterns
                                   if ref.view in views for pos, col in views[ref.view].positions if pos == "t"))

    @property
    def reads_times(self) -> bool:
        """Whether the window operator must give its messages event times: the query reads
        ``timestamp()``, or keeps max-min times of its paths."""
        return bool(self.stamps) or any(p.stamped for p in self.paths)

    @property
    def windowed(self) -> bool:
        """Whether the query reads streams' windows or background graphs rather than the whole graph."""
        return bool(self.streams or self.graphs)

    def to_json(self) -> str:
        """The plan as JSON (stored in the queries table)."""
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "QueryPlan":
        """The plan :meth:`to_json` wrote (lists back to tuples)."""
        data = json.loads(text)
        views = tuple(ViewDef(**{**v, "columns": tuple(v["columns"]), "positions": _pairs(v["positions"]),
                                 "filter_form": _form(v.get("filter_form"))}) for v in data["views"])
        components = tuple(Component(
            kind=c["kind"], variables=tuple(c["variables"]),
            patterns=tuple(PatternRef(r["view"], _pairs(r["bind"])) for r in c["patterns"]),
            filter_sql=c["filter_sql"], filter_form=_form(c.get("filter_form")),
            stars=tuple((centre, tuple(ix)) for centre, ix in c["stars"]),
            delta_orders=tuple(tuple(o) for o in c["delta_orders"])) for c in data["components"])
        return cls(**{**data, "projection": tuple(data["projection"]), "views": views,
                      "components": components,
                      "streams": tuple(StreamWindow(**w) for w in data.get("streams", ())),
                      "graphs": tuple(data.get("graphs", ())),
                      "template": tuple(tuple(t) for t in data.get("template", ())),
                      "aggregation": Aggregation.from_dict(data.get("aggregation")),
                      "paths": tuple(PathDef.from_dict(p) for p in data.get("paths", ())),
                      "filter_form": _form(data.get("filter_form"))})


def _form(data: list | None) -> Form | None:
    """A stored filter form (None in plans stored before forms were: the SQL alone then)."""
    return form_from_json(data) if data else None


def _pairs(items: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((a, b) for a, b in items)


# -- compiling ------------------------------------------------------------------------------------
#: Path semantics a query may ask for: SPARQL's (walks may repeat nodes) or simple paths.
PATH_SEMANTICS = ("walks", "simple")


def compile_query(query: Query, name: str, lateness_ms: int = 0, output_stream: str | None = None,
                  paths: str = "walks", shared_paths: Collection[str] = ()) -> QueryPlan:
    """The plan of ``query`` registered as ``name``; ``lateness_ms`` is the allowed lateness of its
    time and ``[NOW]`` windows; ``output_stream`` (a bare IRI) the stream a ``REGISTER STREAM``
    query appends to (default ``urn:lakegraph:stream:<name>``); ``paths`` the semantics of its
    path views (:data:`PATH_SEMANTICS`); ``shared_paths`` the ids of the path views the lake keeps
    for other queries, which this one shares where it can (:func:`~views.path_views.path_def`)."""
    validate_name(name)
    if paths not in PATH_SEMANTICS:
        raise UnsupportedQuery(f"query {name}: unknown path semantics {paths!r} (use walks or simple)")
    if paths == "simple" and not any(isinstance(p, PathPattern) for p in query.patterns):
        raise UnsupportedQuery(f"query {name}: simple paths apply to property paths kept as path views "
                               "(*, +, ?, |), and the query has none")
    _check_dataset(query, name, lateness_ms)
    output = _output_stream(query, name, output_stream)
    if any(t.t is not None for t in query.patterns) and not query.streams:
        where = Source(query.text).where(TIMESTAMP_CALL, in_parens=True)
        raise UnsupportedQuery(f"query {name}: timestamp() needs a FROM STREAM window: the event time it "
                               f"gives is that of the triple in the current window{where}")
    patterns = query.patterns
    parts = decompose(patterns)
    pushed: dict[int, list[Expr]] = {i: [] for i in range(len(patterns))}
    local: dict[int, list[Expr]] = {k: [] for k in range(len(parts))}
    spanning: list[Expr] = []
    for conjunct in dict.fromkeys(c for f in query.filters for c in conjuncts(f)):
        bound = set(expr_variables(conjunct)) & set(query.variables)
        owners = [i for i, p in enumerate(patterns)
                  if bound and bound <= set(p.variables()) and isinstance(p, TriplePattern)]
        homes = [k for k, part in enumerate(parts) if bound and bound <= set(part.variables)]
        for i in owners:
            pushed[i].append(conjunct)
        if not owners:
            (local[homes[0]] if homes else spanning).append(conjunct)
    # a windowed query's views hold its own graph (its windows and background graphs), so they are
    # its own: their ids carry the query's name
    scope = name if query.streams or query.graphs else None
    edge_views: list[ViewDef] = []

    def edge_view(predicate: str, timed: bool) -> str:
        """The view a path's edges of ``predicate`` (or every triple) come from, with times if ``timed``."""
        middle = Var("p") if predicate == ALL else predicate
        view, _ = _view(TriplePattern(Var("s"), middle, Var("o"), Var("t") if timed else None), [], scope)
        edge_views.append(view)
        return view.id

    triple_views = {i: _view(p, pushed[i], scope) for i, p in enumerate(patterns) if isinstance(p, TriplePattern)}

    def bound(variable: str) -> tuple[str, str] | None:
        """The first triple pattern's view (and column) binding ``variable`` at its subject or object."""
        for i, (view, bind) in sorted(triple_views.items()):
            column = next((c for c, v in bind if v == variable), None)
            if column is not None and any(c == column for pos, c in view.positions if pos in ("s", "o")):
                return view.id, column
        return None

    views = [path_def(p, scope, edge_view, bound, paths == "simple", bool(query.streams), shared_paths)
             if isinstance(p, PathPattern) else triple_views[i]
             for i, p in enumerate(patterns)]
    components = tuple(_component(part, patterns, views, local[k]) for k, part in enumerate(parts))
    all_views = [v for v, _ in views if isinstance(v, ViewDef)] + edge_views
    return QueryPlan(
        name=name, text=query.text, form=query.form, query_class=query_class(parts),
        projection=query.projection, distinct=query.distinct,
        views=tuple({v.id: v for v in all_views}.values()), components=components,
        **_filter(spanning, set(query.variables)), streams=query.streams, graphs=query.graphs,
        lateness_ms=lateness_ms, output_stream=output,
        aggregation=aggregation_plan(query.grouping, scope is not None) if query.grouping else None,
        paths=tuple({p.id: p for p, _ in views if isinstance(p, PathDef)}.values()),
        template=tuple(tuple(f"?{n.name}" if isinstance(n, Var) else n for _, n in t.nodes()) for t in query.template))


def construct(template: Sequence[Sequence[str]], bindings: Sequence[dict[str, str]]) -> list[tuple[str, str, str]]:
    """The distinct triples a CONSTRUCT template makes from ``bindings`` (variable name to N-Triples
    term, None when unbound), sorted; as in SPARQL, an instance that is not a valid triple (an
    unbound position, a subject that is a literal, a predicate that is not an IRI) is left out."""
    out = set()
    for binding in bindings:
        for pattern in template:
            s, p, o = (binding[n[1:]] if n.startswith("?") else n for n in pattern)
            if s is not None and p is not None and o is not None and not s.startswith('"') and p.startswith("<"):
                out.add((s, p, o))
    return sorted(out)


def _output_stream(query: Query, name: str, given: str | None) -> str | None:
    """The stream a ``REGISTER STREAM`` query writes, checked: it needs windows to close, and it
    may not read its own output (each window would feed the next forever)."""
    if query.register_kind != "stream":
        if given is not None:
            raise UnsupportedQuery(f"query {name}: an output stream needs a REGISTER STREAM query")
        return None
    if not query.streams:
        raise UnsupportedQuery(f"query {name}: REGISTER STREAM needs FROM STREAM windows: its output is "
                               "the triples each window constructs")
    output = given or f"urn:lakegraph:stream:{name}"
    if f"<{output}>" in {w.stream for w in query.streams} | set(query.graphs):
        raise UnsupportedQuery(f"query {name}: it reads its own output stream <{output}>")
    return output


def _check_dataset(query: Query, name: str, lateness_ms: int) -> None:
    """Refuse the dataset clauses the window operator cannot give a predictable meaning."""
    src = Source(query.text)
    both = set(w.stream for w in query.streams) & set(query.graphs)
    if both:
        raise UnsupportedQuery(f"query {name}: {sorted(both)[0]} is both a FROM STREAM and a FROM graph: "
                               "name it once")
    counted = [w for w in query.streams if w.kind == "count"]
    if len(counted) > 1:
        raise UnsupportedQuery(f"query {name}: count windows on {len(counted)} streams: a query may have "
                               f"one count-windowed stream (their windows would not end together)"
                               f"{src.where(r'(?i)TRIPLES', 1)}")
    if lateness_ms < 0:
        raise UnsupportedQuery(f"query {name}: the lateness must not be negative")
    if lateness_ms and not any(w.kind in ("time", "now") for w in query.streams):
        raise UnsupportedQuery(f"query {name}: a lateness applies to time and [NOW] windows, and this "
                               "query has none")


def _filter(exprs: list[Expr], columns: set[str]) -> dict[str, str | Form | None]:
    """The plan fields of the conjunction of ``exprs``: its SQL and in-process form (None when
    there is nothing to filter)."""
    compiled = compile_filter(exprs[0] if len(exprs) == 1 else And(tuple(exprs)), columns) if exprs else None
    return {"filter_sql": compiled.sql if compiled else None, "filter_form": compiled.form if compiled else None}


def _view(pattern: TriplePattern, exprs: list[Expr],
          scope: str | None) -> tuple[ViewDef, tuple[tuple[str, str], ...]]:
    """The view of one pattern with its pushed filters over the whole graph (``scope`` None) or
    a windowed query's own graph, and how its columns bind query variables."""
    rename = {v: f"v{k}" for k, v in enumerate(pattern.variables())}

    def local(var: Var) -> Expr:
        return Var(rename[var.name]) if var.name in rename else Unbound(var.name)

    renamed = sorted({expr_text(e): e for e in (map_vars(x, local) for x in exprs)}.items())
    canonical = TriplePattern(*(Var(rename[n.name]) if isinstance(n, Var) else n
                                for _, n in pattern.nodes())).text()
    if renamed:
        canonical += " FILTER(" + " && ".join(text for text, _ in renamed) + ")"
    columns = tuple(rename.values())
    view = ViewDef(
        id="v_" + hashlib.sha256((canonical + (f" @{scope}" if scope else "")).encode("utf-8")).hexdigest()[:16],
        canonical=canonical,
        s=None if isinstance(pattern.s, Var) else pattern.s,
        p=None if isinstance(pattern.p, Var) else pattern.p,
        o=None if isinstance(pattern.o, Var) else pattern.o,
        columns=columns,
        positions=tuple((pos, rename[n.name]) for pos, n in pattern.nodes() if isinstance(n, Var)),
        **_filter([e for _, e in renamed], set(columns)))
    return view, tuple((col, var) for var, col in rename.items())


def _component(part: Part, patterns: Sequence[Pattern],
               views: Sequence[tuple[ViewDef | PathDef, tuple[tuple[str, str], ...]]], exprs: list[Expr]) -> Component:
    mine = [patterns[i] for i in part.patterns]
    return Component(
        kind=part.kind, variables=part.variables,
        patterns=tuple(PatternRef(views[i][0].id, views[i][1]) for i in part.patterns),
        **_filter(exprs, set(part.variables)),
        stars=star_decomposition(mine), delta_orders=delta_orders(mine))


# -- explaining -----------------------------------------------------------------------------------
def explain(plan: QueryPlan) -> str:
    """A readable account of the plan: decomposition, views, path views, state tables and delta plan."""
    views: dict[str, ViewDef | PathDef] = {v.id: v for v in plan.views} | {p.id: p for p in plan.paths}
    head = "ASK" if plan.form == "ask" else \
        "SELECT " + ("DISTINCT " if plan.distinct else "") + " ".join(f"?{v}" for v in plan.projection)
    lines = [f"query {plan.name}: {head}", f"class: {plan.query_class}"]
    if plan.streams or plan.graphs:
        lines.append("windows:")
        lines += [f"  {w.describe()}" for w in plan.streams] + [f"  FROM {g}" for g in plan.graphs]
        if plan.lateness_ms:
            lines.append(f"  allowed lateness: {plan.lateness_ms}ms")
        if plan.streams:
            lines += ["  a slide: each triple with a message entering or leaving a stream's extent (at a batch's",
                      "    first window also each triple its background messages touch) becomes one insert or",
                      "    delete for the views below: the cost follows those messages, not the window"]
        else:
            lines.append("  no stream: the background graphs' messages feed the views below every batch")
    lines.append(f"connected-variable decomposition: {len(plan.components)} subquer"
                 f"{'y' if len(plan.components) == 1 else 'ies'}")
    for k, comp in enumerate(plan.components):
        lines += _explain_component(k, comp, views)
    lines.append(f"views ({len(plan.views)}):")
    lines += [f"  {v.id}  {v.canonical}" for v in plan.views]
    if plan.paths:
        lines.append(f"path views ({len(plan.paths)}): each a set of (start, end) pairs, joined like a view")
        lines += [line for p in plan.paths for line in p.explain()]
    lines.append("tables:")
    if len(plan.components) > 1:
        lines.append("  partial embeddings: " + ", ".join(
            f"pe_{plan.name}_{k} (C{k})" for k in range(len(plan.components))))
    else:
        lines.append("  partial embeddings: none (a single subquery: its embeddings are the answers)")
    if plan.aggregation:
        lines += ["  " + line for line in plan.aggregation.explain(f"pe_{plan.name}_bag", f"pe_{plan.name}_sums")]
        if plan.aggregation.having_sql:
            lines.append(f"    HAVING (on the answer rows): {_abridged(plan.aggregation.having_sql)}")
    if plan.distinct or plan.form == "ask":
        lines.append(f"  projected bag: pe_{plan.name}_bag ({'DISTINCT' if plan.distinct else 'ASK'}: "
                     "answers are the bindings with positive count)")
    lines.append(f"  gold: gold_{plan.name} (answers); answer changes per batch in answer_changes "
                 f"(_query = '{plan.name}'; gold_{plan.name}_changes in lakegraph sql)")
    if plan.windowed:
        buffer = f"w_{plan.name}_buffer (messages future windows need)"
        lines.append(f"  window state: window_state (query = '{plan.name}': its views, partial embeddings, "
                     + ("" if plan.graphs else f"{buffer}, ") + f"w_{plan.name}_progress), "
                     + (f"{buffer}, " if plan.graphs else "") + f"w_{plan.name}_background"
                     + (f"; window log: window_log (query = '{plan.name}')" if plan.streams else ""))
    if len(plan.components) > 1:
        lines.append("answers: " + " × ".join(f"C{k}" for k in range(len(plan.components)))
                     + "; Δ(C0 × ... × Cn) = Σ_i C0' × ... × ΔCi × ... × Cn (' = after the batch)")
    if plan.filter_sql:
        lines.append(f"query filter (after the product): {_abridged(plan.filter_sql)}")
    return "\n".join(lines)


def _explain_component(k: int, comp: Component, views: dict[str, ViewDef | PathDef]) -> list[str]:
    variables = " ".join(f"?{v}" for v in comp.variables)
    lines = [f"  C{k}: {comp.kind}" + (f" {{{variables}}}" if variables else "")]
    for i, ref in enumerate(comp.patterns):
        lines.append(f"    t{i}  {_pattern_text(ref, views[ref.view])}    [{ref.view}]")
    if comp.filter_sql:
        lines.append(f"    filter: {_abridged(comp.filter_sql)}")
    if comp.stars:
        lines.append("    star decomposition: " + "; ".join(
            f"?{centre}: " + ", ".join(f"t{i}" for i in ix) for centre, ix in comp.stars))
        edges = overlap_edges(comp.stars)
        lines.append("    overlapping-subqueries graph: " + (", ".join(
            f"?{comp.stars[a][0]} -- ?{comp.stars[b][0]}" for a, b in edges) or "no edges"))
    lines.append("    delta plan:")
    for i, order in enumerate(comp.delta_orders):
        joins = " ⋈ ".join([f"Δ({comp.patterns[i].view})"] + [comp.patterns[j].view for j in order[1:]])
        lines.append(f"      t{i}: {joins}  in order " + ", ".join(f"t{j}" for j in order))
    return lines


def _abridged(sql: str, limit: int = 160) -> str:
    """Long filter SQL cut for reading (the plan's JSON has all of it)."""
    return sql if len(sql) <= limit else f"{sql[:limit]}... ({len(sql)} characters of SQL)"


def _pattern_text(ref: PatternRef, view: ViewDef | PathDef) -> str:
    """The query's triple (or path) pattern, rebuilt from its view and bindings."""
    var_of = dict(ref.bind)
    if isinstance(view, PathDef):
        return re.sub(r"\?(v\d+)\b", lambda m: f"?{var_of[m.group(1)]}", view.canonical)
    at = {pos: f"?{var_of[col]}" for pos, col in view.positions}
    text = " ".join(at.get(pos) or str(const) for pos, const in (("s", view.s), ("p", view.p), ("o", view.o)))
    return text + (f" TIMESTAMP {at['t']}" if "t" in at else "")
