"""Numeric literals as exact values, XPath's numeric type promotion, and canonical spellings.

Aggregates add and divide numbers that arrive and leave one by one over a stream. Done in binary
floating point, a long run of inserts and deletes would drift; so every finite value is held as an
exact :class:`~fractions.Fraction` (an ``xsd:float`` one as the float it denotes) and only the
result is rounded, once, to its type. Sums are then exact and independent of the order values
came in, which is what lets a group's answer be recomputed from its values at any time.

Types rank by promotion (XPath op:numeric-add): integer < decimal < float < double; the derived
integer types (``xsd:int``, ``xsd:long``...) count as integer. Results are spelled canonically
(XML Schema 1.1): integers as digits; decimals without exponent or trailing zeros (``"3"``,
``"1.75"``); floats and doubles as ``1.0E3``, ``INF``, ``-INF``, ``NaN``.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from .filters import INTEGER_TYPES, const_kind
from .terms import XSD, literal, split_literal

INTEGER, DECIMAL, FLOAT, DOUBLE = 0, 1, 2, 3
_RANK_OF = {**{XSD + t: INTEGER for t in INTEGER_TYPES}, XSD + "decimal": DECIMAL, XSD + "float": FLOAT,
            XSD + "double": DOUBLE}
_DATATYPE = {INTEGER: XSD + "integer", DECIMAL: XSD + "decimal", FLOAT: XSD + "float", DOUBLE: XSD + "double"}
#: Digits kept after the point by a decimal division (truncated toward zero, as Oxigraph does), or
#: more when the quotient is small, so that it keeps this many significant digits.
DECIMAL_DIGITS = 18


@dataclass(frozen=True)
class Number:
    """A numeric value and its type's promotion rank; ``value`` is exact (a Fraction) when finite,
    a float for INF, -INF and NaN."""

    rank: int
    value: Fraction | float


def number(term: str) -> Number | None:
    """The value of a numeric literal (canonical N-Triples), or None for any other term."""
    if const_kind(term) != "num":
        return None
    lexical, _, datatype = split_literal(term)
    rank = _RANK_OF[datatype]
    if rank == INTEGER:
        return Number(rank, Fraction(int(lexical)))
    if rank == DECIMAL:
        return Number(rank, Fraction(Decimal(lexical)))
    if rank == FLOAT and lexical.lstrip("+-") not in ("INF", "NaN"):
        return Number(rank, Fraction(float32(Fraction(Decimal(lexical)))))
    value = float(lexical)
    return Number(rank, Fraction(value) if math.isfinite(value) else value)


def total(terms: list[tuple[Number, int]]) -> Number:
    """The sum of numbers, each with a multiplicity, in the promoted type of them all (exact until
    this one rounding; integer 0 for no numbers)."""
    rank = max((n.rank for n, _ in terms), default=INTEGER)
    special = [n.value for n, _ in terms if isinstance(n.value, float)]
    if special:
        if any(math.isnan(v) for v in special) or (math.inf in special and -math.inf in special):
            return Number(rank, math.nan)
        return Number(rank, special[0])
    return Number(rank, sum((n.value * mult for n, mult in terms), Fraction(0)))


def divide(dividend: Number, divisor: int) -> Number:
    """``dividend`` divided by a positive count (AVG): an integer dividend gives a decimal (XPath's
    op:numeric-divide), truncated as :func:`arithmetic` truncates; a float or double quotient stays
    exact until spelled, so AVG rounds once, as SUM does."""
    rank = max(dividend.rank, DECIMAL)
    if isinstance(dividend.value, float):
        return Number(rank, dividend.value)
    quotient = dividend.value / divisor
    return Number(rank, quotient if rank > DECIMAL else _truncated(quotient))


def arithmetic(op: str, left: Number, right: Number) -> Number | None:
    """XPath's op:numeric-add, -subtract, -multiply and -divide (``op`` is ``+ - * /``) in the type
    both promote to; None for an error (an integer or decimal division by zero).

    Integer and decimal results are exact, except that a division (whose integer operands give a
    decimal) is truncated after :data:`DECIMAL_DIGITS` digits, as Oxigraph's is. Float and double
    follow IEEE 754: each operand is read in the result's type, and a division by zero gives INF,
    -INF or NaN."""
    rank = max(left.rank, right.rank, DECIMAL if op == "/" else INTEGER)
    if rank >= FLOAT or isinstance(left.value, float) or isinstance(right.value, float):
        x, y = _in_type(left, rank), _in_type(right, rank)
        if op == "/" and y == 0:
            value = math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y)
        else:
            value = {"+": x + y, "-": x - y, "*": x * y}[op] if op != "/" else x / y
        if rank == FLOAT:
            value = _to_float32(value)
        return Number(rank, Fraction(value) if math.isfinite(value) else value)
    if op == "/":
        return None if right.value == 0 else Number(rank, _truncated(left.value / right.value))
    return Number(rank, {"+": left.value + right.value, "-": left.value - right.value,
                         "*": left.value * right.value}[op])


def negate(n: Number) -> Number:
    """XPath's op:numeric-unary-minus: the same type, the sign flipped (a zero stays ``0``: finite
    values are held exactly, and an exact zero has no sign)."""
    return Number(n.rank, -n.value)


def _in_type(n: Number, rank: int) -> float:
    """A number promoted to float (single precision, held in a Python float) or double."""
    if isinstance(n.value, float):
        return n.value
    return float32(n.value) if rank == FLOAT else float(n.value)


def _truncated(quotient: Fraction) -> Fraction:
    """A decimal quotient truncated toward zero after :data:`DECIMAL_DIGITS` digits (more for a
    quotient below 0.1, so that it keeps that many significant digits)."""
    digits = DECIMAL_DIGITS
    if quotient and abs(quotient) < Fraction(1, 10):
        digits += -math.floor(math.log10(abs(quotient))) - 1
    scale = 10 ** digits
    return Fraction(math.trunc(quotient * scale), scale)


def spell(n: Number) -> str:
    """The canonical literal of a number in its type."""
    if n.rank == INTEGER:
        text = str(int(n.value))
    elif n.rank == DECIMAL:
        text = _decimal_text(n.value)
    else:
        text = _floating_text(_to_float32(float(n.value)) if n.rank == FLOAT else float(n.value), n.rank == FLOAT)
    return literal(text, None, _DATATYPE[n.rank])


def integer(value: int) -> str:
    """An ``xsd:integer`` literal (a count)."""
    return spell(Number(INTEGER, Fraction(value)))


def _decimal_text(value: Fraction | float) -> str:
    """A finite decimal value (its denominator divides a power of ten) without exponent or
    trailing zeros."""
    sign = "-" if value < 0 else ""
    value = abs(Fraction(value))
    whole, rest = divmod(value.numerator, value.denominator)
    if not rest:
        return f"{sign}{whole}" if whole else "0"
    digits = ""
    while rest:
        rest *= 10
        digit, rest = divmod(rest, value.denominator)
        digits += str(digit)
    return f"{sign}{whole}.{digits}"


def _to_float32(value: float) -> float:
    """The nearest single-precision value (``xsd:float`` arithmetic), kept in a Python float."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


