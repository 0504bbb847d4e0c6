"""JSON conversion of results: numpy, fractions, SymPy numbers, non-finite floats."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["jsonable", "dumps"]


def jsonable(v: Any) -> Any:
    """A JSON-ready copy of ``v``: NumPy scalars and arrays, fractions and SymPy numbers as
    numbers, non-finite floats as text (``"inf"``), other objects through ``as_dict`` or ``str``."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else repr(f)  # JSON has no inf/nan: state it as text
    if isinstance(v, Fraction):
        return float(v)
    if isinstance(v, np.ndarray):
        return [jsonable(x) for x in v.tolist()]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if hasattr(v, "as_dict"):
        return jsonable(v.as_dict())
    try:
        import sympy as sp

        if isinstance(v, sp.Basic):
            if v.is_number:
                if v.is_Integer:
                    return int(v)
                return jsonable(float(v))
            return str(v)
    except ImportError:  # pragma: no cover
        pass
    return str(v)


def dumps(v: Any, indent: int | None = 2) -> str:
    """JSON text of ``v`` (through :func:`jsonable`; UTF-8, no NaN)."""
    return json.dumps(jsonable(v), indent=indent, ensure_ascii=False, allow_nan=False)
