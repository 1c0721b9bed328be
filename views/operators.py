"""SPARQL's operators on canonical terms, decided in process: the semantics :mod:`views.filters`
compiles to Spark SQL, so that the Arrow engine keeps or drops a FILTER's rows without a Spark job.

Each function takes terms (canonical N-Triples; None when unbound or after an error) and gives what
the compiled SQL gives on the same row: a term, or True, False or None (a SPARQL error). The
semantics are stated once, in :mod:`views.filters`' docstring; ``tests/test_views_filters.py``
checks this module against the compiled SQL and both against pyoxigraph.

Where the SQL's value hangs on how Spark or Java reads a value and Python could only guess, a
function raises :class:`Undecided` and the row is left to the SQL:

* decimals and integers Spark's DECIMAL(38,18) cannot hold exactly (it rounds or drops them);
* dateTimes Python's calendar refuses, with more than microseconds, or offsets beyond ±14:00;
* regular expressions outside the part of Java's syntax whose meaning Python's :mod:`re` shares
  (``\\b``, ``\\p{..}``, back-references, class unions and intersections, inline flags, named
  groups, the ``x`` flag...), and text holding the line terminators Java knows and Python does not
  (``\\r``, U+0085, U+2028, U+2029), or newlines under the ``m`` flag;
* case-insensitive matching and language ranges over non-ASCII text (Java's and Python's case
  folding differ on a few characters).
"""
from __future__ import annotations

import math
import re
import warnings
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Callable

from .filters import BOOL_FALSE, BOOL_TRUE, DATETIME_TZ_RE, EBV_TYPED_RE, LITERAL_KINDS, const_kind
from .numbers import DOUBLE, FLOAT, Number, float32, number
from .terms import split_literal


class Undecided(Exception):
    """A value this module leaves to the compiled SQL (see the module's docstring)."""


ORDER: dict[str, Callable[[object, object], bool]] = {
    "=": lambda x, y: x == y, "!=": lambda x, y: x != y, "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}

kind = lru_cache(maxsize=1 << 16)(const_kind)
lexical = lru_cache(maxsize=1 << 16)(lambda term: split_literal(term)[0])


# -- comparisons -------------------------------------------------------------------------------------
def compare(op: str, a: str | None, b: str | None) -> bool | None:
    """``a op b`` for one of ``= != < <= > >=``."""
    if op == "=":
        return equal(a, b)
    if op == "!=":
        value = equal(a, b)
        return None if value is None else not value
    return order(op, a, b)


def equal(a: str | None, b: str | None) -> bool | None:
    """Value equality for numbers, booleans and dateTimes, else term equality; an error for two
    different literals one of which is of an uninterpreted datatype."""
    if a is None or b is None:
        return None
    ka, kb = kind(a), kind(b)
    if ka == kb and ka in _BY_VALUE:
        return _BY_VALUE[ka]("=", a, b)
    if a == b:
        return True
    if ka not in LITERAL_KINDS or kb not in LITERAL_KINDS:
        return False
    return None if "other" in (ka, kb) else False


def order(op: str, a: str | None, b: str | None) -> bool | None:
    """``< <= > >=`` on two numbers, strings, booleans or dateTimes; an error otherwise."""
    if a is None or b is None:
        return None
    ka, kb = kind(a), kind(b)
    if ka != kb:
        return None
    if ka == "str":
        return ORDER[op](lexical(a), lexical(b))
    return _BY_VALUE[ka](op, a, b) if ka in _BY_VALUE else None


def _numeric(op: str, a: str, b: str) -> bool:
    """In the type both promote to: double, else float (a decimal or integer beside a float is read
    as a float), else exactly (as DECIMAL(38,18), so beyond it :class:`Undecided`). NaN compares
    false."""
    x, y = number(a), number(b)
    if FLOAT in (x.rank, y.rank) or DOUBLE in (x.rank, y.rank):
        u, v = _floating(x, y), _floating(y, x)
        return not (math.isnan(u) or math.isnan(v)) and ORDER[op](u, v)
    for n in (x, y):
        if abs(n.value) >= _DECIMAL_LIMIT or (n.value * _DECIMAL_SCALE).denominator != 1:
            raise Undecided(f"{a} or {b} beyond DECIMAL(38,18)")
    return ORDER[op](x.value, y.value)


_DECIMAL_LIMIT, _DECIMAL_SCALE = 10 ** 20, 10 ** 18


def _floating(n: Number, other: Number) -> float:
    """``n`` read as a float when it is one, or when ``other`` is and ``n`` is not a double."""
    if isinstance(n.value, float):
        return n.value
    as_float = n.rank == FLOAT or (other.rank == FLOAT and n.rank != DOUBLE)
    return float32(n.value) if as_float else float(n.value)


def _boolean(op: str, a: str, b: str) -> bool:
    return ORDER[op](a in BOOL_TRUE, b in BOOL_TRUE)


def _datetime(op: str, a: str, b: str) -> bool | None:
    """Instants when both have an offset, local times (read as UTC) when neither has; with one
    offset, never equal, and ordered only beyond 14 hours apart (else an error)."""
    zoned = bool(re.search(DATETIME_TZ_RE, a)), bool(re.search(DATETIME_TZ_RE, b))
    if op == "=" and zoned[0] != zoned[1]:
        return False
    x, y = _instant(lexical(a)), _instant(lexical(b))
    if zoned[0] == zoned[1]:
        return ORDER[op](x, y)
    try:
        side = -1 if x + _FOURTEEN_HOURS < y else 1 if x - _FOURTEEN_HOURS > y else None
    except OverflowError:
        raise Undecided(f"{a} or {b} near the calendar's end") from None
    return None if side is None else ORDER[op](side, 0)


_BY_VALUE: dict[str, Callable[[str, str, str], bool | None]] = {
    "num": _numeric, "bool": _boolean, "dt": _datetime}
_FOURTEEN_HOURS = timedelta(hours=14)
_DATETIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
                       r"(Z|([+-])([0-9]{2}):([0-9]{2}))?")


