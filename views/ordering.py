"""A total order of RDF terms that extends SPARQL's ORDER BY order, for MIN, MAX, SAMPLE and the
order of GROUP_CONCAT's values.

SPARQL fixes only part of it: blank nodes < IRIs (by their text, without the angle brackets of the
N-Triples spelling) < literals, and among literals the ``<`` operator
where it is defined (numbers by value across their types, strings by code point, booleans,
dateTimes). Everything else is left to the implementation, and an aggregate maintained over a
stream needs an order that is total and transitive, so that a group's minimum is the same whatever
order its values came in (Oxigraph compares literals of different kinds by their lexical forms,
which is not transitive: ``"10" < 9 < 10 < "10"``). Ours: literals rank by kind, numbers first,
then booleans, dateTimes, simple strings, language-tagged strings (by text, then tag) and other
typed literals (by datatype, then text); equal values of different spellings (``1`` and ``1.0``)
are ordered by datatype and lexical form. NaN sorts before every other number. A dateTime without
a time zone is read as UTC.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .filters import const_kind
from .numbers import number
from .terms import split_literal

_KINDS = {"num": 0, "bool": 1, "dt": 2, "str": 3, "lang": 4, "other": 5}


def order_key(term: str) -> tuple[Any, ...]:
    """A sort key for a canonical N-Triples term, under the order above."""
    if term.startswith("_:"):
        return (0, term)
    if term.startswith("<"):
        return (1, term[1:-1])          # by the IRI's text: <x/C10> after <x/C1>, as SPARQL has it
    kind = const_kind(term)
    lexical, lang, datatype = split_literal(term)
    if kind == "num":
        value = number(term).value
        return (2, 0, (0, 0) if value != value else (1, value), datatype, lexical)
    if kind == "bool":
        return (2, 1, lexical in ("true", "1"), lexical)
    if kind == "dt":
        instant = datetime.fromisoformat(lexical)
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=timezone.utc)
        return (2, 2, instant, lexical)
    if kind == "lang":
        return (2, 4, lexical, lang)
    if kind == "str":
        return (2, 3, lexical)
    return (2, 5, datatype, lexical)
