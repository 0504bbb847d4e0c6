"""A tiny evaluator of SymPy expressions over any number type: the expressions are turned once
into straight-line Python (common subexpressions shared) whose operations are the number
type's own (``+``, ``*``, ``sqr``, ``sqrt``, ``abs``, ``recip``), with every rational constant
supplied by the caller as an enclosure of its exact value.

Used by the checker with its intervals, its derivatives and python-flint ``arb`` balls, so one
program serves the box enclosures and the certified point values.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

__all__ = ["Program", "compile_program"]


@dataclass(frozen=True)
class Program:
    """``run(ops, *values)`` evaluates the expressions; ``ops`` supplies ``const(Fraction)``,
    ``sqr``, ``sqrt``, ``abs``, ``recip`` for the number type used."""

    source: str
    constants: tuple[Fraction, ...]

    @property
    def _fn(self) -> Callable:
        fn = self.__dict__.get("_compiled")
        if fn is None:
            env: dict[str, Any] = {}
            exec(compile(self.source, "<certify program>", "exec"), env)  # noqa: S102
            fn = env["_f"]
            object.__setattr__(self, "_compiled", fn)
        return fn

    def __getstate__(self) -> dict:
        return {"source": self.source, "constants": self.constants}

    def __setstate__(self, state: dict) -> None:
        object.__setattr__(self, "source", state["source"])
        object.__setattr__(self, "constants", state["constants"])

    def run(self, ops: Any, *values: Any) -> tuple:
        consts = [ops.const(c) for c in self.constants]
        return self._fn(ops, consts, *values)


def compile_program(args: Sequence[Any], exprs: Sequence[Any]) -> Program:
    """The expressions (SymPy, in the symbols ``args``) as a :class:`Program`.  Supported:
    sums, products, integer powers, square roots (``**(±1/2)``), ``Abs`` and rational
    constants; anything else raises ``ValueError``."""
    import sympy as sp

    repl, reduced = sp.cse(list(exprs), optimizations=None)
    names: dict[Any, str] = {a: f"x{i}" for i, a in enumerate(args)}
    consts: list[Fraction] = []
    index: dict[Fraction, int] = {}
    lines: list[str] = []

    def const(q: Fraction) -> str:
        if q not in index:
            index[q] = len(consts)
            consts.append(q)
        return f"c[{index[q]}]"

    def emit(e: Any) -> str:
        if e in names:
            return names[e]
        if e.is_Rational:
            return const(Fraction(int(e.p), int(e.q)))
        if e.is_Add:
            return "(" + " + ".join(emit(t) for t in e.args) + ")"
        if e.is_Mul:
            return "(" + " * ".join(emit(t) for t in e.args) + ")"
        if e.is_Pow:
            base, ex = e.args
            if ex.is_Integer:
                k = int(ex)
                b = emit(base)
                p = _power(b, abs(k))
                return p if k > 0 else f"ops.recip({p})"
            if ex == sp.Rational(1, 2):
                return f"ops.sqrt({emit(base)})"
            if ex == -sp.Rational(1, 2):
                return f"ops.recip(ops.sqrt({emit(base)}))"
            raise ValueError(f"unsupported power {ex}")
        if isinstance(e, sp.Abs):
            return f"ops.abs({emit(e.args[0])})"
        if e.is_Symbol:
            raise ValueError(f"free symbol {e} is not an argument")
        raise ValueError(f"unsupported operation {e.func}")

    for sym, e in repl:
        name = f"t{len(lines)}"
        lines.append(f"    {name} = {emit(e)}")
        names[sym] = name
    outs = [emit(e) for e in reduced]
    src = ("def _f(ops, c, " + ", ".join(f"x{i}" for i in range(len(args))) + "):\n"
           + "\n".join(lines) + ("\n" if lines else "")
           + f"    return ({', '.join(outs)},)\n")
    return Program(src, tuple(consts))


def _power(b: str, k: int) -> str:
    """b**k by squaring (k ≥ 1), as an expression string."""
    if k == 1:
        return b
    if k == 2:
        return f"ops.sqr({b})"
    half = _power(b, k // 2)
    sq = f"ops.sqr({half})"
    return sq if k % 2 == 0 else f"({sq} * {b})"
