"""FILTER expressions compiled to Spark SQL boolean expressions (plain text; no Spark import).

Columns hold canonical N-Triples terms (NULL when unbound). SPARQL's errors become SQL NULL, and SQL's
three-valued logic then matches SPARQL's exactly: ``error || true`` is true, ``error && false`` is
false, ``!error`` is an error, and a FILTER keeps a row only when its value is TRUE. So every
expression below yields NULL wherever SPARQL raises a type error.

Semantics (SPARQL 1.1, section 17.3 operator mapping; pyoxigraph agrees except where noted):

* ``=`` / ``!=``: numbers compare by value across xsd:integer (and its derived types), decimal,
  float and double with XPath promotion (decimal/integer < float < double; ``1 = 1.0`` is true, NaN
  equals nothing); booleans by value; xsd:dateTime as instants when both have a timezone offset,
  as local times when neither has one, and never equal when only one has. Otherwise RDF term
  equality (canonical spellings make that string equality), except that two different literals
  are an *error* when either is of a datatype we do not interpret (SPARQL's RDFterm-equal), and
  simply unequal when both are of known kinds (``"a" = 1`` is false, as pyoxigraph has it).
* ``< <= > >=``: numbers (NaN: false), strings (simple literals / xsd:string, by code point),
  booleans (pyoxigraph: an error) and dateTimes (with an offset on one side only, XML Schema's
  partial order: known beyond 14 hours, an error within); anything else is an error. Language-
  tagged literals are not ordered (pyoxigraph orders two of the same language), nor are IRIs, nor
  two identical terms of other kinds (pyoxigraph: equal).
* Literals of a known datatype with an invalid lexical form (``"x"^^xsd:integer``) count as
  unknown. Integer subtypes' value ranges are not checked (ingest rejects out-of-range values).
  xsd:dateTime is interpreted for four-digit years and hours 00-23 only; other valid values behave
  as unknown-datatype literals.
* Effective boolean value: booleans, numbers (non-zero, not NaN), strings (non-empty); an invalid
  boolean or number is false (pyoxigraph: an error); anything else an error.
* REGEX uses Java regular expressions (Spark's RLIKE, a substring search like XPath's ``matches``);
  flag ``i`` is Unicode case-insensitive, ``s m x`` map to Java's, ``q`` quotes the pattern.

Values are never read with a plain CAST: Spark 4 runs with ANSI mode, where a bad cast fails the
job, so numbers and timestamps go through ``try_cast`` after a lexical check.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .model import FUNCTIONS, And, Call, Compare, Const, Expr, Not, Or, Unbound, Var
from .terms import RDF_LANGSTRING, XSD, XSD_BOOLEAN, XSD_STRING, split_literal

TRUE, FALSE = "TRUE", "FALSE"
NULL_BOOL = "CAST(NULL AS BOOLEAN)"
NULL_STR = "CAST(NULL AS STRING)"

# -- term classes as regexes, valid both in Java (Spark RLIKE) and Python (constants) ----------------
INTEGER_TYPES = ("integer", "nonPositiveInteger", "negativeInteger", "long", "int", "short", "byte",
                 "nonNegativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte",
                 "positiveInteger")
_X = XSD.replace(".", r"\.")
_INT = r"[+-]?[0-9]+"
_DEC = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)"
_DBL = r"([+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN)"
_TYPED = r'"\^\^<' + _X
_RANK_RE = {1: rf'^"{_DBL}{_TYPED}float>$', 2: rf'^"{_DBL}{_TYPED}double>$'}   # promotion ranks
NUMERIC_RE = (rf'^"({_INT}{_TYPED}({"|".join(INTEGER_TYPES)})|{_DEC}{_TYPED}decimal'
              rf'|{_DBL}{_TYPED}(float|double))>$')
BOOLEAN_RE = rf'^"(true|false|1|0){_TYPED}boolean>$'
_TZ = r"(Z|[+-][0-9]{2}:[0-9]{2})"
DATETIME_RE = (r'^"[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-9]{2}:[0-9]{2}(\.[0-9]+)?'
               rf'{_TZ}?{_TYPED}dateTime>$')
DATETIME_TZ_RE = rf'{_TZ}"\^\^<'          # on a valid dateTime: has an offset
EBV_TYPED_RE = rf'{_TYPED}({"|".join(INTEGER_TYPES)}|decimal|float|double|boolean)>$'
_LANG_RE = r'(?s)^".*"@[A-Za-z0-9-]+$'
BOOL_TRUE = (f'"true"^^<{XSD_BOOLEAN}>', f'"1"^^<{XSD_BOOLEAN}>')
BOOL_FALSE = f'"false"^^<{XSD_BOOLEAN}>'

_TYPED_RE = {"num": NUMERIC_RE, "bool": BOOLEAN_RE, "dt": DATETIME_RE}
_KNOWN_TYPED_RE = "|".join(_TYPED_RE.values())
LITERAL_KINDS = frozenset({"str", "lang", "num", "bool", "dt", "other"})
_ALL_KINDS = LITERAL_KINDS | {"iri", "bnode"}


def filter_sql(expr: Expr, columns: set[str]) -> str:
    """``expr`` as a Spark SQL boolean over backquoted ``columns``; other variables are unbound."""
    return _Compiler(frozenset(columns)).boolean(expr)


def sql_string(value: str) -> str:
    """A Spark SQL string literal (default, non-raw string escaping)."""
    body = value.replace("\\", "\\\\").replace("'", "\\'")
    body = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", body)
    return f"'{body}'"


def column(name: str) -> str:
    """A backquoted column name."""
    return "`" + name.replace("`", "``") + "`"


# -- SQL building with constant folding --------------------------------------------------------------
def _and(*conds: str) -> str:
    if FALSE in conds:
        return FALSE
    kept = [c for c in conds if c != TRUE]
    return TRUE if not kept else kept[0] if len(kept) == 1 else "(" + " AND ".join(kept) + ")"


def _or(*conds: str) -> str:
    if TRUE in conds:
        return TRUE
    kept = [c for c in conds if c != FALSE]
    return FALSE if not kept else kept[0] if len(kept) == 1 else "(" + " OR ".join(kept) + ")"


def _not(cond: str) -> str:
    return {TRUE: FALSE, FALSE: TRUE}.get(cond) or f"(NOT {cond})"


def _case(branches: list[tuple[str, str]], otherwise: str) -> str:
    """A CASE with branches whose condition folded to FALSE dropped and a TRUE one ending it."""
    kept: list[tuple[str, str]] = []
    for cond, value in branches:
        if cond == FALSE:
            continue
        if cond == TRUE:
            otherwise = value
            break
        kept.append((cond, value))
    if not kept:
        return otherwise
    body = " ".join(f"WHEN {c} THEN {v}" for c, v in kept)
    tail = "" if otherwise in (NULL_BOOL, NULL_STR) else f" ELSE {otherwise}"
    return f"(CASE {body}{tail} END)"


# -- operands: term-valued sub-expressions --------------------------------------------------------
def const_kind(term: str) -> str:
    """The kind of a constant term: iri, bnode, num, bool, dt, str, lang or other."""
    if term.startswith("<"):
        return "iri"
    if term.startswith("_:"):
        return "bnode"
    for kind, pattern in _TYPED_RE.items():
        if re.search(pattern, term):
            return kind
    if term.endswith('"'):
        return "str"
    return "other" if term.endswith(">") else "lang"


@dataclass(frozen=True)
class Operand:
    """A term-valued expression in SQL and what is known of it at compile time.

    ``sql`` yields the canonical term (NULL when unbound or an error); ``kinds`` are the kinds its
    value can have (empty: always an error); ``lexical`` is SQL for its unescaped lexical form when
    that is cheaper than parsing ``sql`` (results of LANG and STR); ``const`` is the term itself
    when it is a constant.
    """

    sql: str
    kinds: frozenset[str]
    lexical: str | None = None
    const: str | None = None


def _is(op: Operand, kinds: frozenset[str] | str) -> str:
    """SQL: is the value of one of ``kinds``? (TRUE for a NULL whose static kinds all qualify:
    callers that must keep the error use :func:`_keep_null`.)"""
    wanted = frozenset([kinds]) if isinstance(kinds, str) else kinds
    if op.const is not None:
        return TRUE if const_kind(op.const) in wanted else FALSE
    if not op.kinds & wanted:
        return FALSE
    if op.kinds <= wanted:
        return TRUE
    t = op.sql
    if wanted == LITERAL_KINDS:
        return f"startswith({t}, '\"')"
    kinds = wanted & op.kinds
    tests = [f"startswith({t}, '<')" if "iri" in kinds else FALSE,
             f"startswith({t}, '_:')" if "bnode" in kinds else FALSE,
             f"endswith({t}, '\"')" if "str" in kinds else FALSE,
             f"({t} RLIKE {sql_string(_LANG_RE)})" if "lang" in kinds else FALSE]
    typed = [_TYPED_RE[k] for k in ("num", "bool", "dt") if k in kinds]
    if typed:        # one regex for all typed kinds asked for
        tests.append(f"({t} RLIKE {sql_string('|'.join(typed))})")
    return _or(*tests)


def _is_other(op: Operand) -> str:
    """SQL, for a literal: is it of a datatype we do not interpret (or an invalid lexical form)?"""
    if op.const is not None or "other" not in op.kinds:
        return TRUE if op.const is not None and const_kind(op.const) == "other" else FALSE
    return _and(f"endswith({op.sql}, '>')", _not(f"({op.sql} RLIKE {sql_string(_KNOWN_TYPED_RE)})"))


def _keep_null(op: Operand, cond: str) -> str:
    """``cond``, but NULL when the operand is NULL (a folded condition would hide the error)."""
    if op.const is not None or cond not in (TRUE, FALSE):
        return cond
    return f"(CASE WHEN {op.sql} IS NOT NULL THEN {cond} END)"


def _is_null(op: Operand) -> str:
    return FALSE if op.const is not None else f"({op.sql} IS NULL)"


def _content(op: Operand) -> str:
    """SQL: the escaped text between a literal's quotes."""
    t = op.sql
    if op.kinds <= {"str"}:
        return f"substr({t}, 2, length({t}) - 2)"
    return f"substr({t}, 2, length({t}) - instr(reverse({t}), '\"') - 1)"