@lru_cache(maxsize=1 << 14)
def _instant(text: str) -> datetime:
    """A valid xsd:dateTime lexical form as an aware datetime (a local time at UTC)."""
    m = _DATETIME.fullmatch(text)
    year, month, day, hour, minute, second, fraction, zone, sign, zh, zm = m.groups()
    if fraction and len(fraction) > 6 or (zh and (int(zh), int(zm)) > (14, 0)) or (zm and int(zm) > 59):
        raise Undecided(f"dateTime {text!r}")
    offset = timedelta(hours=int(zh), minutes=int(zm)) * (-1 if sign == "-" else 1) if zh else timedelta()
    try:
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                         int((fraction or "0").ljust(6, "0")), timezone(offset))
    except ValueError:
        raise Undecided(f"dateTime {text!r}") from None


# -- effective boolean value, and booleans as terms ------------------------------------------------
def ebv(term: str | None) -> bool | None:
    """Booleans, numbers (non-zero, not NaN), strings (non-empty); an invalid boolean or number is
    false; anything else an error."""
    if term is None:
        return None
    k = kind(term)
    if k == "bool":
        return term in BOOL_TRUE
    if k == "num":
        n = number(term)
        value = _floating(n, n)         # a float read as a float, any other number as a double
        return not math.isnan(value) and value != 0
    if k == "str":
        return term != '""'
    return False if k == "other" and re.search(EBV_TYPED_RE, term) else None


def boolean_term(value: bool | None) -> str | None:
    """A condition's value used as a term: ``xsd:boolean`` true or false."""
    return None if value is None else BOOL_TRUE[0] if value else BOOL_FALSE


# -- built-in functions ----------------------------------------------------------------------------
def is_kind(term: str | None, kinds: frozenset[str]) -> bool | None:
    """isIRI, isBlank, isLiteral, isNumeric (STR, LANG and DATATYPE are
    :mod:`views.expressions`' own, shared with SELECT's expressions)."""
    return None if term is None else kind(term) in kinds


def same_term(a: str | None, b: str | None) -> bool | None:
    return None if a is None or b is None else a == b


def lang_matches(tag: str | None, lang_range: str | None) -> bool | None:
    """langMatches of two simple literals (basic filtering, ``*`` any non-empty tag)."""
    if tag is None or lang_range is None or kind(tag) != "str" or kind(lang_range) != "str":
        return None
    t, r = lexical(tag), lexical(lang_range)
    if not (t.isascii() and r.isascii()):
        raise Undecided("a language range over non-ASCII text")
    t, r = t.lower(), r.lower()
    return t != "" if r == "*" else t == r or t.startswith(r + "-")


def regex(text: str | None, pattern: str, flags: str) -> bool | None:
    """REGEX over a simple or language-tagged literal's lexical form, with Java's semantics (a
    match anywhere); an error for any other term."""
    if text is None or kind(text) not in ("str", "lang"):
        return None
    compiled = python_regex(pattern, flags)
    if compiled is None:
        raise Undecided(f"the regular expression {pattern!r} (flags {flags!r})")
    value = lexical(text)
    if any(c in value for c in _JAVA_ONLY_TERMINATORS) or ("m" in flags and "\n" in value) \
            or ("i" in flags and not value.isascii()):
        raise Undecided("a regular expression over text Java and Python read differently")
    return compiled.search(value) is not None


