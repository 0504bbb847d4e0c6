"""Where a claim's verdict changes along one setting key.

:func:`boundary` checks the claim at a few points between ``lo`` and ``hi`` of one numeric key
(geometric spacing when both ends are positive and ≥ 10× apart), finds each neighbouring pair
whose decided verdicts differ (``holds`` on one side, ``fails`` on the other), and narrows the
pair by bisection on the key: the new point replaces the end whose verdict it shares, and a
point that is undecided stops that pair's bisection (its interval is reported as it is).  The
result holds every point run (key value, margin, verdict) and the bracket of each change; the
figure plots the margin against the key with each change marked.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import BadInput, Claim, Plot, Series, SettingError, get_claim, run_check
from ._margin import verdict_margin

__all__ = ["Boundary", "boundary"]


@dataclass
class Boundary:
    """Points run along ``key`` (``points``: value, margin, verdict, sorted by value) and the
    brackets ``[(x_a, verdict_a, x_b, verdict_b), …]`` within which the verdict changes."""

    claim: str
    key: str
    fixed: dict[str, Any]
    profile: str
    points: list[tuple[float, float | None, str]] = field(default_factory=list)
    changes: list[tuple[float, str, float, str]] = field(default_factory=list)
    log: bool = False
    #: grid points left out: (value, "not run" — the budget was spent — or "invalid" setting)
    skipped: list[tuple[float, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The JSON record."""
        return {"claim": self.claim, "key": self.key, "fixed": self.fixed,
                "profile": self.profile, "log_scale": self.log,
                "points": [{"value": x, "margin": m, "verdict": v} for x, m, v in self.points],
                "changes": [{"from": a, "from_verdict": va, "to": b, "to_verdict": vb,
                             "width": abs(b - a)} for a, va, b, vb in self.changes],
                "skipped": [{"value": x, "why": why} for x, why in self.skipped]}

    def plot(self) -> Plot:
        """Margin against the key; each change marked by a vertical line at its midpoint."""
        colour = {"holds": "#0072B2", "fails": "#D55E00", "inconclusive": "#999999"}
        series = []
        for verdict in ("holds", "fails", "inconclusive"):
            pts = [(x, m if m is not None else 0.0) for x, m, v in self.points if v == verdict]
            if pts:
                series.append(Series([p[0] for p in pts], [max(min(p[1], 1.0), -1.0)
                                                           for p in pts],
                                     f"{verdict} ({len(pts)})", "points", colour[verdict]))
        if len(self.points) > 1:
            series.insert(0, Series([x for x, _, _ in self.points],
                                    [max(min(m, 1.0), -1.0) if m is not None else 0.0
                                     for _, m, _ in self.points], None, "dotted", "#555555"))
        mids = [((a * b) ** 0.5 if self.log else 0.5 * (a + b)) for a, _, b, _ in self.changes]
        return Plot(title=f"{self.claim}: verdict along {self.key}", xlabel=self.key,
                    ylabel="margin (1 − error/tolerance; < 0 fails; clipped to [−1, 1])",
                    series=series, hlines=[(0.0, "at the tolerance")],
                    vlines=[(x, f"change near {x:.4g}") for x in mids], logx=self.log,
                    caption=f"profile {self.profile}; fixed: "
                            + (", ".join(f"{k}={v}" for k, v in self.fixed.items()) or "none"))

    def summary(self) -> str:
        """A few lines for the terminal."""
        head = f"boundary of {self.claim} along {self.key} ({len(self.points)} runs)"
        left = {why: [x for x, w in self.skipped if w == why] for why in ("not run", "invalid")}
        tail = "".join(f"; {len(xs)} grid point{'s' if len(xs) > 1 else ''} "
                       + ("not run (the budget was spent)" if why == "not run" else "not a valid setting")
                       + f" at {self.key}={', '.join(f'{x:.6g}' for x in xs)}"
                       for why, xs in left.items() if xs)
        if not self.points:
            return f"{head}: no run was made{tail or ''}"
        if not self.changes:
            segments: list[list] = []  # runs of one verdict along the key: [verdict, first, last]
            for x, _, v in self.points:
                if segments and segments[-1][0] == v:
                    segments[-1][2] = x
                else:
                    segments.append([v, x, x])
            along = ", ".join(f"{v} at {self.key}={a:.6g}" + (f"…{b:.6g}" if b != a else "")
                              for v, a, b in segments)
            hint = ("; an inconclusive run may be decided at a larger --profile"
                    if any(v == "inconclusive" for v, _, _ in segments) else "")
            return f"{head}: no change between holds and fails found ({along}){hint}{tail}"
        def inside(a: float, b: float) -> str:  # undecided runs between a bracket's ends
            xs = [x for x, _, v in self.points if min(a, b) < x < max(a, b) and v not in ("holds", "fails")]
            return (f" (inconclusive at {self.key}={', '.join(f'{x:.6g}' for x in xs)} between them)"
                    if xs else "")

        return "\n".join([head + ":"] + [f"    {va} at {self.key}={a:.6g} → {vb} at "
                                         f"{self.key}={b:.6g}{inside(a, b)}" for a, va, b, vb in self.changes]
                         + ([f"    ({tail[2:]})"] if tail else []))


