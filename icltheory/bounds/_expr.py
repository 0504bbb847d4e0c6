r"""A small, bounded expression language evaluated in arb (python-flint).

Users type constants such as ``16*R^2*exp(4*R^2)/n``.  Handing such text to SymPy (or Python)
is unsafe and can run without limit (``9^9^9`` in exact arithmetic), so this module parses it
itself, with hard limits, and evaluates it in ball arithmetic at a bounded precision:

* grammar: numbers (``12``, ``1.5e-3``), names given by the caller, ``+ - * /``, ``^`` or
  ``**`` (right-associative), parentheses and the functions ``exp``, ``log``, ``sqrt``; the
  constants ``pi`` and ``E``;
* limits: at most :data:`MAX_CHARS` characters, :data:`MAX_NODES` nodes, nesting depth
  :data:`MAX_DEPTH`, decimal exponents of literals within ±:data:`MAX_LITERAL_EXP`;
* evaluation: every intermediate ball must be finite with magnitude below
  ``exp(MAX_LOG_MAGNITUDE)``; ``exp``/``^`` check their argument *before* computing, so no
  operation can take unbounded time or memory.

Errors raise :class:`ExpressionError` (a ``ValueError``) with a one-line message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

__all__ = ["Expression", "ExpressionError", "parse_expression", "MAX_CHARS", "MAX_NODES",
           "MAX_DEPTH", "MAX_LITERAL_EXP", "MAX_LOG_MAGNITUDE"]

MAX_CHARS = 400
MAX_NODES = 200
MAX_DEPTH = 32
MAX_LITERAL_EXP = 400
#: no intermediate value may exceed e^this in magnitude (1e6: far beyond any useful constant)
MAX_LOG_MAGNITUDE = 1e6

#: ASCII only: ``\d`` would also read other scripts' digits (``٣١`` as 31)
_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_]\w*)"
                    r"|(?P<op>\*\*|[-+*/^(),]))", re.ASCII)
_FUNCS = ("exp", "log", "sqrt")
_CONSTS = ("pi", "E")


class ExpressionError(ValueError):
    """The text is not a valid bounded expression, or its value cannot be enclosed."""


@dataclass(frozen=True)
class Expression:
    """A parsed expression: ``tree`` is nested tuples (``("num", text)``, ``("name", s)``,
    ``(op, a, b)``, ``("neg", a)``, ``("call", f, a)``)."""

    text: str
    tree: tuple
    names: frozenset

    def evaluate(self, values: Mapping[str, object], prec: int = 212):
        """The value as an arb ball at ``prec`` bits; ``values`` maps names to ints, floats
        (taken as their exact binary value) or arbs."""
        import flint

        old = flint.ctx.prec
        try:
            flint.ctx.prec = int(prec)
            return _eval(self.tree, values)
        finally:
            flint.ctx.prec = old


    def to_sympy(self, values: Mapping[str, object] | None = None, *, max_nodes: int = 60,
                 max_power: int = 8):
        """The expression in SymPy (names as positive symbols, or the exact ``values``: ints,
        floats as their exact binary rationals), or ``None`` when it is larger than
        ``max_nodes`` or has an integer power beyond ``max_power`` (so that exact
        simplification of the result stays cheap)."""
        import sympy as sp

        if _count(self.tree) > max_nodes:
            return None
        vals = {k: (sp.Integer(v) if isinstance(v, int) else sp.Rational(float(v)))  # type: ignore[arg-type]
                for k, v in (values or {}).items()}
        try:
            return _sym(self.tree, vals, max_power)
        except _TooBig:
            return None


class _TooBig(Exception):
    pass


def _count(node) -> int:
    return 1 + sum(_count(c) for c in node[1:] if isinstance(c, tuple))


def _sym(node, vals, max_power):
    import sympy as sp

    kind = node[0]
    if kind == "num":
        return sp.Rational(node[1])
    if kind == "name":
        return vals.get(node[1], sp.Symbol(node[1], positive=True))
    if kind == "const":
        return sp.pi if node[1] == "pi" else sp.E
    if kind == "neg":
        return -_sym(node[1], vals, max_power)
    if kind == "call":
        return {"exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt}[node[1]](
            _sym(node[2], vals, max_power))
    a, b = _sym(node[1], vals, max_power), _sym(node[2], vals, max_power)
    if kind == "^":
        if b.is_Integer and abs(int(b)) > max_power:
            raise _TooBig
        if not b.is_Rational and not (b.is_Integer):
            raise _TooBig
        return a ** b
    return {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[kind]


def parse_expression(text: str, names: tuple[str, ...]) -> Expression:
    """Parse ``text`` with the variables ``names`` (see the module docstring for the limits)."""
    t = str(text).strip()
    if not t:
        raise ExpressionError("empty expression")
    if len(t) > MAX_CHARS:
        raise ExpressionError(f"longer than {MAX_CHARS} characters")
    tokens, pos = [], 0
    while pos < len(t):
        m = _TOKEN.match(t, pos)
        if not m or m.end() == pos:
            rest = t[pos:].strip()
            if not rest:
                break
            raise ExpressionError(f"unexpected character {rest[0]!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
    p = _Parser(tokens, set(names))
    tree = p.expr(0)
    if p.i != len(tokens):
        raise ExpressionError(f"unexpected {tokens[p.i][1]!r}")
    if p.nodes > MAX_NODES:
        raise ExpressionError(f"more than {MAX_NODES} terms")
    return Expression(t, tree, frozenset(p.used))


class _Parser:
    def __init__(self, tokens, names):
        self.t, self.i, self.names, self.nodes, self.used = tokens, 0, names, 0, set()

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise ExpressionError(f"expected {value!r}" if value else "unexpected end")
        self.i += 1
        return tok

    def node(self, *parts, depth):
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExpressionError(f"more than {MAX_NODES} terms")
        if depth > MAX_DEPTH:
            raise ExpressionError(f"nested deeper than {MAX_DEPTH}")
        return parts

    def expr(self, depth):
        a = self.term(depth + 1)
        while self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            a = self.node(op, a, self.term(depth + 1), depth=depth)
        return a

    def term(self, depth):
        a = self.unary(depth + 1)
        while self.peek()[1] in ("*", "/"):
            op = self.take()[1]
            a = self.node(op, a, self.unary(depth + 1), depth=depth)
        return a

    def unary(self, depth):
        if depth > MAX_DEPTH:
            raise ExpressionError(f"nested deeper than {MAX_DEPTH}")
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            a = self.unary(depth + 1)
            return a if op == "+" else self.node("neg", a, depth=depth)
        return self.power(depth + 1)

    def power(self, depth):
        a = self.atom(depth + 1)
        if self.peek()[1] in ("^", "**"):
            self.take()
            a = self.node("^", a, self.unary(depth + 1), depth=depth)
        return a

    def atom(self, depth):
        kind, val = self.peek()
        if kind == "num":
            self.take()
            m = re.search(r"[eE]([+-]?\d+)$", val)
            if m and (len(m.group(1)) > 6 or abs(int(m.group(1))) > MAX_LITERAL_EXP):
                raise ExpressionError(f"the exponent of {val[:30]!r} is beyond ±{MAX_LITERAL_EXP}")
            if len(val) > 60:
                raise ExpressionError("a number longer than 60 characters")
            return self.node("num", val, depth=depth)
        if kind == "name":
            self.take()
            if val in _FUNCS:
                self.take("(")
                arg = self.expr(depth + 1)
                self.take(")")
                return self.node("call", val, arg, depth=depth)
            if val in _CONSTS:
                return self.node("const", val, depth=depth)
            if val not in self.names:
                allowed = ", ".join(sorted(self.names) + list(_CONSTS) + list(_FUNCS))
                raise ExpressionError(f"unknown name {val[:30]!r} (allowed: {allowed})")
            self.used.add(val)
            return self.node("name", val, depth=depth)
        if val == "(":
            self.take()
            a = self.expr(depth + 1)
            self.take(")")
            return a
        raise ExpressionError("unexpected end" if kind is None else f"unexpected {val!r}")


def _arb(v):
    import flint

    if isinstance(v, flint.arb):
        return v
    if isinstance(v, bool):
        raise ExpressionError("a boolean is not a number")
    if isinstance(v, (int, float)):
        return flint.arb(v)
    raise ExpressionError(f"cannot use {type(v).__name__} as a number")


def _guard(x):
    """x must be a finite ball of magnitude < e^MAX_LOG_MAGNITUDE."""
    import flint

    if not x.is_finite():
        raise ExpressionError("the value is not finite (division by zero or overflow)")
    big = flint.arb(MAX_LOG_MAGNITUDE).exp()
    if not abs(x) < big:
        raise ExpressionError(f"a value exceeds e^{MAX_LOG_MAGNITUDE:g}")
    return x


def _eval(node, values):
    import flint

    kind = node[0]
    if kind == "num":
        text = node[1]
        if re.fullmatch(r"\d+", text):
            return flint.arb(int(text))
        mant, _, ex = text.lower().partition("e")
        ip, _, fp = mant.partition(".")
        num = int((ip or "0") + fp)
        exp10 = (int(ex) if ex else 0) - len(fp)
        return _guard(flint.arb(num) * flint.arb(10) ** exp10 if exp10 >= 0
                      else flint.arb(num) / flint.arb(10) ** (-exp10))
    if kind == "name":
        return _arb(values[node[1]])
    if kind == "const":
        return flint.arb.pi() if node[1] == "pi" else flint.arb(1).exp()
    if kind == "neg":
        return -_eval(node[1], values)
    if kind == "call":
        x = _eval(node[2], values)
        if node[1] == "exp":
            if not x < MAX_LOG_MAGNITUDE:
                raise ExpressionError(f"exp of a value beyond {MAX_LOG_MAGNITUDE:g}")
            return _guard(x.exp())
        if not x > 0 and node[1] == "log":
            raise ExpressionError("log of a value that is not certainly positive")
        if not x >= 0 and node[1] == "sqrt":
            raise ExpressionError("sqrt of a value that is not certainly non-negative")
        return _guard(x.log() if node[1] == "log" else x.sqrt())
    a, b = _eval(node[1], values), _eval(node[2], values)
    if kind == "+":
        return _guard(a + b)
    if kind == "-":
        return _guard(a - b)
    if kind == "*":
        return _guard(a * b)
    if kind == "/":
        if not (b > 0 or b < 0):
            raise ExpressionError("division by a value that may be zero")
        return _guard(a / b)
    # power: an exact integer exponent of moderate size, else exp(b·log a) for a > 0
    if b.is_exact() and b.is_integer() and abs(b) <= 4096:
        k = int(b.unique_fmpz())
        if k < 0 and not (a > 0 or a < 0):
            raise ExpressionError("a negative power of a value that may be zero")
        if not (abs(a) <= 1 or abs(b) * abs(a).log() < MAX_LOG_MAGNITUDE):
            raise ExpressionError(f"a power beyond e^{MAX_LOG_MAGNITUDE:g}")
        return _guard(a ** k)
    if not a > 0:
        raise ExpressionError("a non-integer power of a value that is not certainly positive")
    e = b * a.log()
    if not e < MAX_LOG_MAGNITUDE:
        raise ExpressionError(f"a power beyond e^{MAX_LOG_MAGNITUDE:g}")
    return _guard(e.exp())