_JAVA_ONLY_TERMINATORS = "\r\x85\u2028\u2029"


# -- Java regular expressions in Python -------------------------------------------------------------
#: Java's ASCII classes (its default: ``\\d \\w \\s`` are not Unicode-aware), as class contents.
_CLASSES = {"d": "0-9", "w": "a-zA-Z0-9_", "s": " \\t\\n\\x0b\\f\\r"}
_GROUPS = ("(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>")
_QUANTITY = re.compile(r"\{[0-9]+(,[0-9]*)?\}")
_HEX = re.compile(r"x[0-9a-fA-F]{2}|u(?![dD][89abAB])[0-9a-fA-F]{4}")
_FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE, "q": 0}


@lru_cache(maxsize=256)
def python_regex(pattern: str, flags: str) -> re.Pattern | None:
    """A SPARQL REGEX pattern and flags compiled by Python's :mod:`re` to mean what Java's
    (:func:`views.filters.java_regex`) does, or None outside the part of the syntax the two share."""
    if set(flags) - set(_FLAGS) or ("i" in flags and not pattern.isascii()):
        return None
    body = re.escape(pattern) if "q" in flags else _translated(pattern)
    if body is None:
        return None
    py_flags = 0
    for f in flags:
        py_flags |= _FLAGS[f]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(body, py_flags)
    except (re.error, Warning):
        return None


def _translated(pattern: str) -> str | None:
    """A Java pattern (no flags) in Python's syntax, or None when it uses anything outside literal
    characters, ``. ^ $ | ( ) * + ? {n,m}`` (greedy, lazy, possessive), plain groups and
    look-arounds, classes of characters and ranges, escaped punctuation, ``\\n \\t \\f \\r \\xhh
    \\uhhhh`` and ``\\d \\w \\s`` (Java's ASCII ones) with their negations."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            piece = _escape(pattern, i, in_class=False)
        elif c == "[":
            piece = _class(pattern, i)
        elif c == "(":
            group = next((g for g in _GROUPS if pattern.startswith(g, i)), None)
            piece = (group, i + len(group)) if group else None if pattern.startswith("(?", i) else ("(", i + 1)
        elif c == "{":
            m = _QUANTITY.match(pattern, i)
            piece = (m.group(), m.end()) if m else None
        elif c in "}]":
            piece = None
        else:
            piece = (c, i + 1)
        if piece is None:
            return None
        out.append(piece[0])
        i = piece[1]
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int] | None:
    """The escape at ``pattern[i]`` (a backslash) in Python's syntax, and where it ends."""
    if i + 1 >= len(pattern):
        return None
    c = pattern[i + 1]
    if c in _CLASSES:
        return (_CLASSES[c] if in_class else f"[{_CLASSES[c]}]"), i + 2
    if c.lower() in _CLASSES and not in_class:
        return f"[^{_CLASSES[c.lower()]}]", i + 2
    if c in "ntfr":
        return pattern[i:i + 2], i + 2
    m = _HEX.match(pattern, i + 1)
    if m:
        return pattern[i:m.end()], m.end()
    if c.isascii() and not c.isalnum():
        return pattern[i:i + 2], i + 2
    return None


def _class(pattern: str, i: int) -> tuple[str, int] | None:
    """The character class at ``pattern[i]`` and where it ends; None for Java's unions and
    intersections, a leading ``]``, and what Python would read as set operations."""
    out, j = ["["], i + 1
    if pattern.startswith("^", j):
        out.append("^")
        j += 1
    if pattern.startswith("]", j):
        return None
    while j < len(pattern) and pattern[j] != "]":
        if pattern[j] == "[" or pattern.startswith(("&&", "--", "~~", "||"), j):
            return None
        if pattern[j] == "\\":
            piece = _escape(pattern, j, in_class=True)
            beside = (pattern[j - 1], pattern[piece[1]:piece[1] + 1]) if piece else ()
            if piece is None or (pattern[j + 1] in _CLASSES and "-" in beside):
                return None         # a class escape as a range's end
            out.append(piece[0])
            j = piece[1]
        else:
            out.append(pattern[j])
            j += 1
    if j >= len(pattern):
        return None
    return "".join(out) + "]", j + 1

