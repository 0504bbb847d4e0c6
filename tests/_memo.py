"""Each claim's quick run at its defaults, computed once per test session and shared by every
test and xdist worker that needs it (the contract tests, the per-paper tests, the torch parity
tests all start from it).

A run is deterministic (same claim, setting and seed → the same bytes: the contract's
``test_recorded_setting_reproduces`` checks it by running again, in whichever worker), so a
test reading the run another worker made sees what it would have computed itself.  Runs are
kept for this session only, in the folder ``tests/conftest.py`` makes (``ICLTHEORY_TEST_MEMO``),
as pickles written atomically; nothing survives the session.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from icltheory.core import Claim, Setting, get_claim, judge_claim, measure_claim, run_check

ENV = "ICLTHEORY_TEST_MEMO"


def _path(claim_id: str) -> Path | None:
    folder = os.environ.get(ENV)
    return Path(folder) / f"{claim_id}.pkl" if folder and Path(folder).is_dir() else None


@lru_cache(maxsize=None)
def default_run(claim_id: str) -> tuple[Claim, Setting, Any, Any]:
    """``(claim, setting, measurement, verdict)`` of the claim at ``{"profile": "quick"}``."""
    c = get_claim(claim_id)
    s = c.setting({"profile": "quick"})
    path = _path(claim_id)
    if path is not None:
        try:
            stored, m, v, seconds = pickle.loads(path.read_bytes())
            if stored == s:
                _COST[claim_id] = seconds
                return c, s, m, v
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
            pass
    t0 = time.process_time()
    m = measure_claim(c, s)
    v = judge_claim(c, s, m)
    _COST[claim_id] = seconds = time.process_time() - t0
    if path is not None:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(pickle.dumps((s, m, v, seconds)))
        os.replace(tmp, path)
    return c, s, m, v


#: CPU seconds the default run took (where it was computed): the cost of one quick check
_COST: dict[str, float] = {}


def cost(claim_id: str) -> float:
    """CPU seconds of the claim's quick default run."""
    default_run(claim_id)
    return _COST[claim_id]


def check(claim_id: str, raw: dict | None = None, *, profile: str = "quick",
          predict: dict | None = None):
    """``run_check`` of the claim at ``raw`` (profile ``profile``); the shared run when that is
    the quick default setting with no ``--predict``."""
    c = get_claim(claim_id)
    setting = c.setting({**(raw or {}), "profile": profile})
    if not predict and profile == "quick" and setting == c.setting({"profile": "quick"}):
        return default_run(claim_id)[3]
    return run_check(c, setting, predict=predict or {})
