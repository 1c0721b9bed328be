"""The two ways a query text is rejected, both one-line ``ValueError``s.

They are distinct types so a caller can tell "fix your syntax" from "lakegraph cannot maintain this
construct incrementally"; both messages start with the query's label and say where.
"""
from __future__ import annotations


class QuerySyntaxError(ValueError):
    """The text is not a SPARQL query (bad syntax, undeclared prefix, reused blank node label)."""


class UnsupportedQuery(ValueError):
    """The text is valid SPARQL but uses a construct outside BGP + FILTER (named in the message)."""
