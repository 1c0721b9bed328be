"""The pure query core: SPARQL text to a plan the Spark engine executes (no Spark, no Delta here).

``parse_query`` (:mod:`views.sparql`) gives the :class:`~views.model.Query` model;
``compile_query`` (:mod:`views.plan`) decomposes it as the paper does (:mod:`views.decompose`) and
compiles its FILTERs to Spark SQL text (:mod:`views.filters`); ``explain`` prints the result.

Import those from their modules: this package re-exports nothing, so that reading a stored plan
(:mod:`views.plan`) never loads the parser's rdflib and pyparsing (a third of a second).
"""
