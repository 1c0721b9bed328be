"""Constant RDF terms of a query, in the lake's canonical N-Triples spelling.

Views, partial embeddings and gold tables compare terms as strings, so a constant in a query must be
spelled exactly as the ingest side spells data terms: IRIs ``<...>``, blank nodes ``_:x``, literals
``"lex"`` (xsd:string is written plain), ``"lex"@lang`` (tag lowercased) or ``"lex"^^<datatype>``,
with ``\\\\ \\" \\n \\r \\t`` escaped and every other control character as ``\\uXXXX``. Lexical forms
are kept as written (``"01"^^xsd:integer`` stays ``01``): RDF term equality is lexical.

This module is the query side's own small copy of that contract (the ingest side has its own term
module); :func:`split_literal` reads a canonical literal back for compile-time constant folding.
It imports nothing heavy, so reading a stored plan stays cheap: spelling rdflib's terms in this form
is the parser's job (:func:`views.sparql.render`), the only module that imports rdflib.
"""
from __future__ import annotations

import json

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

_ESCAPES = {c: f"\\u{c:04X}" for c in (*range(0x20), 0x7F)}
_ESCAPES.update({ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def escape(lexical: str) -> str:
    """The canonical escaped form of a lexical form (what goes between the quotes)."""
    return lexical.translate(_ESCAPES)


def literal(lexical: str, lang: str | None = None, datatype: str | None = None) -> str:
    """A canonical literal from its parts (``datatype`` None or xsd:string: a plain literal)."""
    quoted = f'"{escape(lexical)}"'
    if lang:
        return f"{quoted}@{lang.lower()}"
    if datatype is None or datatype == XSD_STRING:
        return quoted
    return f"{quoted}^^<{datatype}>"


def split_literal(term: str) -> tuple[str, str | None, str]:
    """``(lexical, lang, datatype)`` of a canonical literal; ``lexical`` unescaped.

    Simple literals report xsd:string and language-tagged ones rdf:langString, as SPARQL's
    DATATYPE() does. The canonical escapes are exactly JSON's, hence the JSON decoder.
    """
    end = term.rindex('"')
    lexical = json.loads(term[:end + 1])
    suffix = term[end + 1:]
    if suffix.startswith("@"):
        return lexical, suffix[1:], RDF_LANGSTRING
    if suffix.startswith("^^<"):
        return lexical, None, suffix[3:-1]
    return lexical, None, XSD_STRING
