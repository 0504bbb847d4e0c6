"""The experiments of the categorical-ICL paper: the constructed Transformer, explicit parameter GD,
data, the Monte Carlo gradient, the trainers.

Everything here measures; nothing here imports the theory (a contract test walks the import
graph), and nothing here is shared with it: the softmax is the array backend's, the kernels are the attention
heads' own scores, functional GD is never written down here (the construction is run as a
Transformer; the parameter GD differentiates the loss numerically by the complex step).

* :mod:`._model`        — tokens, heads, cross-attention, forward, backprop, the constructed heads;
* :mod:`._data`         — covariates, tasks, labels, prompts, random orthogonal maps, step matrices;
* :mod:`._param_gd`     — GD on the RKHS parameter A with complex-step gradients;
* :mod:`._stationarity` — free update-head parameters, per-pair gradients, the in-S fit;
* :mod:`._training`     — GD model and free Transformer, Adam, evaluation.
"""

import importlib

__all__ = ["model", "data", "param_gd", "stationarity", "training"]


def __getattr__(name: str):
    """Submodules on first use (so importing one directly never runs a second copy of it)."""
    if name in __all__:
        return importlib.import_module(f"{__name__}._{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
