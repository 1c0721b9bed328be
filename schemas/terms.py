"""RDF terms in N-Triples syntax, parsed, validated and written back in one canonical form.

Why a canonical form: bronze, the views and the gold tables compare terms as strings, so two
spellings of one term (``"a"`` and ``"a"^^xsd:string``, ``"x"@EN`` and ``"x"@en``, ``\\u0041`` and
``A``) must become one string before they land. Lexical forms are kept as given (``"01"^^xsd:integer``
stays ``01``): RDF term equality is lexical, value equality is a query-time concern.

A :class:`Term` validates itself on construction, so every Term in the program is well formed;
:class:`TermError` carries a short reason that ends up in the quarantine table.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

KINDS = ("iri", "bnode", "literal")


class TermError(ValueError):
    """A term that is not valid N-Triples; the message is a short reason for the quarantine."""


# -- lexical forms of the common XSD datatypes -------------------------------------------------
_INTEGER_RANGES: dict[str, tuple[int | None, int | None]] = {
    "integer": (None, None),
    "nonNegativeInteger": (0, None),
    "positiveInteger": (1, None),
    "nonPositiveInteger": (None, 0),
    "negativeInteger": (None, -1),
    "long": (-2**63, 2**63 - 1),
    "int": (-2**31, 2**31 - 1),
    "short": (-2**15, 2**15 - 1),
    "byte": (-2**7, 2**7 - 1),
    "unsignedLong": (0, 2**64 - 1),
    "unsignedInt": (0, 2**32 - 1),
    "unsignedShort": (0, 2**16 - 1),
    "unsignedByte": (0, 2**8 - 1),
}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)")
_FLOAT = re.compile(r"[+-]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|INF)|NaN")
_BOOLEAN = re.compile(r"true|false|1|0")
_TZ = r"(Z|[+-]((0[0-9]|1[0-3]):[0-5][0-9]|14:00))"
_DATE = r"(?P<year>-?([1-9][0-9]{3,}|0[0-9]{3}))-(?P<month>0[1-9]|1[0-2])-(?P<day>0[1-9]|[12][0-9]|3[01])"
_TIME = r"(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?|24:00:00(\.0+)?)"
_DATE_PATTERNS = {
    "dateTime": re.compile(f"{_DATE}T{_TIME}{_TZ}?"),
    "dateTimeStamp": re.compile(f"{_DATE}T{_TIME}{_TZ}"),
    "date": re.compile(f"{_DATE}{_TZ}?"),
    "time": re.compile(f"{_TIME}{_TZ}?"),
}
_PATTERNS = {"decimal": _DECIMAL, "double": _FLOAT, "float": _FLOAT, "boolean": _BOOLEAN}


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _valid_lexical(lexical: str, datatype: str) -> bool:
    """Whether ``lexical`` is in the lexical space of ``datatype`` (unknown datatypes: always)."""
    if not datatype.startswith(XSD):
        return True
    local = datatype[len(XSD):]
    if local in _INTEGER_RANGES:
        if not _INTEGER.fullmatch(lexical):
            return False
        low, high = _INTEGER_RANGES[local]
        value = int(lexical)
        return (low is None or value >= low) and (high is None or value <= high)
    if local in _PATTERNS:
        return _PATTERNS[local].fullmatch(lexical) is not None
    if local in _DATE_PATTERNS:
        match = _DATE_PATTERNS[local].fullmatch(lexical)
        if match is None:
            return False
        if "day" in match.groupdict():
            return int(match["day"]) <= _days_in_month(int(match["year"]), int(match["month"]))
        return True
    return True


def _short(datatype: str) -> str:
    return "xsd:" + datatype[len(XSD):] if datatype.startswith(XSD) else f"<{datatype}>"


# -- characters ---------------------------------------------------------------------------------
_SCHEME_RE = r"[A-Za-z][A-Za-z0-9+.\-]*:"
_IRI_EXCLUDED = r'\x00-\x20<>"{}|^`\\'          # characters an N-Triples IRIREF may not hold as they are
#: An absolute IRI without escapes (the text between ``<`` and ``>``), valid in Python's and Java's
#: regex syntax alike, so the bronze suite checks with the very pattern the reader uses.
IRI_BODY = rf"{_SCHEME_RE}[^{_IRI_EXCLUDED}]*"
_SCHEME = re.compile(_SCHEME_RE)
_IRI_BAD = re.compile(f"[{_IRI_EXCLUDED}]")
_PLAIN_IRI = re.compile(f"<{IRI_BODY}>")
#: A simple literal with nothing to escape: already canonical.
_PLAIN_STRING = re.compile('"[^"\\\\\x00-\x1f\x7f\ud800-\udfff]*"')
#: The terms :func:`canonical_nt` returns as they are (a plain IRI or a plain simple literal), as
#: one RE2 pattern: a column's terms are checked in Arrow, and only the others reach Python.
CANONICAL_AS_IS = rf'^(?:<{IRI_BODY}>|"[^"\\\x00-\x1f\x7f]*")$'
_BNODE_LABEL = re.compile(
    r"[A-Za-z0-9_\u00B7-\U000EFFFF]([A-Za-z0-9_\-.\u00B7-\U000EFFFF]*[A-Za-z0-9_\-\u00B7-\U000EFFFF])?")
_LANG = re.compile(r"[a-zA-Z]+(-[a-zA-Z0-9]+)*")
_PNAME = re.compile(r"([A-Za-z](?:[\w.\-]*[\w\-])?)?:((?:[\w:%\-]|\.(?=[\w:%\-.]))*)")
_HEX = frozenset("0123456789abcdefABCDEF")
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_LITERAL_ESCAPES = {c: f"\\u{c:04X}" for c in (*range(0x20), 0x7F)}
_LITERAL_ESCAPES.update({ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("\r"): "\\r",
                         ord("\t"): "\\t"})


_SURROGATE = re.compile("[\ud800-\udfff]")
# runs of characters the readers copy as they are (regex scans instead of a Python loop per character)
_IRI_RUN = re.compile(r"[^>\\]*")
_STRING_RUN = re.compile(r'[^"\\\n\r]*')


def _check_iri(value: str) -> None:
    bad = _IRI_BAD.search(value)
    if bad:
        ch = bad.group()
        raise TermError("space in IRI" if ch == " " else f"invalid character {ch!r} in IRI")
    if not _SCHEME.match(value):
        raise TermError("relative IRI")


# -- the term -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    """One RDF term. ``value`` is the IRI, the blank node label (without ``_:``) or the literal's
    unescaped lexical form. Literals always carry their RDF 1.1 datatype (``xsd:string`` for simple
    literals, ``rdf:langString`` with ``lang`` lowercased), so equal terms compare equal."""

    kind: str
    value: str
    datatype: str | None = None
    lang: str | None = None

    def __post_init__(self) -> None:
        if self.kind == "iri":
            _check_iri(self.value)
        elif self.kind == "bnode":
            if not _BNODE_LABEL.fullmatch(self.value):
                raise TermError(f"invalid blank node label {self.value!r}")
        elif self.kind == "literal":
            self._check_literal()
        else:
            raise TermError(f"unknown term kind {self.kind!r}")
        if self.kind != "literal" and (self.datatype is not None or self.lang is not None):
            raise TermError(f"an {self.kind} has no datatype or language")

    def _check_literal(self) -> None:
        if _SURROGATE.search(self.value):
            raise TermError("surrogate code point in literal")
        if self.lang is not None:
            if not _LANG.fullmatch(self.lang):
                raise TermError(f"invalid language tag {self.lang!r}")
            object.__setattr__(self, "lang", self.lang.lower())
            if self.datatype not in (None, RDF_LANGSTRING):
                raise TermError("a literal has either a language tag or a datatype")
            object.__setattr__(self, "datatype", RDF_LANGSTRING)
            return
        datatype = self.datatype or XSD_STRING
        _check_iri(datatype)
        if datatype == RDF_LANGSTRING:
            raise TermError("rdf:langString literal without a language tag")
        if not _valid_lexical(self.value, datatype):
            raise TermError(f"invalid lexical form {self.value!r} for {_short(datatype)}")
        object.__setattr__(self, "datatype", datatype)

    @property
    def nt(self) -> str:
        """The canonical N-Triples spelling."""
        if self.kind == "iri":
            return f"<{self.value}>"
        if self.kind == "bnode":
            return f"_:{self.value}"
        quoted = '"' + self.value.translate(_LITERAL_ESCAPES) + '"'
        if self.lang is not None:
            return f"{quoted}@{self.lang}"
        if self.datatype == XSD_STRING:
            return quoted
        return f"{quoted}^^<{self.datatype}>"


# -- the reader ---------------------------------------------------------------------------------
def _read_hex(text: str, pos: int, digits: int) -> tuple[str, int]:
    """The character of a ``\\u``/``\\U`` escape whose hex digits start at ``pos``."""
    hexits = text[pos:pos + digits]
    if len(hexits) != digits or not all(c in _HEX for c in hexits):
        shown = "".join(itertools.takewhile(lambda c: c in _HEX, hexits))
        raise TermError(f"bad escape \\{text[pos - 1]}{shown}")
    code = int(hexits, 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        raise TermError(f"bad escape \\{text[pos - 1]}{hexits} (not a character)")
    return chr(code), pos + digits


def _read_iri(text: str, pos: int) -> tuple[str, int]:
    """The unescaped IRI of ``<...>`` starting at ``pos`` (on the ``<``) and the position after it."""
    out: list[str] = []
    i = pos + 1
    while True:
        run = _IRI_RUN.match(text, i)
        out.append(run.group())
        i = run.end()
        if i >= len(text):
            raise TermError("unterminated IRI")
        if text[i] == ">":
            return "".join(out), i + 1
        kind = text[i + 1:i + 2]                      # text[i] is a backslash
        if kind not in ("u", "U"):
            raise TermError(f"bad escape \\{kind} in IRI")
        decoded, i = _read_hex(text, i + 2, 4 if kind == "u" else 8)
        out.append(decoded)


def _read_string(text: str, pos: int) -> tuple[str, int]:
    """The unescaped lexical form of ``"..."`` starting at ``pos`` and the position after it."""
    out: list[str] = []
    i = pos + 1
    while True:
        run = _STRING_RUN.match(text, i)
        out.append(run.group())
        i = run.end()
        if i >= len(text):
            raise TermError("unterminated literal")
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch in "\n\r":
            raise TermError("raw line break in literal")
        kind = text[i + 1:i + 2]                      # ch is a backslash
        if kind in ("u", "U"):
            decoded, i = _read_hex(text, i + 2, 4 if kind == "u" else 8)
            out.append(decoded)
            continue
        if kind not in _ECHAR:
            raise TermError(f"bad escape \\{kind}" if kind else "unterminated literal")
        out.append(_ECHAR[kind])
        i += 2


def _read_pname(text: str, pos: int, prefixes: Mapping[str, str]) -> tuple[str, int]:
    match = _PNAME.match(text, pos)
    if match is None:
        raise TermError(f"expected a term at {text[pos:pos + 20]!r}")
    prefix = match.group(1) or ""
    if prefix not in prefixes:
        raise TermError(f"undeclared prefix '{prefix}:'")
    return prefixes[prefix] + match.group(2), match.end()


def read_term(text: str, pos: int = 0, prefixes: Mapping[str, str] | None = None) -> tuple[Term, int]:
    """Read one term starting exactly at ``pos``; returns it and the position after it.

    ``prefixes`` (prefix -> namespace IRI) enables prefixed names such as ``ex:alice``, as RDF Patch
    allows; without it only N-Triples syntax is accepted."""
    if pos >= len(text):
        raise TermError("expected a term, found end of line")
    ch = text[pos]
    if ch == "<":
        value, end = _read_iri(text, pos)
        return Term("iri", value), end
    if text.startswith("_:", pos):
        match = _BNODE_LABEL.match(text, pos + 2)
        if match is None:
            raise TermError("empty blank node label")
        return Term("bnode", match.group(0)), match.end()
    if ch == '"':
        lexical, end = _read_string(text, pos)
        if text.startswith("@", end):
            match = _LANG.match(text, end + 1)
            if match is None:
                raise TermError("bad language tag")
            return Term("literal", lexical, lang=match.group(0)), match.end()
        if text.startswith("^^", end):
            end += 2
            if text.startswith("<", end):
                datatype, end = _read_iri(text, end)
            elif prefixes is not None:
                datatype, end = _read_pname(text, end, prefixes)
            else:
                raise TermError("datatype must be an IRI")
            return Term("literal", lexical, datatype=datatype), end
        return Term("literal", lexical), end
    if prefixes is not None:
        value, end = _read_pname(text, pos, prefixes)
        return Term("iri", value), end
    raise TermError(f"expected a term at {text[pos:pos + 20]!r}")


def parse_term(text: str, prefixes: Mapping[str, str] | None = None) -> Term:
    """The term spelled by all of ``text`` (surrounding whitespace allowed)."""
    stripped = text.strip()
    term, end = read_term(stripped, 0, prefixes)
    if end != len(stripped):
        raise TermError(f"unexpected text after term: {stripped[end:].lstrip()[:20]!r}")
    return term


@lru_cache(maxsize=1 << 16)
def canonical_nt(text: str) -> str:
    """The canonical N-Triples spelling of the term ``text`` (:class:`TermError` when invalid).
    Cached, since a stream repeats its predicates, classes and hot entities; an IRI without escapes
    or a simple literal without escapes is already canonical and skips the reader."""
    if _PLAIN_IRI.fullmatch(text) or _PLAIN_STRING.fullmatch(text):
        return text
    return parse_term(text).nt


def term_to_sparql_json(nt: str) -> dict[str, str]:
    """The SPARQL 1.1 Query Results JSON object of a term given in N-Triples syntax."""
    term = parse_term(nt)
    if term.kind == "iri":
        return {"type": "uri", "value": term.value}
    if term.kind == "bnode":
        return {"type": "bnode", "value": term.value}
    if term.lang is not None:
        return {"type": "literal", "value": term.value, "xml:lang": term.lang}
    if term.datatype == XSD_STRING:
        return {"type": "literal", "value": term.value}
    return {"type": "literal", "value": term.value, "datatype": term.datatype}