def boundary(claim: str | Claim, key: str, *, lo: float | None = None,
             hi: float | None = None, fixed: Mapping[str, Any] | None = None,
             profile: str = "quick", points: int = 5, steps: int = 6,
             budget: float | None = None,
             progress: Callable[[float, str], None] | None = None) -> Boundary:
    """Find where ``claim``'s verdict changes along ``key`` between ``lo`` and ``hi`` (the
    key's random-settings range by default); see the module docstring."""
    c = get_claim(claim) if isinstance(claim, str) else claim
    specs = c.setting_type.field_specs()
    if key not in specs or key in ("seed", "profile"):
        raise BadInput(f"--along {key}: not a setting key of {c.id}; valid: "
                       f"{', '.join(k for k in specs if k not in ('seed', 'profile'))}")
    spec = specs[key]
    if spec.kind not in ("int", "float"):
        raise BadInput(f"--along {key}: a {spec.kind} key; a boundary needs a number key")
    fixed = dict(fixed or {})
    if key in fixed:
        raise BadInput(f"--along {key}: also fixed by --set {key}=")
    sample = spec.sample or (spec.min, spec.max)
    a = float(lo if lo is not None else (sample[0] if sample and sample[0] is not None else 0))
    b = float(hi if hi is not None else (sample[1] if sample and sample[1] is not None else 1))
    if not (math.isfinite(a) and math.isfinite(b)) or a == b:
        raise BadInput(f"--from/--to: need two different finite ends, got {a:g} and {b:g}")
    a, b = min(a, b), max(a, b)
    if not 2 <= points <= 50 or not 0 <= steps <= 30:
        raise BadInput("--points must be 2..50 and --steps 0..30")
    if budget is not None and not (isinstance(budget, (int, float)) and math.isfinite(budget)
                                   and 0 < budget <= 86400):
        raise BadInput(f"--budget: expected seconds in (0, 86400], got {budget!r}")
    log = a > 0 and b / a >= 10
    is_int = spec.kind == "int"
    for end in (a, b):  # both ends must be valid settings (bad input before any run)
        c.setting({**fixed, key: int(round(end)) if is_int else end, "profile": profile})
    t_end = None if budget is None else time.monotonic() + budget
    out = Boundary(c.id, key, {k: v for k, v in fixed.items()}, profile, log=log)
    seen: dict[float, tuple[float | None, str]] = {}

    def as_run(x: float) -> float:
        """The value a run at ``x`` is made at: ``x``, an int key's rounded."""
        return float(int(round(x))) if is_int else x

    def run(x: float) -> str:
        xv: Any = int(as_run(x)) if is_int else x
        if float(xv) in seen:
            return seen[float(xv)][1]
        if t_end is not None and time.monotonic() > t_end:
            return "not run"
        try:
            s = c.setting({**fixed, key: xv, "profile": profile})
        except SettingError:
            return "invalid"
        v = run_check(c, s)
        seen[float(xv)] = (verdict_margin(v), v.verdict)
        if progress is not None:
            progress(min(1.0, len(seen) / (points + 2 * steps)), f"{key}={xv:g}")
        return v.verdict

    grid = [a * (b / a) ** (i / (points - 1)) if log else a + (b - a) * i / (points - 1)
            for i in range(points)]
    verdicts = [run(x) for x in grid]
    for x, v in zip(grid, verdicts):  # as the runs would have been set (an int key rounded)
        xv = as_run(x)
        if v in ("not run", "invalid") and (xv, v) not in out.skipped:
            out.skipped.append((xv, v))
    for (x0, v0), (x1, v1) in zip(zip(grid, verdicts), zip(grid[1:], verdicts[1:])):
        if {v0, v1} != {"holds", "fails"}:
            continue
        # the bracket's ends are the values the runs were made at (an int key rounded)
        lo_x, lo_v, hi_x, hi_v = as_run(x0), v0, as_run(x1), v1
        for _ in range(steps):
            mid = math.sqrt(lo_x * hi_x) if log else 0.5 * (lo_x + hi_x)
            if is_int and (abs(hi_x - lo_x) <= 1 or as_run(mid) in (lo_x, hi_x)):
                break
            vm = run(mid)
            if vm == lo_v:
                lo_x = as_run(mid)
            elif vm == hi_v:
                hi_x = as_run(mid)
            else:
                break
        out.changes.append((lo_x, lo_v, hi_x, hi_v))
    out.points = sorted((x, m, v) for x, (m, v) in seen.items())
    return out


def write_boundary(result: Boundary, out_dir: str | Path) -> list[Path]:
    """Write ``boundary-<claim>-<key>.json`` and ``.png`` into ``out_dir`` (atomically)."""
    from ..report import atomic_write_bytes, atomic_write_text, dumps, render_png

    out = Path(out_dir)
    stem = f"boundary-{result.claim}-{result.key}"
    paths = [out / f"{stem}.json", out / f"{stem}.png"]
    atomic_write_text(paths[0], dumps(result.as_dict()) + "\n")
    atomic_write_bytes(paths[1], render_png(result.plot()))
    return paths
