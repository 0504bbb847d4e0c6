"""icltheory — a symbolic-numeric verifier for theorems about in-context learning.

Public API (everything the command line can do, Python can do)::

    import icltheory as it
    claim = it.get_claim("linattn.merged.sigmoid")
    setting = claim.setting({"D": 4, "N": 31, "w_init": 1e-3})
    verdict = it.run_check(claim, setting)      # verdict.verdict: 'holds' | 'fails' | 'inconclusive'
    it.write_reports([verdict], "reports/")

The names below are loaded on first use, so ``import icltheory`` is instant and loads neither
NumPy's friends SciPy and SymPy nor matplotlib; the command line relies on this to answer
``--help`` and ``list`` quickly and to turn an interrupt during start-up into one line.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # (not imported from `typing`: `import icltheory` stays instant)

__version__ = "0.1.0"

#: public name → the module that defines it
_EXPORTS = {
    "BadInput": "icltheory.core",
    "Check": "icltheory.core",
    "CheckContext": "icltheory.core",
    "Claim": "icltheory.core",
    "Cost": "icltheory.core",
    "Derivation": "icltheory.core",
    "Measurement": "icltheory.core",
    "NumericalTrouble": "icltheory.core",
    "Plot": "icltheory.core",
    "Prediction": "icltheory.core",
    "PlantedError": "icltheory.core",
    "Run": "icltheory.core",
    "Series": "icltheory.core",
    "Setting": "icltheory.core",
    "SettingError": "icltheory.core",
    "Verdict": "icltheory.core",
    "all_claims": "icltheory.core",
    "get_claim": "icltheory.core",
    "judge_claim": "icltheory.core",
    "measure_claim": "icltheory.core",
    "register": "icltheory.core",
    "run_check": "icltheory.core",
    "write_reports": "icltheory.report",
    "refute": "icltheory.explore",
    "boundary": "icltheory.explore",
}

__all__ = ["__version__", *sorted(_EXPORTS)]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from typing import Any

    from .core import BadInput as BadInput
    from .core import Check as Check
    from .core import CheckContext as CheckContext
    from .core import Claim as Claim
    from .core import Cost as Cost
    from .core import Derivation as Derivation
    from .core import Measurement as Measurement
    from .core import NumericalTrouble as NumericalTrouble
    from .core import PlantedError as PlantedError
    from .core import Plot as Plot
    from .core import Prediction as Prediction
    from .core import Run as Run
    from .core import Series as Series
    from .core import Setting as Setting
    from .core import SettingError as SettingError
    from .core import Verdict as Verdict
    from .core import all_claims as all_claims
    from .core import get_claim as get_claim
    from .core import judge_claim as judge_claim
    from .core import measure_claim as measure_claim
    from .core import register as register
    from .core import run_check as run_check
    from .explore import boundary as boundary
    from .explore import refute as refute
    from .report import write_reports as write_reports


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first access (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'icltheory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
