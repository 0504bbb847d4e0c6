"""Numeric views of SymPy expressions that keep their expression (so they pickle)."""

from __future__ import annotations

from typing import Any

__all__ = ["Lowered", "lowered"]


class Lowered:
    """``sympy.lambdify(args, expr, modules)``, made on the first call and kept.  It pickles as
    ``(args, expr, modules)``, so an object holding it can be stored in the disk cache of
    derivations; the function made after unpickling is the one ``lambdify`` makes from the same
    expression."""

    __slots__ = ("args", "expr", "modules", "_fn")

    def __init__(self, args: Any, expr: Any, modules: Any = "numpy") -> None:
        self.args, self.expr, self.modules = args, expr, modules
        self._fn: Any = None

    def __call__(self, *values: Any) -> Any:
        fn = self._fn
        if fn is None:
            import sympy as sp

            fn = self._fn = sp.lambdify(self.args, self.expr, self.modules)
        return fn(*values)

    def __reduce__(self) -> tuple:
        return (Lowered, (self.args, self.expr, self.modules))

    def __repr__(self) -> str:
        return f"Lowered({self.args!r}, {self.expr!r}, {self.modules!r})"


def lowered(args: Any, expr: Any, modules: Any = "numpy") -> Lowered:
    """``expr`` as a numeric function of ``args`` (see :class:`Lowered`)."""
    return Lowered(args, expr, modules)
