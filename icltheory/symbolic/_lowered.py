"""Numeric views of SymPy expressions that keep their expression (so they pickle)."""

from __future__ import annotations

from typing import Any

__all__ = ["Lowered", "lowered", "lambdify_modules"]


def lambdify_modules(modules: Any) -> Any:
    """What ``sympy.lambdify`` is given for ``modules``: ``"numpy"`` becomes NumPy's own
    namespaces in the priority the string gives them (``numpy.linalg`` over ``numpy``), as
    module objects (a dict would make its names user functions), so lambdify does not execute
    ``from numpy import *`` (which loads NumPy's lazily imported submodules, ≈ 50 ms a
    process); the printer (chosen by the module's name) and the generated code are the same.
    Anything else is passed as it is."""
    if not (isinstance(modules, str) and modules == "numpy"):
        return modules
    import numpy as np

    return [np.linalg, np]


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

            fn = self._fn = sp.lambdify(self.args, self.expr, lambdify_modules(self.modules))
        return fn(*values)

    def __reduce__(self) -> tuple:
        return (Lowered, (self.args, self.expr, self.modules))

    def __repr__(self) -> str:
        return f"Lowered({self.args!r}, {self.expr!r}, {self.modules!r})"


def lowered(args: Any, expr: Any, modules: Any = "numpy") -> Lowered:
    """``expr`` as a numeric function of ``args`` (see :class:`Lowered`)."""
    return Lowered(args, expr, modules)