def _lexical(op: Operand) -> str:
    """SQL: the unescaped lexical form of a string literal (plain or language-tagged). The
    canonical escapes are JSON's, so a JSON string reader undoes them."""
    if op.lexical is not None:
        return op.lexical
    if op.const is not None:
        return sql_string(split_literal(op.const)[0])
    return f"get_json_object(concat('[\"', {_content(op)}, '\"]'), '$[0]')"


def _plain(op: Operand) -> str:
    """SQL: the lexical form of a number, boolean or dateTime literal (never escaped)."""
    if op.const is not None:
        return sql_string(split_literal(op.const)[0])
    return f"substring_index(substr({op.sql}, 2), '\"', 1)"


def _rank_is(op: Operand, rank: int) -> str:
    """SQL: is a number (known to be valid) a float (rank 1) or a double (rank 2)?"""
    if op.const is not None:
        return TRUE if re.search(_RANK_RE[rank], op.const) else FALSE
    return f"endswith({op.sql}, {sql_string('#float>' if rank == 1 else '#double>')})"


def _double(op: Operand, as_float: str) -> str:
    """SQL DOUBLE of a valid number, read at FLOAT precision when ``as_float`` holds (a float, or
    a decimal compared with a float: XPath promotes it to float, not double)."""
    return _case([(as_float, f"CAST(try_cast({_plain(op)} AS FLOAT) AS DOUBLE)")],
                 f"try_cast({_plain(op)} AS DOUBLE)")


