"""Numbers as people type them: decimals to the digits given, fractions, simple expressions.

A researcher types the digits a paper prints (``0.64058``), a fraction (``221/345``) or a short
expression (``sqrt(2)/3``, ``13/4*0.5^2``).  :func:`parse_number` reads any of these into a
:class:`Typed` number that remembers how precisely it was given:

* a **decimal with a point** (``0.64058``, ``1.50e-3``) stands for every number that rounds
  to it: its ``half_unit`` is half a unit in the last digit typed (5e-6, 5e-6), and a check
  judging it allows at least that much (never less than its own tolerance);
* an **integer** or an integer mantissa with an exponent (``3``, ``1e-3``) is exact;
* a **fraction or expression** is exact; it is evaluated in ball arithmetic by the bounded
  expression language of :mod:`icltheory.bounds._expr` (no names; ``+ - * / ^ **``,
  parentheses, ``exp``, ``log``, ``sqrt``, ``pi``, ``E``; hard limits on size and magnitude),
  and its value is the float nearest the ball's midpoint.

Only ASCII digits are numbers (``٣١`` is not 31).  Errors raise :class:`NumberError`, a
``ValueError`` with a one-line message.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

__all__ = ["NumberError", "Typed", "parse_number", "is_plain_decimal"]

#: a plain ASCII decimal literal
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: the longest text read as one number
MAX_NUMBER_CHARS = 200


class NumberError(ValueError):
    """The text is not a number, a fraction or a bounded expression with a finite value."""


@dataclass(frozen=True)
class Typed:
    """A number and how precisely it was typed.

    ``half_unit``: half a unit in the last digit typed (0 when the text is exact);
    ``digits``: the significant digits typed (``None`` when exact)."""

    value: float
    half_unit: float = 0.0
    digits: int | None = None
    text: str = ""

    @property
    def exact(self) -> bool:
        """True when the text denotes exactly ``value`` (up to float rounding)."""
        return self.half_unit == 0.0


def is_plain_decimal(text: str) -> bool:
    """True when ``text`` is a plain ASCII decimal literal (no operator, no name)."""
    return bool(_DECIMAL.fullmatch(text.strip()))


def parse_number(text: str) -> Typed:
    """Read ``text`` as a decimal, a fraction or a bounded expression (see the module)."""
    raw = str(text).strip()
    if not raw:
        raise NumberError("empty value")
    if len(raw) > MAX_NUMBER_CHARS:
        raise NumberError(f"longer than {MAX_NUMBER_CHARS} characters")
    if not raw.isascii():
        bad = next(ch for ch in raw if not ch.isascii())
        raise NumberError(f"non-ASCII character {bad!r}: numbers are written in ASCII digits")
    if _DECIMAL.fullmatch(raw):
        return _decimal(raw)
    return _expression(raw)


def _decimal(raw: str) -> Typed:
    try:
        value = float(raw)
    except OverflowError:  # pragma: no cover - float() returns inf rather than raising
        raise NumberError(f"{raw[:40]!r} is too large") from None
    if not math.isfinite(value):
        raise NumberError(f"{raw[:40]!r} is not a finite float")
    nonzero = any(ch in "123456789" for ch in re.split(r"[eE]", raw, maxsplit=1)[0])
    if nonzero and abs(value) < 2.2250738585072014e-308:
        raise NumberError(f"{raw[:40]!r} underflows a float")
    mantissa = re.split(r"[eE]", raw, maxsplit=1)[0]
    if "." not in mantissa:
        return Typed(value, 0.0, None, raw)
    try:
        d = Decimal(raw)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid literals
        raise NumberError(f"{raw[:40]!r} is not a decimal number") from None
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    significant = len("".join(map(str, digits)).lstrip("0")) or 1
    half = 0.5 * 10.0 ** exponent
    return Typed(value, half, significant, raw)


def _expression(raw: str) -> Typed:
    from ..bounds._expr import ExpressionError, parse_expression

    try:
        expr = parse_expression(raw, ())
        ball = expr.evaluate({})
    except ExpressionError as exc:
        raise NumberError(str(exc)) from None
    mid, rad = float(ball.mid()), float(ball.rad())
    if not math.isfinite(mid):
        raise NumberError(f"{raw[:40]!r} has no finite value")
    if rad > 1e-15 * max(abs(mid), 1e-300):
        raise NumberError(f"{raw[:40]!r} cannot be evaluated to float precision")
    return Typed(mid, 0.0, None, raw)
