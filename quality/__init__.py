"""Expectation suites over the lake's tables; Great Expectations is imported by :mod:`quality.gx` only."""
from __future__ import annotations


def expectation_reason(expectation_type: str, column: str | None, description: str | None) -> str:
    """``expectation_type(column): description``: how a quarantine row or a report names an expectation."""
    head = f"{expectation_type}({column})" if column else expectation_type
    return f"{head}: {description}" if description else head
