"""The query text as rdflib gets it, and positions back in the text the user wrote.

Three jobs rdflib's SPARQL parser does not do for us:

* **Where.** rdflib's parse tree and algebra carry no positions, so a refused construct is located by
  searching the text for its keyword; comments, string contents and IRIs are blanked first (same
  length, newlines kept) so that ``# OPTIONAL`` or ``"UNION"`` never match.
* **Numbers spelled as written.** rdflib builds numeric literals through ``Literal(value)``, which
  normalises their lexical form (``01`` becomes ``"1"``, ``1e0`` becomes ``"1.0"``) and fails on
  negative decimals (``-1.5`` raises ``TypeError``). A constant in a triple pattern must match data
  terms lexically, so numeric tokens are rewritten as typed literals (``"01"^^<...#integer>``),
  which rdflib keeps verbatim; syntax error positions are mapped back through the rewrite.
* **C-SPARQL.** The registration header and stream windows (:mod:`views.streams`) are not SPARQL:
  :meth:`Source.blank` hides them from rdflib the same way, so positions still match the text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from .terms import XSD

_TOKENS = re.compile(
    r'(?P<comment>#[^\n]*)'
    r'|(?P<string>"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''
    r'|"(?:[^"\\\n\r]|\\.)*"|\'(?:[^\'\\\n\r]|\\.)*\')'
    r'|(?P<iri><[^<>"{}|^`\\\x00-\x20]*>)', re.S)

# A numeric token not glued to a name, variable, blank node label or another number.
_NUMBER = re.compile(
    r"(?<![\w:?$%\\.+\-])(?P<sign>[+-]?)"
    r"(?:(?P<double>\d+\.\d*[eE][+-]?\d+|\.\d+[eE][+-]?\d+|\d+[eE][+-]?\d+)"
    r"|(?P<decimal>\d*\.\d+)|(?P<integer>\d+))(?![\w:])")
_LIMIT_BEFORE = re.compile(r"(?i)\b(LIMIT|OFFSET)\s*$")
_OPERAND_END = re.compile(r"[\w)\]\"']")


def keyword(word: str) -> str:
    """A regex for a SPARQL keyword (case-insensitive) that is not part of a name or variable."""
    return rf"(?i)(?<![\w:?$]){word}(?![\w:])"


@dataclass
class Source:
    """A query text with its blanked twin (for searching) and its rdflib-ready rewrite."""

    text: str
    masked: str = field(init=False)
    rewritten: str = field(init=False)
    _stripped: str = field(init=False)        # ``text`` without the spans :meth:`blank` hid
    _iri_ends: set[int] = field(init=False, default_factory=set)
    _edits: list[tuple[int, int, int]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.masked = _TOKENS.sub(self._blank, self.text)
        self._stripped = self.text
        self.rewritten = self._rewrite_numbers()

    def blank(self, spans: Iterable[tuple[int, int]]) -> None:
        """Hide ``spans`` (``start, end`` in ``text``) from rdflib and from searches: blanked with
        their newlines kept, so positions and lines in ``rewritten`` still map to ``text``."""
        for start, end in spans:
            self._stripped = _blanked(self._stripped, start, end)
            self.masked = _blanked(self.masked, start, end)
        self._edits.clear()
        self.rewritten = self._rewrite_numbers()

    def _blank(self, match: re.Match[str]) -> str:
        token = match.group(0)
        if match.lastgroup == "comment":
            return " " * len(token)
        if match.lastgroup == "iri":
            self._iri_ends.add(match.end() - 1)
        quote = 3 if token[:3] in ('"""', "'''") else 1
        return _blanked(token, quote, len(token) - quote)

    def _rewrite_numbers(self) -> str:
        """Spell every numeric literal token as a typed literal, recording the edits."""
        out: list[str] = []
        last = 0
        for match in _NUMBER.finditer(self.masked):
            start = match.start()
            if _LIMIT_BEFORE.search(self.masked, 0, start):
                continue
            if match["sign"] and self._is_binary_operator(start):
                start += 1          # ``?a -1`` is a subtraction: keep the sign as the operator
            kind = match.lastgroup
            lexical = self._stripped[start:match.end()]
            out.append(self._stripped[last:start])
            out.append(f'"{lexical}"^^<{XSD}{kind}>')
            self._edits.append((start, match.end(), len(out[-1])))
            last = match.end()
        out.append(self._stripped[last:])
        return "".join(out)

    def _is_binary_operator(self, pos: int) -> bool:
        """Whether the sign at ``pos`` follows an operand inside parentheses (an expression), where
        SPARQL reads ``?a -1`` as ``?a - 1``; elsewhere (``ex:p -1`` in a triple) it is the number's."""
        before = self.masked[:pos].rstrip()
        if not before or _innermost_bracket(self.masked[:pos]) != "(":
            return False
        end = len(before) - 1
        return bool(_OPERAND_END.match(before[-1])) or (before[-1] == ">" and end in self._iri_ends)

    # -- positions -------------------------------------------------------------------------------
    def original(self, pos: int) -> int:
        """The position in ``text`` of position ``pos`` of ``rewritten``."""
        shift = 0
        for start, end, new_len in self._edits:
            new_start = start + shift
            if pos < new_start:
                break
            if pos < new_start + new_len:
                return start
            shift += new_len - (end - start)
        return pos - shift

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of position ``pos`` of ``text``."""
        line = self.text.count("\n", 0, pos) + 1
        return line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def find(self, pattern: str, nth: int = 0, in_parens: bool | None = None) -> int | None:
        """Position of the ``nth`` match of ``pattern`` outside comments, strings and IRIs;
        ``in_parens`` keeps only matches inside (True) or outside (False) parentheses, which tells
        expressions (FILTER arguments) from triples."""
        matches = (m.start() for m in re.finditer(pattern, self.masked))
        if in_parens is not None:
            matches = (p for p in matches if (_innermost_bracket(self.masked[:p]) == "(") == in_parens)
        for i, pos in enumerate(matches):
            if i == nth:
                return pos
        return None

    def top_level(self, pos: int) -> bool:
        """Whether position ``pos`` is outside all brackets (where a query's dataset clauses are)."""
        return _innermost_bracket(self.masked[:pos]) is None

    def at(self, pos: int) -> str:
        """`` (line N)`` for position ``pos``, the suffix of every located message."""
        return f" (line {self.line_col(pos)[0]})"

    def where(self, pattern: str, nth: int = 0, in_parens: bool | None = None) -> str:
        """`` (line N)`` for the ``nth`` match of ``pattern``, or nothing when it is not found."""
        pos = self.find(pattern, nth, in_parens)
        return "" if pos is None else self.at(pos)


def _blanked(text: str, start: int, end: int) -> str:
    """``text`` with ``text[start:end]`` turned to spaces, newlines kept."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _innermost_bracket(text: str) -> str | None:
    """The innermost unclosed bracket of (blanked) ``text``."""
    stack: list[str] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs and stack and stack[-1] == pairs[ch]:
            stack.pop()
    return stack[-1] if stack else None
