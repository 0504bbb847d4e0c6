"""Central differences for the tests that hold a hand-written gradient against its loss."""

from __future__ import annotations

import numpy as np


def central_differences(loss, p: dict, *, eps: float = 1e-6, entries: int | None = None, rng=None) -> dict:
    """``∂loss/∂p[name]`` by central differences for every array of the parameter dict ``p``
    (``loss`` takes such a dict): at every entry, or with ``entries`` at that many random
    entries per array (drawn from ``rng``; the others ``nan``)."""
    out = {}
    for name, P in p.items():
        fd = np.full(np.shape(P), np.nan)
        flat = range(fd.size) if entries is None else sorted(set(rng.integers(0, fd.size, entries).tolist()))
        for i in flat:
            idx = np.unravel_index(i, fd.shape)
            hi, lo = {k: np.array(v, dtype=float) for k, v in p.items()}, {k: np.array(v, dtype=float) for k, v in p.items()}
            hi[name][idx] += eps
            lo[name][idx] -= eps
            fd[idx] = (loss(hi) - loss(lo)) / (2 * eps)
        out[name] = fd
    return out
