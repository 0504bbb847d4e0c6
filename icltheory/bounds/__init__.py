"""Rigorous bounds: arb ball arithmetic (python-flint), a bounded expression language,
counterexample search, certification helpers and branch and bound.

Names are loaded on first use (PEP 562), so that parsing an expression does not import SymPy.
"""

from importlib import import_module

_WHERE = {
    "CERTIFIED": "_arb", "REFUTED": "_arb", "UNDECIDED": "_arb", "arb_eval": "_arb",
    "certify_le": "_arb", "to_arb": "_arb",
    "Expression": "_expr", "ExpressionError": "_expr", "parse_expression": "_expr",
    "Certificate": "_search", "SearchResult": "_search", "certify_le_at": "_search",
    "maximize_log": "_search", "spectral_norm_upper": "_search",
}

__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
