"""C-SPARQL's additions to SPARQL: the registration header and the stream windows.

A registration reads (keywords case-insensitive)::

    REGISTER QUERY name AS            (or REGISTER STREAM name AS, which needs a CONSTRUCT)
    PREFIX ex: <http://example.org/>
    SELECT ?room
    FROM STREAM ex:badges [RANGE 10s STEP 5s]
    FROM <http://example.org/building>
    WHERE { ... }

rdflib's parser knows neither the header nor ``STREAM`` and its window, so :func:`strip` reads them
from the masked text (:class:`~views.source.Source`: comments and strings cannot fool it) and
blanks them, leaving ``FROM ex:badges``: rdflib then parses every ``FROM`` as SPARQL's own dataset
clause and resolves its IRI (prefixes, BASE) as it does the rest of the query; :meth:`Clauses.dataset`
puts each IRI back with its window. Windows (all durations become integer milliseconds):

* ``[RANGE 10s STEP 5s]`` sliding, ``[RANGE 10s TUMBLING]`` (STEP = RANGE): time windows, units
  ``ms s m h d`` glued or spaced, or ISO 8601 durations (``PT1M30S``; no months or years, which have
  no fixed length); decimals are fine if they make whole milliseconds (``1.5s``, ``PT0.5S``). A STEP
  longer than the RANGE would leave gaps, so it is refused, and the time windows of a query must
  share one STEP (their ends then move together);
* ``[RANGE TRIPLES 10]`` or ``[TRIPLES 10]``, optionally ``STEP 5`` inside the brackets: windows of
  n inserts of the stream, end to end (tumbling, as the C-SPARQL engine runs them) unless a STEP
  makes them slide;
* ``[NOW]``: each distinct event time alone (its own kind, with RANGE = STEP = 1 ms).

A query's windows are all of one kind, and a stream appears once. ``FROM NAMED`` is refused: the
streams and graphs are merged into one graph.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Sequence

from .errors import QuerySyntaxError, UnsupportedQuery
from .model import validate_name
from .source import Source, keyword

#: C-SPARQL's ``timestamp(?s, ?p, ?o)`` function.
TIMESTAMP_IRI = "http://larkc.eu/csparql/sparql/jena/ext#timestamp"
#: Where a timestamp() call starts in the masked text: a prefixed name, or an IRI (whose content is
#: blanked there; the parser has refused every other function IRI) before ``(``.
TIMESTAMP_CALL = r"(?:(?<![\w?$])(?:[A-Za-z][\w.-]*)?:timestamp|<\s*>)\s*\("

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_ISO_MS = {"weeks": 7 * 86_400_000, "days": 86_400_000, "hours": 3_600_000, "minutes": 60_000,
           "seconds": 1000}
_NUM = r"(\d+(?:\.\d+)?)"
_ISO = re.compile(rf"(?i)P(?:(?P<years>{_NUM})Y)?(?:(?P<months>{_NUM})M)?(?:(?P<weeks>{_NUM})W)?"
                  rf"(?:(?P<days>{_NUM})D)?(?:T(?=\d)(?:(?P<hours>{_NUM})H)?(?:(?P<minutes>{_NUM})M)?"
                  rf"(?:(?P<seconds>{_NUM})S)?)?")
_HEADER = re.compile(r"(?i)\s*(?P<register>REGISTER)(?![\w:])")
_HEADER_FULL = re.compile(r"(?i)REGISTER\s+(?P<kind>QUERY|STREAM)\s+(?P<name>\S+)\s+AS(?![\w:])")
_FORM = keyword("(SELECT|ASK|CONSTRUCT|DESCRIBE)")
_FROM = re.compile(keyword("FROM") + r"\s*(?:(?P<named>NAMED)(?![\w:])\s*)?"
                   r"(?:(?P<stream>STREAM)(?![\w:])\s*)?")
_TARGET = re.compile(r"<[^<>]*>|[^\s\[\]<>{}]+")
_WINDOW = re.compile(r"\s*\[(?P<body>[^\[\]{}]*)\]")
_TOKEN = re.compile(r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))|(?P<word>[A-Za-z][A-Za-z0-9.]*)"
                    r"|(?P<other>\S)")
_UNIT_HINT = "use ms, s, m, h, d or an ISO 8601 duration such as PT10S"
_KINDS = {"time": "time", "count": "count", "now": "NOW"}       # for messages
_WINDOW_FORMS = "[RANGE 10s STEP 5s], [RANGE 10s TUMBLING], [RANGE TRIPLES 10 STEP 5], [TRIPLES 10] or [NOW]"


_DURATION = re.compile(rf"\s*{_NUM}\s*(?P<unit>ms|s|m|h|d)\s*", re.I)


def _iso_value(iso: re.Match[str]) -> Decimal:
    """The milliseconds an ISO 8601 duration match spells (no months or years: checked by callers)."""
    return sum((Decimal(iso[unit]) * ms for unit, ms in _ISO_MS.items() if iso[unit]), Decimal(0))


def parse_duration(text: str) -> int:
    """Whole milliseconds of a duration written as in a window (``2s``, ``500ms``, ``PT2S``) or ``0``;
    ValueError with a readable message otherwise (for options such as ``--lateness``)."""
    if text.strip() == "0":
        return 0
    plain, iso = _DURATION.fullmatch(text), _ISO.fullmatch(text.strip())
    if plain:
        value = Decimal(plain[1]) * _UNITS_MS[plain["unit"].lower()]
    elif iso and any(iso.groupdict().values()) and not (iso["years"] or iso["months"]):
        value = _iso_value(iso)
    else:
        raise ValueError(f"{text!r} is not a duration ({_UNIT_HINT})")
    if value != value.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number of milliseconds")
    return int(value)


@dataclass(frozen=True)
class StreamWindow:
    """One ``FROM STREAM`` clause: the stream's IRI (canonical ``<iri>``) and its window.

    ``kind`` is ``'time'`` (``range_ms``, ``step_ms``), ``'count'`` (``range_count``,
    ``step_count``) or ``'now'`` (``range_ms = step_ms = 1``); the other kind's fields are None.
    """

    stream: str
    kind: str
    range_ms: int | None = None
    step_ms: int | None = None
    range_count: int | None = None
    step_count: int | None = None

    def describe(self) -> str:
        """The clause in canonical C-SPARQL (parsing it gives this window back)."""
        if self.kind == "time":
            window = f"[RANGE {self.range_ms}ms STEP {self.step_ms}ms]"
        elif self.kind == "count":
            window = f"[RANGE TRIPLES {self.range_count} STEP {self.step_count}]"
        else:
            window = "[NOW]"
        return f"FROM STREAM {self.stream} {window}"


@dataclass(frozen=True)
class Clauses:
    """What a text's C-SPARQL parts declare, as :func:`strip` read them.

    ``froms`` has one entry per ``FROM`` clause in source order, the order of rdflib's dataset
    clauses: the ``FROM`` keyword's position and the window of a stream (whose ``stream`` is still
    empty: rdflib resolves it), or None for a background graph.
    """

    register_name: str | None
    register_kind: str | None
    froms: tuple[tuple[int, StreamWindow | None], ...]

    def dataset(self, iris: Sequence[str], src: Source, label: str) -> tuple[tuple[StreamWindow, ...],
                                                                              tuple[str, ...]]:
        """The streams and the distinct background graphs, given the canonical IRIs rdflib resolved
        for the ``FROM`` clauses in order."""
        streams: dict[str, StreamWindow] = {}
        graphs: list[str] = []
        for (pos, window), iri in zip(self.froms, iris, strict=True):
            if window is None:
                graphs.append(iri)
            elif iri in streams:
                raise UnsupportedQuery(f"{label}: FROM STREAM {iri} appears twice: a stream can have only "
                                       f"one window{src.at(pos)}")
            else:
                streams[iri] = replace(window, stream=iri)
        return tuple(streams.values()), tuple(dict.fromkeys(graphs))


def strip(src: Source, label: str) -> Clauses:
    """Read the header and the ``FROM`` clauses of ``src``, refuse what is invalid or unsupported
    (one line, ``label`` first), and blank the header and each stream's ``STREAM [window]``."""
    spans: list[tuple[int, int]] = []
    name, kind = _header(src, label, spans)
    froms: list[tuple[int, StreamWindow | None]] = []
    first: tuple[StreamWindow, str] | None = None       # the first window and its spelling
    for clause in _FROM.finditer(src.masked):
        if not src.top_level(clause.start()):
            continue                                    # not a dataset clause: rdflib will say so
        where = src.at(clause.start())
        if clause["named"]:
            what = "FROM NAMED STREAM" if clause["stream"] else "FROM NAMED"
            raise UnsupportedQuery(f"{label}: {what} is not supported: streams and graphs are merged "
                                   f"into one graph{where}")
        if not clause["stream"]:
            froms.append((clause.start(), None))
            continue
        target = _TARGET.match(src.masked, clause.end())
        if target is None:
            raise QuerySyntaxError(f"{label}: FROM STREAM needs a stream IRI{where}")
        bracket = _WINDOW.match(src.masked, target.end())
        if bracket is None:
            raise QuerySyntaxError(f"{label}: FROM STREAM {src.text[target.start():target.end()]} needs a "
                                   f"window such as [RANGE 10s STEP 5s]{where}")
        opening = bracket.start("body") - 1
        parser = _Window(src, label, opening, bracket.end())
        window = parser.parse()
        if first is None:
            first = (window, parser.spelled)
        else:
            _check_alike(window, parser.spelled, *first, label, src.at(opening))
        froms.append((clause.start(), window))
        spans += [(clause.start("stream"), target.start()), (bracket.start(), bracket.end())]
    src.blank(spans)
    return Clauses(name, kind, tuple(froms))


