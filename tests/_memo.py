"""Measurements shared by the tests of one session: a claim measured at a setting once, then
judged as often as the tests ask (with or without ``--predict`` values), in every test and
xdist worker that needs it — the contract tests, the per-paper tests and the torch parity tests
all start from each claim's quick default run, and the negative controls (a wrong
``--predict``) judge the measurement the positive check made.

Sound because a measurement depends on the claim and its resolved setting only (same claim,
setting and seed → the same bytes: the contract's ``test_recorded_setting_reproduces`` checks it
by measuring again, in whichever worker), and ``--predict`` never reaches the measurement (it
replaces predicted constants, which only the judgement reads: ``judge_claim``).  While code is
patched (a planted error: ``icltheory.core.rederive``) nothing is read or kept here.  Kept for
this session only, in the folder ``tests/conftest.py`` makes (``ICLTHEORY_TEST_MEMO``), as
pickles written atomically.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any

from icltheory.core import (Claim, Setting, Verdict, _cache, get_claim, judge_claim,
                            measure_claim, run_check)
from icltheory.report import dumps

ENV = "ICLTHEORY_TEST_MEMO"

_RUNS: dict[tuple[str, str], tuple[Any, Verdict]] = {}
#: CPU seconds each measurement and judgement took where it was made
_COST: dict[tuple[str, str], float] = {}


def _key(claim: Claim, setting: Setting) -> str:
    return dumps(setting.as_dict(), indent=None)


def _path(claim_id: str, key: str) -> Path | None:
    folder = os.environ.get(ENV)
    if not folder or not Path(folder).is_dir():
        return None
    return Path(folder) / f"{claim_id}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.pkl"


def _patched() -> bool:
    return _cache._off["scopes"] > 0 or _cache._off["cleared"]


def measured(claim: Claim, setting: Setting) -> tuple[Any, Verdict]:
    """``(measurement, verdict without --predict)`` of ``claim`` at ``setting``."""
    key = _key(claim, setting)
    if (claim.id, key) in _RUNS:
        return _RUNS[claim.id, key]
    path = _path(claim.id, key)
    if path is not None:
        try:
            stored, m, v, seconds = pickle.loads(path.read_bytes())
            if stored == key:
                _RUNS[claim.id, key], _COST[claim.id, key] = (m, v), seconds
                return m, v
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
            pass
    t0 = time.process_time()
    m = measure_claim(claim, setting)
    v = judge_claim(claim, setting, m)
    seconds = time.process_time() - t0
    _RUNS[claim.id, key], _COST[claim.id, key] = (m, v), seconds
    if path is not None:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(pickle.dumps((key, m, v, seconds)))
        os.replace(tmp, path)
    return m, v


def run(claim: Claim, setting: Setting, predict: dict | None = None) -> Verdict:
    """What ``run_check(claim, setting, predict=predict)`` returns, from the shared
    measurement (measured here if no test of the session measured it yet)."""
    if claim.is_legacy() or _patched():
        return run_check(claim, setting, predict=predict or {})
    m, v = measured(claim, setting)
    return judge_claim(claim, setting, m, predict=predict) if predict else v


def default_run(claim_id: str) -> tuple[Claim, Setting, Any, Verdict]:
    """``(claim, setting, measurement, verdict)`` of the claim at ``{"profile": "quick"}``."""
    c = get_claim(claim_id)
    s = c.setting({"profile": "quick"})
    if _patched():
        m = measure_claim(c, s)
        return c, s, m, judge_claim(c, s, m)
    m, v = measured(c, s)
    return c, s, m, v


def cost(claim_id: str) -> float:
    """CPU seconds of the claim's quick default run (measured and judged), where it was made."""
    c, s, _, _ = default_run(claim_id)
    return _COST.get((claim_id, _key(c, s)), 1.0)


_INDEPENDENT: dict[str, frozenset[int]] = {}


def theory_independent(claim_id: str) -> frozenset[int]:
    """Indices (into ``claim.planted_errors``) of the theory-side errors that
    :func:`icltheory.testing.theory_independent` showed, with every one of them planted at once
    and one measurement at the quick defaults, not to reach the measurement — once per session,
    shared by the xdist workers like the measurements."""
    import icltheory.testing as itest

    if claim_id in _INDEPENDENT:
        return _INDEPENDENT[claim_id]
    c, s, m, _ = default_run(claim_id)
    path = _path(claim_id, "theory-independent " + _key(c, s))
    if path is not None and path.exists():
        try:
            _INDEPENDENT[claim_id] = frozenset(pickle.loads(path.read_bytes()))
            return _INDEPENDENT[claim_id]
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError):
            pass
    shown = itest.theory_independent(c, s, m)
    out = frozenset(i for i, e in enumerate(c.planted_errors) if any(e is x for x in shown))
    _INDEPENDENT[claim_id] = out
    if path is not None:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(pickle.dumps(sorted(out)))
        os.replace(tmp, path)
    return out
