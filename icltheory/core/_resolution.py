"""The resolution of a claim's predictions: the smallest error in each predicted constant that
the claim's checks notice, measured by planting it.

For a constant of kind ``value`` the error is relative: the prediction is replaced by
p·(1 + δ) and by p·(1 − δ), the latter for δ < 1 only (so a probe never changes p's sign: p·(1 − 10)
would be outside a prediction's valid range, not a refutation; one list position at a time, up to
:data:`~icltheory.core._claim.WRONG_POSITIONS` positions), and δ is found by bisection on
log δ between 1e-12 and 10 — the smallest δ at which **every** planted value fails (so an error
of that size, in any direction and at any position, turns the verdict to ``fails``).  A zero
prediction is perturbed by an absolute δ instead.  A ``lower_bound`` is raised (an
``upper_bound`` lowered) until it fails: that δ is how much stronger the bound could be stated.
Counts and orders are judged exactly (any change fails: checked with the planted wrong values).

A constant that fails at every error tried, down to 1e-12, is recorded as exact (an identity).
Each resolution is then **verified**: at δ every planted value fails, and at δ/10 in the
direction that set δ the verdict does not: it holds, or it is inconclusive where the checks
cannot decide an error that small (a bound stated tighter than its certificate proves is not
proved, and not refuted either), and that verdict is recorded; a check whose verdict at δ/10
still fails is not monotone in the error, and is reported so, not hidden.  One measurement serves every
judgement, so the cost is that of the judge (cheap for most claims).

``scripts/resolution.py`` measures every built-in claim at the quick and standard profiles and
writes ``proofs/resolutions.json``; ``icltheory describe`` and the reports show it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

__all__ = ["Resolution", "measure_resolution", "load_resolutions", "load_resolution_sources",
           "claim_source_hash", "resolution_text", "RESOLUTIONS_FILE"]

#: where the built-in claims' measured resolutions are kept
RESOLUTIONS_FILE = Path(__file__).resolve().parents[2] / "proofs" / "resolutions.json"
_LO, _HI = 1e-12, 10.0
#: the largest relative error a prediction is lowered by: p·(1 − δ) keeps p's sign
_LOWER_MAX = 1.0 - 1e-9


@dataclass
class Resolution:
    """``delta``: the smallest error (relative, or absolute when ``absolute``) that fails in
    every direction tried; ``None`` with ``note`` when it could not be measured; ``exact``: a
    count or order (any change fails); ``verified``: fails at δ and not at δ/10; ``below``:
    the verdict at δ/10 (``holds``, or ``inconclusive`` where an error that small is undecided);
    ``by_position``: for a list, each probed position's own δ (``None``: no error tried there
    fails), since one tolerance shared by entries of different sizes resolves the large ones
    relatively finer than δ, the worst of them, says."""

    key: str
    kind: str
    delta: float | None
    absolute: bool = False
    exact: bool = False
    verified: bool = False
    note: str = ""
    by_position: dict[str, float | None] | None = None
    below: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for JSON)."""
        return asdict(self)


def _perturbed(value: Any, pos: int | None, factor_or_shift: float, absolute: bool) -> Any:
    def one(x: float) -> float:
        return x + factor_or_shift if absolute else x * (1.0 + factor_or_shift)

    if pos is None:
        return one(float(value))
    out = list(value)
    out[pos] = one(float(out[pos]))
    return out


def _positions(value: Any) -> list[int | None]:
    from ._claim import WRONG_POSITIONS

    if not isinstance(value, (list, tuple)):
        return [None]
    n = len(value)
    return [int(i) for i in sorted({round(i * (n - 1) / max(min(n, WRONG_POSITIONS) - 1, 1))
                                    for i in range(min(n, WRONG_POSITIONS))})]