def _header(src: Source, label: str, spans: list[tuple[int, int]]) -> tuple[str | None, str | None]:
    """The name and kind of a ``REGISTER QUERY|STREAM name AS`` opening the text (its span added to
    ``spans``), or ``(None, None)``."""
    opening = _HEADER.match(src.masked)
    if opening is None:
        return None, None
    start = opening.start("register")
    where = src.at(start)
    header = _HEADER_FULL.match(src.masked, start)
    if header is None:
        raise QuerySyntaxError(f"{label}: the header must read REGISTER QUERY name AS or REGISTER STREAM "
                               f"name AS{where}")
    try:
        name = validate_name(src.text[header.start("name"):header.end("name")])
    except ValueError as exc:
        raise QuerySyntaxError(f"{label}: {exc}{where}") from None
    kind = header["kind"].lower()
    form = re.search(_FORM, src.masked[header.end():])
    if kind == "stream" and form and form[1].upper() != "CONSTRUCT":
        raise QuerySyntaxError(f"{label}: REGISTER STREAM needs a CONSTRUCT query, found "
                               f"{form[1].upper()}{where}")
    spans.append((start, header.end()))
    return name, kind


def _check_alike(window: StreamWindow, spelled: str, first: StreamWindow, first_spelled: str,
                 label: str, where: str) -> None:
    """The windows of a query are of one kind, and its time windows share one STEP."""
    if window.kind != first.kind:
        raise UnsupportedQuery(f"{label}: window {spelled} is a {_KINDS[window.kind]} window but "
                               f"{first_spelled} is a {_KINDS[first.kind]} window: the windows of a query "
                               f"must be of one kind{where}")
    if window.step_ms != first.step_ms:
        raise UnsupportedQuery(f"{label}: window {spelled} steps by {window.step_ms}ms but {first_spelled} "
                               f"by {first.step_ms}ms: the time windows of a query must share one STEP{where}")


