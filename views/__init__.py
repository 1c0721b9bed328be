"""The pure query core: SPARQL text to a plan the Spark engine executes (no Spark, no Delta here).

``parse_query`` (:mod:`views.sparql`) gives the :class:`~views.model.Query` model;
``compile_query`` (:mod:`views.plan`) decomposes it as the paper does (:mod:`views.decompose`) and
compiles its FILTERs to Spark SQL text (:mod:`views.filters`); ``explain`` prints the result.
"""
from .errors import QuerySyntaxError, UnsupportedQuery
from .plan import Component, PatternRef, QueryPlan, ViewDef, compile_query, explain, validate_name
from .sparql import parse_query

__all__ = ["Component", "PatternRef", "QueryPlan", "QuerySyntaxError", "UnsupportedQuery", "ViewDef",
           "compile_query", "explain", "parse_query", "validate_name"]