def measure_resolution(claim: Any, setting: Any, *, measurement: Any = None,
                       keys: list[str] | None = None, steps: int = 24,
                       progress: Callable[[str], None] | None = None) -> dict[str, Resolution]:
    """The resolution of each judged predicted constant of ``claim`` at ``setting`` (see the
    module docstring); ``measurement``: a measurement to reuse (else one is made)."""
    from ._claim import judge_claim, measure_claim

    m = measurement if measurement is not None else measure_claim(claim, setting)
    consts = claim.constants(setting)
    base = judge_claim(claim, setting, m, constants=consts)
    out: dict[str, Resolution] = {}
    for key, pred in claim.predictions.items():
        if pred.informational or (keys is not None and key not in keys):
            continue
        if base.verdict != "holds":
            out[key] = Resolution(key, pred.kind, None, note=f"the defaults are {base.verdict}")
            continue
        true = consts[key]

        def verdict(value: Any, key: str = key) -> str:
            from ._errors import BadInput

            try:
                return judge_claim(claim, setting, m, predict={key: value}, constants=consts).verdict
            except BadInput:  # a probe outside the prediction's valid range refutes nothing
                return "bad input"

        if pred.kind in ("count", "order"):
            wrong = pred.wrong_values(true)
            ok = bool(wrong) and all(verdict(w) == "fails" for w in wrong)
            out[key] = Resolution(key, pred.kind, None, exact=True, verified=ok,
                                  note="" if ok else "a planted wrong count/order did not fail")
            continue
        numbers = true if isinstance(true, (list, tuple)) else [true]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                   and math.isfinite(x) for x in numbers):
            out[key] = Resolution(key, pred.kind, None, note="not a finite number")
            continue
        absolute = all(x == 0 for x in numbers)
        signs = {"lower_bound": (+1,), "upper_bound": (-1,)}.get(pred.kind, (+1, -1))
        worst, worst_at = 0.0, (_positions(true)[0], signs[0])
        note = ""
        per_pos: dict[str, float | None] = {}
        for pos in _positions(true):
            if pos is not None and float(true[pos]) == 0.0 and not absolute:
                continue  # a zero entry of a nonzero list: relative errors do not move it
            for sign in signs:
                def fails(d: float, pos: int | None = pos, sign: int = sign, true: Any = true,
                          absolute: bool = absolute) -> bool:
                    return verdict(_perturbed(true, pos, sign * d, absolute)) == "fails"

                # a relative error lowers p at most to p·1e-9 (never through 0 to the other sign)
                top = _HI if sign > 0 or absolute else _LOWER_MAX
                if not fails(top):
                    note = (f"an error of {top:.9g}× at position {pos} ({'+' if sign > 0 else '−'}) "
                            "does not fail")
                    worst = math.inf
                    per_pos[str(pos)] = None
                    continue
                lo, hi = math.log(_LO), math.log(top)
                if fails(_LO):
                    hi = lo
                else:
                    for _ in range(steps):
                        mid = 0.5 * (lo + hi)
                        if fails(math.exp(mid)):
                            hi = mid
                        else:
                            lo = mid
                if math.exp(hi) > worst:
                    worst, worst_at = math.exp(hi), (pos, sign)
                prev = per_pos.get(str(pos), 0.0)
                if prev is not None:  # None: an error at this position that never fails
                    per_pos[str(pos)] = max(prev, math.exp(hi))
        if progress is not None:
            progress(key)
        by_position = per_pos if isinstance(true, (list, tuple)) and len(per_pos) > 1 else None
        if not math.isfinite(worst):
            out[key] = Resolution(key, pred.kind, None, absolute, note=note, by_position=by_position)
            continue
        if worst <= _LO * (1 + 1e-9):  # every error tried fails, the smallest included: an identity
            out[key] = Resolution(key, pred.kind, _LO, absolute, exact=True, verified=True,
                                  note=f"fails at every error tried, down to {_LO:g}")
            continue
        d = worst
        at = all(verdict(_perturbed(true, p, s * d, absolute)) == "fails"
                 for p in _positions(true) for s in signs
                 if p is None or float(true[p]) != 0.0 or absolute)
        below = verdict(_perturbed(true, worst_at[0], worst_at[1] * d / 10, absolute))
        ok = at and below in ("holds", "inconclusive")
        out[key] = Resolution(key, pred.kind, d, absolute, verified=ok,
                              note="" if ok else
                              f"not monotone: at δ {'fails' if at else 'not fails'}, at δ/10 "
                              f"{below}", by_position=by_position, below=below)
    return out


def claim_source_hash(claim: Any) -> str:
    """SHA-256 of the source file that defines ``claim``'s class (its judge): a resolution
    measured under another version of that file is stale.  Shared helpers the judge calls (the
    paper's ``claims/_common.py``, ``icltheory.core``) are not covered: after changing one,
    re-measure the claims that use it."""
    import hashlib
    import inspect

    src = inspect.getsourcefile(type(claim))
    return hashlib.sha256(Path(src).read_bytes()).hexdigest() if src else ""


def _load_section(name: str, path: Path | None) -> dict[str, Any]:
    """One top-level section of the resolutions file, or {} when the file is absent or unreadable."""
    p = path or RESOLUTIONS_FILE
    try:
        return json.loads(p.read_text(encoding="utf-8")).get(name, {})
    except (OSError, ValueError):
        return {}


def load_resolution_sources(path: Path | None = None) -> dict[str, str]:
    """Claim id → :func:`claim_source_hash` of the source its resolutions were measured with."""
    return _load_section("sources", path)


def load_resolutions(path: Path | None = None) -> dict[str, Any]:
    """The measured resolutions (claim id → profile → key → record), or {} when absent."""
    return _load_section("claims", path)


def resolution_text(record: dict[str, Any]) -> str:
    """'an error of ≥ 0.3 % (relative)' and the like, for describe and the reports."""
    if record.get("exact"):
        if record.get("kind") in ("count", "order"):
            return "exact: any change of the count or order fails"
        return f"exact: every error tried fails, down to {record.get('delta') or _LO:g}"
    d = record.get("delta")
    if d is None:
        return f"not measured ({record.get('note') or 'unknown'})"
    kind = record.get("kind")
    absolute = bool(record.get("absolute"))
    size = _size(d, absolute)
    what = {"lower_bound": "a bound stated higher by", "upper_bound": "a bound stated lower by"}
    prefix = what.get(str(kind), "an error of")
    tail = "" if record.get("verified") else f" [{record.get('note') or 'not verified'}]"
    if record.get("verified") and record.get("below") == "inconclusive":  # an undecided zone below δ
        tail = f" (at {_size(d / 10, absolute)}: inconclusive)"
    by = record.get("by_position") or {}
    finite = [v for v in by.values() if v is not None]
    if len(finite) > 1 and min(finite) < 0.5 * max(finite):  # entries resolved differently: say so
        tail = (" (by entry: " + ", ".join(f"[{k}] {_size(v, absolute) if v is not None else 'none'}"
                                            for k, v in sorted(by.items(), key=lambda kv: int(kv[0])))
                + ")" + tail)
    return f"{prefix} ≥ {size} fails{tail}"


def _size(d: float, absolute: bool) -> str:
    if absolute:
        return f"{d:.2g} (absolute)"
    # two significant digits, written out in full where that is short (110 %, not 1.1e+02 %)
    return f"{float(f'{100 * d:.2g}'):g} %" if d >= 1e-4 else f"{d:.2g} (relative)"
