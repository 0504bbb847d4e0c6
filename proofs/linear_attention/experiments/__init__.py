"""The experiments of the linear-attention paper: data, models, trainers, flows, readings.

Everything here measures; nothing here imports the theory (a contract test walks the import
graph).  Where the theory and the measurement need the same primitive, this package has its own
implementation: β's moments from the data model with SciPy's Gaussian moment
(:mod:`._population`), the learned value of each direction by a numerical linear solve, the
eigen-order by sorting, the softmax from ``scipy.special``.

* :mod:`._data`       — sequences, rotations, Monte Carlo of β and of bilinear predictors;
* :mod:`._population` — population moments and losses (independent of the theory);
* :mod:`._models`     — the attention models, their quadratic-feature form, parametrisations;
* :mod:`._training`   — GD trainers (all through :func:`icltheory.dynamics.run_gd`);
* :mod:`._flows`      — SciPy gradient flows and the one-head plateau integral;
* :mod:`._analysis`   — learning times, plateaus and the saddles they visit;
* :mod:`._softmax`    — softmax attention and its trainer;
* :mod:`._trajectory` — the whole ATTN_M layer and its two-layer network trained side by side.
"""

import importlib

__all__ = ["analysis", "data", "flows", "models", "population", "softmax", "training", "trajectory"]


def __getattr__(name: str):
    """Submodules on first use (so importing one directly never runs a second copy of it)."""
    if name in __all__:
        return importlib.import_module(f"{__name__}._{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