def _float_cmp(op: str, x: str, y: str, nan: tuple[bool | None, bool | None]) -> str:
    """``x op y`` where NaN compares false (Spark orders NaN above every number and equal to
    itself). ``nan`` says, per side, whether a constant is NaN (None: not a constant). Both
    sides are valid numbers here, so the only NULL is the one NaN is turned into."""
    if True in nan:
        return FALSE
    x, y = (v if known is False else f"nanvl({v}, CAST(NULL AS DOUBLE))" for v, known in zip((x, y), nan))
    return f"coalesce({x} {op} {y}, FALSE)"


# -- the compiler ----------------------------------------------------------------------------------
class _Compiler:
    """Compiles one FILTER over a given set of bound columns."""

    def __init__(self, columns: frozenset[str]) -> None:
        self.columns = columns

    # booleans: one method per node kind
    def boolean(self, expr: Expr) -> str:
        """SQL boolean for the effective boolean value of ``expr`` (NULL: error)."""
        if isinstance(expr, Not):
            return _not(self.boolean(expr.arg))
        if isinstance(expr, And):
            return _and(*(self.boolean(a) for a in expr.args))
        if isinstance(expr, Or):
            return _or(*(self.boolean(a) for a in expr.args))
        if isinstance(expr, Compare):
            return self.compare(expr.op, self.operand(expr.left), self.operand(expr.right))
        if isinstance(expr, Call) and _returns_boolean(expr.name):
            return getattr(self, f"call_{expr.name.lower()}")(*expr.args)
        return self.ebv(self.operand(expr))

    def ebv(self, op: Operand) -> str:
        """Effective boolean value of a term."""
        if not op.kinds:
            return NULL_BOOL
        number = _double(op, _rank_is(op, 1))
        string = f"({_lexical(op)} <> '')" if op.lexical else f"({op.sql} <> '\"\"')"
        if "other" not in op.kinds:
            typed = FALSE               # a valid number or boolean is handled above
        elif op.const is not None:
            typed = TRUE if re.search(EBV_TYPED_RE, op.const) else FALSE
        else:
            typed = f"({op.sql} RLIKE {sql_string(EBV_TYPED_RE)})"
        return _case([
            (_is(op, "bool"), self.bool_value(op)),
            (_is(op, "num"), _and(f"(NOT isnan({number}))", f"({number} <> 0)")),
            (_is(op, "str"), string),
            (typed, FALSE),              # an invalid number or boolean is false
        ], NULL_BOOL)

    @staticmethod
    def bool_value(op: Operand) -> str:
        if op.const is not None:
            return TRUE if op.const in BOOL_TRUE else FALSE
        return f"({op.sql} IN ({sql_string(BOOL_TRUE[0])}, {sql_string(BOOL_TRUE[1])}))"

    # terms: one method per node kind
    def operand(self, expr: Expr) -> Operand:
        """The term value of ``expr``."""
        if isinstance(expr, Var) and expr.name in self.columns:
            return Operand(column(expr.name), _ALL_KINDS)
        if isinstance(expr, (Var, Unbound)):
            return Operand(NULL_STR, frozenset())
        if isinstance(expr, Const):
            return Operand(sql_string(expr.term), frozenset([const_kind(expr.term)]), const=expr.term)
        if isinstance(expr, Call) and not _returns_boolean(expr.name):
            return getattr(self, f"call_{expr.name.lower()}")(self.operand(expr.args[0]))
        value = self.boolean(expr)          # a boolean used as a term: xsd:boolean true/false
        if value in (TRUE, FALSE):
            term = BOOL_TRUE[0] if value == TRUE else BOOL_FALSE
            return Operand(sql_string(term), frozenset({"bool"}), const=term)
        return Operand(f"(CASE {value} WHEN TRUE THEN {sql_string(BOOL_TRUE[0])} "
                       f"WHEN FALSE THEN {sql_string(BOOL_FALSE)} END)", frozenset({"bool"}))

    # comparisons
    def compare(self, op: str, a: Operand, b: Operand) -> str:
        if not a.kinds or not b.kinds:
            return NULL_BOOL
        if op == "!=":
            return _not(self.equal(a, b))
        if op == "=":
            return self.equal(a, b)
        return self.order(op, a, b)

    def equal(self, a: Operand, b: Operand) -> str:
        """SPARQL ``=``: value equality for numbers, booleans and dateTimes, else term equality,
        an error for two different literals one of which is of an uninterpreted datatype."""
        for x, y in ((a, b), (b, a)):
            if x.const is not None and const_kind(x.const) in ("iri", "bnode"):
                return f"({y.sql} = {x.sql})"       # an IRI equals exactly itself, even as a value
        if a.kinds | b.kinds <= {"str"}:
            return f"({_lexical(a)} = {_lexical(b)})"   # two strings (e.g. LANG(?x) = "en")
        return _case([
            (_or(_is_null(a), _is_null(b)), NULL_BOOL),
            (_and(_is(a, "num"), _is(b, "num")), self.numeric("=", a, b)),
            (_and(_is(a, "bool"), _is(b, "bool")), f"({self.bool_value(a)} = {self.bool_value(b)})"),
            (_and(_is(a, "dt"), _is(b, "dt")), self.datetime("=", a, b)),
            (TRUE if a.const is not None and a.const == b.const else f"({a.sql} = {b.sql})", TRUE),
            (_not(_and(_is(a, LITERAL_KINDS), _is(b, LITERAL_KINDS))), FALSE),
            (_or(_is_other(a), _is_other(b)), NULL_BOOL),
        ], FALSE)

    def order(self, op: str, a: Operand, b: Operand) -> str:
        """SPARQL ``< <= > >=`` on numbers, strings, booleans and dateTimes; else an error."""
        return _case([
            (_and(_is(a, "num"), _is(b, "num")), self.numeric(op, a, b)),
            (_and(_is(a, "str"), _is(b, "str")), f"({_lexical(a)} {op} {_lexical(b)})"),
            (_and(_is(a, "bool"), _is(b, "bool")), f"({self.bool_value(a)} {op} {self.bool_value(b)})"),
            (_and(_is(a, "dt"), _is(b, "dt")), self.datetime(op, a, b)),
        ], NULL_BOOL)

    @staticmethod
    def numeric(op: str, a: Operand, b: Operand) -> str:
        """Numbers compared in the type both promote to: double, else float, else decimal. Floats
        are compared as doubles holding float values, which orders them exactly as floats."""
        def nan(x: Operand) -> bool | None:
            return None if x.const is None else split_literal(x.const)[0] == "NaN"

        def as_float(x: Operand, other: Operand) -> str:
            return _or(_rank_is(x, 1), _and(_rank_is(other, 1), _not(_rank_is(x, 2))))

        floating = _or(*(_rank_is(x, r) for x in (a, b) for r in (1, 2)))
        doubles = _float_cmp(op, _double(a, as_float(a, b)), _double(b, as_float(b, a)), (nan(a), nan(b)))
        decimals = f"(try_cast({_plain(a)} AS DECIMAL(38,18)) {op} try_cast({_plain(b)} AS DECIMAL(38,18)))"
        return _case([(floating, doubles)], decimals)

    @staticmethod
    def datetime(op: str, a: Operand, b: Operand) -> str:
        """dateTimes compared as instants when both have an offset, as local times when neither
        has. With one offset, XML Schema's partial order applies: the local time may be at any
        offset within ±14:00, so the order is known only beyond 14 hours, else an error; such
        values are never equal."""
        def has_tz(x: Operand) -> str:
            if x.const is not None:
                return TRUE if re.search(DATETIME_TZ_RE, x.const) else FALSE
            return f"({x.sql} RLIKE {sql_string(DATETIME_TZ_RE)})"

        def instant(x: Operand) -> str:     # a local time is read as UTC
            zone = _case([(has_tz(x), "''")], "'Z'")
            return f"try_cast(concat({_plain(x)}, {zone}) AS TIMESTAMP)"

        ia, ib = instant(a), instant(b)
        ta, tb = has_tz(a), has_tz(b)
        same = ((TRUE if ta == tb else FALSE) if ta in (TRUE, FALSE) and tb in (TRUE, FALSE)
                else ta if tb == TRUE else tb if ta == TRUE else f"({ta} = {tb})")
        if op == "=":
            return _and(same, f"({ia} = {ib})")
        mixed = (f"((CASE WHEN {ia} + INTERVAL 14 HOURS < {ib} THEN -1 "
                 f"WHEN {ia} - INTERVAL 14 HOURS > {ib} THEN 1 END) {op} 0)")
        return _case([(same, f"({ia} {op} {ib})")], mixed)

    # built-in functions returning booleans
    def call_bound(self, arg: Expr) -> str:
        return f"({column(arg.name)} IS NOT NULL)" if isinstance(arg, Var) and arg.name in self.columns else FALSE

    def call_isiri(self, arg: Expr) -> str:
        return self._test(arg, frozenset({"iri"}))

    def call_isblank(self, arg: Expr) -> str:
        return self._test(arg, frozenset({"bnode"}))

    def call_isliteral(self, arg: Expr) -> str:
        return self._test(arg, LITERAL_KINDS)

    def call_isnumeric(self, arg: Expr) -> str:
        return self._test(arg, frozenset({"num"}))

    def _test(self, arg: Expr, kinds: frozenset[str]) -> str:
        op = self.operand(arg)
        return _keep_null(op, _is(op, kinds)) if op.kinds else NULL_BOOL

    def call_sameterm(self, left: Expr, right: Expr) -> str:
        a, b = self.operand(left), self.operand(right)
        if not a.kinds or not b.kinds:
            return NULL_BOOL
        if a.const is not None and b.const is not None:
            return TRUE if a.const == b.const else FALSE
        return f"({a.sql} = {b.sql})"

    def call_regex(self, text: Expr, pattern: Expr, flags: Expr | None = None) -> str:
        op = self.operand(text)
        if not op.kinds:
            return NULL_BOOL
        regex = java_regex(_text(pattern), _text(flags) if flags is not None else "")
        return _case([(_is(op, frozenset({"str", "lang"})), f"({_lexical(op)} RLIKE {sql_string(regex)})")],
                     NULL_BOOL)

    def call_langmatches(self, tag: Expr, lang_range: Expr) -> str:
        a, b = self.operand(tag), self.operand(lang_range)
        if not a.kinds or not b.kinds:
            return NULL_BOOL
        la = f"lower({_lexical(a)})"
        if b.const is not None:
            wanted = split_literal(b.const)[0].lower()
            matches = (f"({la} <> '')" if wanted == "*" else
                       f"({la} = {sql_string(wanted)} OR startswith({la}, {sql_string(wanted + '-')}))")
        else:
            lb = f"lower({_lexical(b)})"
            matches = (f"(CASE WHEN {lb} = '*' THEN {la} <> '' "
                       f"ELSE ({la} = {lb} OR startswith({la}, concat({lb}, '-'))) END)")
        return _case([(_and(_is(a, "str"), _is(b, "str")), matches)], NULL_BOOL)

    # built-in functions returning terms
    def call_str(self, op: Operand) -> Operand:
        iri_text = f"substr({op.sql}, 2, length({op.sql}) - 2)"
        iri, lit = _is(op, "iri"), _is(op, LITERAL_KINDS)
        if "iri" not in op.kinds and not op.kinds & LITERAL_KINDS:
            return Operand(NULL_STR, frozenset())
        term = _case([(iri, f"concat('\"', {iri_text}, '\"')"),
                      (lit, f"concat('\"', {_content(op)}, '\"')")], NULL_STR)
        lexical = _case([(iri, iri_text), (lit, _lexical(op))], NULL_STR)
        return Operand(term, frozenset({"str"}), lexical=lexical)

    def call_lang(self, op: Operand) -> Operand:
        if not op.kinds & LITERAL_KINDS:
            return Operand(NULL_STR, frozenset())
        tag = _case([(_is(op, "lang"), f"substring_index({op.sql}, '\"@', -1)"),
                     (_is(op, LITERAL_KINDS), "''")], NULL_STR)
        return Operand(f"concat('\"', {tag}, '\"')", frozenset({"str"}), lexical=tag)

    def call_datatype(self, op: Operand) -> Operand:
        if not op.kinds & LITERAL_KINDS:
            return Operand(NULL_STR, frozenset())
        term = _case([(_is(op, "str"), sql_string(f"<{XSD_STRING}>")),
                      (_is(op, "lang"), sql_string(f"<{RDF_LANGSTRING}>")),
                      (_is(op, LITERAL_KINDS), f"concat('<', substring_index({op.sql}, '\"^^<', -1))")],
                     NULL_STR)
        return Operand(term, frozenset({"iri"}))


def _returns_boolean(name: str) -> bool:
    return FUNCTIONS[name]


def _text(expr: Expr) -> str:
    """The lexical form of a constant argument (the parser only lets constants through here)."""
    assert isinstance(expr, Const), expr
    return split_literal(expr.term)[0]


def java_regex(pattern: str, flags: str) -> str:
    """A SPARQL REGEX pattern and flags as one Java regex (flags inline, ``q`` quoting)."""
    if "q" in flags:
        pattern = "\\Q" + pattern.replace("\\E", "\\E\\\\E\\Q") + "\\E"
    inline = "".join(dict.fromkeys("iu" if f == "i" else f for f in flags if f != "q"))
    return f"(?{inline}){pattern}" if inline else pattern