#: The least magnitude that rounds to an infinite float: halfway between the largest float and 2**128.
_FLOAT32_OVERFLOW = Fraction(2 ** 128 - 2 ** 103)


def float32(value: Fraction) -> float:
    """The float nearest an exact value (ties to even), as Java's ``Float.parseFloat`` reads a
    decimal string, kept in a Python float. Rounding to a double first and then to a float would,
    rarely, round twice the wrong way."""
    if abs(value) >= _FLOAT32_OVERFLOW:
        return math.copysign(math.inf, value)
    near = _to_float32(float(value))
    if math.isinf(near):          # the double rounded up onto the overflow boundary
        return math.copysign(_FLOAT_MAX, value)
    if Fraction(near) == value:
        return near
    other = _step32(near, up=Fraction(near) < value)
    gap_near, gap_other = abs(Fraction(near) - value), abs(Fraction(other) - value)
    if gap_near != gap_other:
        return near if gap_near < gap_other else other
    return near if _bits32(near) % 2 == 0 else other


_FLOAT_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]


def _bits32(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _step32(value: float, up: bool) -> float:
    """The next float above (``up``) or below a finite float."""
    if value == 0:
        tiny = struct.unpack("<f", struct.pack("<I", 1))[0]
        return tiny if up else -tiny
    bits = _bits32(value) + (1 if (value > 0) == up else -1)
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _floating_text(value: float, single: bool) -> str:
    """XML Schema's canonical float/double: the shortest digits that read back to the same value
    (in single precision for a float), as ``d.dddEn``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    if value == 0:
        return "-0.0E0" if math.copysign(1, value) < 0 else "0.0E0"
    if single:
        text = next(t for t in (f"{value:.{p}e}" for p in range(9)) if _to_float32(float(t)) == value)
    else:
        text = repr(value)
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    shown = "".join(map(str, digits))
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{exponent + len(shown) - 1}"
