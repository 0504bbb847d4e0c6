"""The experiments of the softmax-regression papers: the numeric model and what is measured on it.

Everything here measures; nothing here imports the theory (a contract test walks the import
graph), and nothing is shared with it: the softmax is ``scipy.special.softmax``, gradients are
the model's own closed form or finite differences, and a witness's ratio is re-evaluated in ball
arithmetic (arb) at its exact float inputs.

* :mod:`._model`   — the tensor-trick model: logits, both losses, their gradients and Hessians,
  the ratio of gradient differences (float64 and arb), the assumption set and its sampler;
* :mod:`._measure` — numeric instances, the seeded counterexample search, certified witnesses.
"""

import importlib

__all__ = ["model", "measure"]


def __getattr__(name: str):
    """Submodules on first use (so importing one directly never runs a second copy of it)."""
    if name in __all__:
        return importlib.import_module(f"{__name__}._{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
