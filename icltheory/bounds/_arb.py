"""Ball arithmetic with python-flint ``arb``: evaluate SymPy expressions rigorously.

``arb_eval(expr, values)`` evaluates a SymPy expression with every rational kept exact and
every transcendental function taken from arb, so the returned ball certainly contains the true
value.  Use :func:`certify_le` for a three-way CERTIFIED / REFUTED / UNDECIDED comparison.
(``mpmath.iv`` is not used: its comparisons can return ``None`` and it lacks functions.)
"""

from __future__ import annotations

from typing import Any, Mapping

import flint
import sympy as sp

__all__ = ["arb_eval", "to_arb", "certify_le", "CERTIFIED", "REFUTED", "UNDECIDED"]

CERTIFIED, REFUTED, UNDECIDED = "certified", "refuted", "undecided"

_FUNCS = {
    sp.exp: lambda a: a.exp(),
    sp.log: lambda a: a.log(),
    sp.sin: lambda a: a.sin(),
    sp.cos: lambda a: a.cos(),
    sp.tan: lambda a: a.tan(),
    sp.atan: lambda a: a.atan(),
    sp.tanh: lambda a: a.tanh(),
    sp.sqrt: lambda a: a.sqrt(),
    sp.Abs: lambda a: abs(a),
}


def to_arb(v: Any) -> flint.arb:
    """Exact conversion of ints, Fractions, SymPy rationals; floats are taken as their exact
    binary value (so ``to_arb(0.1)`` is the double nearest 0.1, not one tenth)."""
    if isinstance(v, flint.arb):
        return v
    if isinstance(v, bool):
        raise TypeError("bool is not a number")
    if isinstance(v, int):
        return flint.arb(v)
    if isinstance(v, float):
        return flint.arb(v)
    e = sp.sympify(v)
    if e.is_Integer:
        return flint.arb(int(e))
    if e.is_Rational:
        return flint.arb(int(e.p)) / flint.arb(int(e.q))
    if e.is_Float:
        return flint.arb(float(e))
    return arb_eval(e)


def arb_eval(expr: Any, values: Mapping[Any, Any] | None = None) -> flint.arb:
    """Evaluate ``expr`` (SymPy) as an arb ball; ``values`` maps symbols to numbers/arbs."""
    values = {} if values is None else values
    e = sp.sympify(expr)

    def ev(node) -> flint.arb:
        if node in values:
            return to_arb(values[node])
        if node.is_Integer:
            return flint.arb(int(node))
        if node.is_Rational:
            return flint.arb(int(node.p)) / flint.arb(int(node.q))
        if node.is_Float:
            return flint.arb(float(node))
        if node is sp.pi:
            return flint.arb.pi()
        if node is sp.E:
            return flint.arb(1).exp()
        if node.is_Add:
            acc = flint.arb(0)
            for a in node.args:
                acc += ev(a)
            return acc
        if node.is_Mul:
            acc = flint.arb(1)
            for a in node.args:
                acc *= ev(a)
            return acc
        if node.is_Pow:
            base, ex = node.args
            b = ev(base)
            if ex.is_Integer:
                k = int(ex)
                if k >= 0:
                    return b ** k
                return 1 / (b ** (-k))
            if ex == sp.Rational(1, 2):
                return b.sqrt()
            return b ** ev(ex)
        f = _FUNCS.get(node.func)
        if f is not None:
            return f(ev(node.args[0]))
        if node.is_Symbol:
            raise KeyError(f"no value given for symbol {node}")
        raise NotImplementedError(f"arb_eval cannot evaluate {node.func}")

    return ev(e)


def certify_le(lhs: flint.arb, rhs: flint.arb) -> str:
    """CERTIFIED if lhs ≤ rhs for sure, REFUTED if lhs > rhs for sure, else UNDECIDED."""
    if lhs <= rhs:
        return CERTIFIED
    if lhs > rhs:
        return REFUTED
    return UNDECIDED