class _Window:
    """The parse of one bracketed window, ``src.masked[start:end]``."""

    def __init__(self, src: Source, label: str, start: int, end: int) -> None:
        self.src = src
        self.label = label
        self.spelled = _spelled(src, start, end)
        self.tokens = list(_TOKEN.finditer(src.masked, start + 1, end - 1))
        self.i = 0                                       # the next token
        self.pos = start                                 # where the last token read starts

    def parse(self) -> StreamWindow:
        if self._accept("NOW"):
            window = StreamWindow("", "now", range_ms=1, step_ms=1)
        elif self._accept("TRIPLES"):
            window = self._count_window()
        elif self._accept("RANGE"):
            window = self._count_window() if self._accept("TRIPLES") else self._time_window()
        else:
            raise self._not_a_window()
        if self.i != len(self.tokens):
            self._next()
            raise self._not_a_window()
        return window

    def _count_window(self) -> StreamWindow:
        """After ``TRIPLES``: ``n`` (tumbling: windows of n inserts end to end) or ``n STEP m``."""
        count = self._count("TRIPLES")
        step = self._count("STEP") if self._accept("STEP") else count
        return StreamWindow("", "count", range_count=count, step_count=step)

    def _time_window(self) -> StreamWindow:
        """After ``RANGE``: ``d STEP d`` or ``d TUMBLING``."""
        range_ms, range_text = self._duration("RANGE")
        if self._accept("TUMBLING"):
            step_ms, step_text = range_ms, range_text
        elif self._accept("STEP"):
            step_ms, step_text = self._duration("STEP")
            if step_ms > range_ms:
                raise self._refuse(f"STEP {step_text} is longer than RANGE {range_text}, which would leave "
                                   "gaps between windows")
        else:
            self._next()
            raise self._not_a_window()
        return StreamWindow("", "time", range_ms=range_ms, step_ms=step_ms)

    def _next(self) -> re.Match[str] | None:
        """The next token, consumed (None at the end)."""
        if self.i == len(self.tokens):
            return None
        token = self.tokens[self.i]
        self.i += 1
        self.pos = token.start()
        return token

    def _accept(self, word: str) -> bool:
        """Consume the next token if it is the keyword ``word``."""
        if self.i < len(self.tokens) and self.tokens[self.i].group().upper() == word:
            self._next()
            return True
        return False

    def _count(self, what: str) -> int:
        token = self._next()
        if token is None:
            raise self._not_a_window()
        if not (token.lastgroup == "number" and token.group().isdigit() and int(token.group()) > 0):
            raise self._invalid(f"{what} {token.group()} is not a positive whole number")
        return int(token.group())

    def _duration(self, what: str) -> tuple[int, str]:
        """A positive duration in whole milliseconds, and its spelling."""
        token = self._next()
        if token is None or token.lastgroup == "other":
            raise self._not_a_window()
        if token.lastgroup == "word":
            value = self._iso(what, token.group())
        else:
            unit = self._next()
            if unit is None or unit.lastgroup != "word" or unit.group().upper() in ("STEP", "TUMBLING"):
                raise self._invalid(f"{what} {token.group()} has no time unit ({_UNIT_HINT})")
            if unit.group().lower() not in _UNITS_MS:
                raise self._invalid(f"unknown time unit {unit.group()!r} in {what} "
                                    f"{_spelled(self.src, token.start(), unit.end())} ({_UNIT_HINT})")
            value = Decimal(token.group()) * _UNITS_MS[unit.group().lower()]
        spelled = _spelled(self.src, token.start(), self.tokens[self.i - 1].end())
        if value <= 0:
            raise self._invalid(f"{what} {spelled} is not a positive duration")
        if value != value.to_integral_value():
            raise self._refuse(f"{what} {spelled} is not a whole number of milliseconds")
        return int(value), spelled

    def _iso(self, what: str, token: str) -> Decimal:
        """The milliseconds of an ISO 8601 duration (``PT1M30S``)."""
        iso = _ISO.fullmatch(token)
        if iso is None or not any(iso.groupdict().values()):
            raise self._invalid(f"{what} {token} is not a duration ({_UNIT_HINT})")
        if iso["years"] or iso["months"]:
            raise self._refuse(f"{what} {token} counts months or years, which have no fixed length")
        return _iso_value(iso)

    def _not_a_window(self) -> QuerySyntaxError:
        return self._invalid(f"{self.spelled} is not a window: use {_WINDOW_FORMS}")

    def _invalid(self, what: str) -> QuerySyntaxError:
        return QuerySyntaxError(f"{self.label}: {what}{self.src.at(self.pos)}")

    def _refuse(self, what: str) -> UnsupportedQuery:
        return UnsupportedQuery(f"{self.label}: {what}{self.src.at(self.pos)}")


def _spelled(src: Source, start: int, end: int) -> str:
    """``text[start:end]`` on one line, comments dropped (for messages)."""
    return " ".join(src.masked[start:end].split())
