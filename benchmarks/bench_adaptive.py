"""Benchmark: adaptive integration through plateaus against the fixed-step trainer.

Run:  python benchmarks/bench_adaptive.py [--quick] [--table]  (--table: section 3 only)

Prints, in one run:

1. **Adaptive vs fixed step** on simulator (a) of the ATTN_S claims (population dynamics, all
   seeds of the standard profile): Fig. 3 (``linattn.separate.saddle-to-saddle`` defaults),
   Fig. 4 (``linattn.separate.rank``, R = 1, 2, 4, 8) and the held-out spectrum D = 5,
   λ = 0.5, 0.25, 0.15, 0.07, 0.03, N = 20.  The adaptive time is measured end to end; the
   fixed-step time is GD's measured cost per step (on a window of at most 20 000 steps, the
   same vectorised trainer the claims use with ``integrator=gd``) × the steps GD needs to reach
   the same end time (t_end/η) — extrapolated where that is more than the window, and marked so.
2. **Growth of the adaptive cost** (one seed, simulator (a) only): with D = 4, 8, 16 (λ from
   0.5 down to 0.05, H = D), with 1/λ_min = 10, 100, 1000 (D = 4, λ geometric from 1), and with
   1/w_init = 1e2 … 1e5 (Fig. 3's spectrum).  Printed: accepted steps, solver work, CPU seconds,
   and the fitted growth per decade (goal: at most logarithmic — a constant number of extra
   steps per decade of 1/λ_min or 1/w_init, where fixed-step GD grows ∝ 1/λ_min² and 1/w_init).
3. **The targets' table**, every row measured beside its target: the held-out spectra and Figs. 3
   and 4 end to end (standard profile: theory, simulators (a) and (b), order controls, verdict),
   ``import icltheory`` and ``icltheory list``, every claim's ``check`` in its own process (the
   slowest five printed), ``report --all`` and the README's test command (the last three take
   about 15 minutes in all; ``--quick`` skips them and says so).
"""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np

from icltheory.core import BUDGETS, get_claim, run_check
from proofs.linear_attention.experiments import _flows as flows
from proofs.linear_attention.experiments import _training as training
from proofs.linear_attention.settings import RankSetting, SeparateSetting

HELD_OUT = {"D": 5, "H": 5, "lambdas": "0.5,0.25,0.15,0.07,0.03", "N": 20}
GD_WINDOW = 20_000


def _cpu(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _flow(s, p0, n_learn, settle):
    return flows.separate_population_flow(s.lam, s.N, p0, t_max=s.steps * s.lr, t_first=s.lr, n_learn=n_learn,
                                          settle=settle, rtol=s.rtol, atol_rel=1e-3 * s.rtol,
                                          budget=BUDGETS[s.profile][0] * 10)


def _gd_seconds(s, p0, t_end):
    """GD's CPU seconds to reach t_end: measured per step on a window, × t_end/η steps."""
    need = int(math.ceil(t_end / s.lr))
    window = min(need, GD_WINDOW)
    _, _, cpu = _cpu(lambda: training.separate_population_gd(s.lam, s.N, p0, lr=s.lr, steps=window))
    return cpu * need / window, need, need > window


def _compare(title, s, axis, n_learn, settle):
    p0 = training.init_separate(np.random.default_rng(1), len(axis), s.H, axis, s.D, s.w_init)
    run, _, cpu = _cpu(lambda: _flow(s, p0, n_learn, settle))
    gd, need, extrap = _gd_seconds(s, p0, float(run.t[-1]))
    print(f"  {title:<44} adaptive {cpu:7.2f} s ({run.steps:6d} steps)   fixed-step GD {gd:9.1f} s "
          f"({need:.3g} steps{', extrapolated' if extrap else ''})   ratio {gd / cpu:8.1f}×")
    return cpu, gd


def _one(s, n_learn):
    p0 = training.init_separate(np.random.default_rng(1), 1, s.H, s.R, s.D, s.w_init)
    run, _, cpu = _cpu(lambda: _flow(s, p0, n_learn, 1.0))
    learned = int(np.sum(np.isfinite(run.solver["events"])))
    return run.steps, run.solver["total_work"], cpu, learned, float(run.t[-1])


def _growth(label, xs, rows):
    steps = [r[0] for r in rows]
    for x, (st, work, cpu, learned, t_end) in zip(xs, rows):
        print(f"    {label} = {x:<8g} steps {st:6d}  work {work:9.3g}  CPU {cpu:6.2f} s  learned {learned}  "
              f"t_end {t_end:9.3g} τ")
    lx = np.log10(np.asarray(xs, float))
    if len(xs) > 1 and np.ptp(lx) > 0:
        slope = np.polyfit(lx, steps, 1)[0]
        ratio = steps[-1] / steps[0]
        print(f"    → +{slope:.0f} steps per decade of {label} (×{ratio:.2f} over ×{xs[-1] / xs[0]:g}); "
              f"fixed-step GD would grow ×{(xs[-1] / xs[0]) ** (2 if 'λ' in label else 1):g}")


def _claim(cid, setting):
    c = get_claim(cid)
    return _cpu(lambda: run_check(c, c.setting(setting)))


def main() -> None:
    quick = "--quick" in sys.argv
    if "--table" in sys.argv:
        print("== 3. the targets' table (2-core machine, standard profile): measured beside target")
        _targets(quick)
        return
    print("== 1. adaptive flow vs fixed-step GD, simulator (a), standard profile (CPU seconds)")
    s = SeparateSetting.parse({})
    _compare("Fig. 3 (D=4, 6 seeds)", s, [s.R] * s.seeds, min(s.D, s.H * s.R), 1.0)
    r = RankSetting.parse({})
    for R in r.ranks:
        _compare(f"Fig. 4, R={R} ({r.seeds} seeds)", r, [R] * r.seeds, min(r.D, r.H * R), 0.25)
    h = SeparateSetting.parse(HELD_OUT)
    _compare("held-out D=5, λ_min=0.03 (6 seeds)", h, [h.R] * h.seeds, min(h.D, h.H * h.R), 1.0)

    print("== 2. growth of the adaptive cost (one seed, simulator (a))")
    Ds = (4, 8) if quick else (4, 8, 16)
    rows = []
    for D in Ds:
        lam = ",".join(f"{0.5 * 0.1 ** (k / (D - 1)):.6g}" for k in range(D))
        sd = SeparateSetting.parse({"D": D, "H": D, "lambdas": lam, "seeds": 1})
        rows.append(_one(sd, D))
    _growth("D", Ds, rows)
    inv = (10, 100) if quick else (10, 100, 1000)
    rows = []
    for x in inv:
        lam = ",".join(f"{(1.0 / x) ** (k / 3):.6g}" for k in range(4))
        sl = SeparateSetting.parse({"lambdas": lam, "N": 31, "seeds": 1, "w_init": 0.01})
        rows.append(_one(sl, 4))
    _growth("1/λ_min", inv, rows)
    ws = (1e2, 1e3) if quick else (1e2, 1e3, 1e4, 1e5)
    rows = []
    for x in ws:
        sw = SeparateSetting.parse({"seeds": 1, "w_init": 1.0 / x})
        rows.append(_one(sw, 4))
    _growth("1/w_init", ws, rows)

    print("== 3. the targets' table (2-core machine, standard profile): measured beside target")
    _targets(quick)


def _wall(cmd, **kw):
    """Wall seconds of a command (run to completion), and its completed process."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, **kw)
    return time.perf_counter() - t0, p


def _every_claim():
    """``icltheory check CLAIM --json`` per claim, one after another, each in its own process (the
    time a user waits: interpreter, imports, theory, experiments and verdict)."""
    import json

    ids = [c["id"] for c in json.loads(subprocess.run([sys.executable, "-m", "icltheory", "list", "--json"],
                                                      check=True, capture_output=True, text=True).stdout)]
    out = []
    for cid in ids:
        wall, p = _wall([sys.executable, "-m", "icltheory", "check", cid, "--json"], capture_output=True, text=True)
        out.append((wall, cid, "holds" if p.returncode == 0 else {1: "fails", 3: "inconclusive"}.get(p.returncode, "error")))
    return sorted(out, reverse=True)


def _targets(quick: bool) -> None:
    import os
    import tempfile

    from icltheory._cli_commands import _cores

    v, wall, cpu = _claim("linattn.separate.saddle-to-saddle", HELD_OUT)
    print(f"  saddle-to-saddle, D=5, λ_min=0.03   {v.verdict:>12}, {wall:6.1f} s wall ({cpu:.1f} s CPU)   "
          "target: holds in ≤ 20 s")
    for label, spec in (("D=6, λ_min=0.02", {"D": 6, "H": 6, "lambdas": "0.4,0.2,0.1,0.06,0.04,0.02", "N": 16}),
                        ("D=4, λ_min=0.02", {"lambdas": "0.3,0.1,0.05,0.02"})):
        v, wall, cpu = _claim("linattn.separate.saddle-to-saddle", spec)
        print(f"  saddle-to-saddle, {label:<18}{v.verdict:>12}, {wall:6.1f} s wall ({cpu:.1f} s CPU)   target: holds")
    v, wall, cpu = _claim("linattn.separate.saddle-to-saddle", {})
    print(f"  Fig. 3 verified reproduction        {v.verdict:>12}, {wall:6.1f} s wall ({cpu:.1f} s CPU)   "
          "target: ≤ 2 s")
    v, wall, cpu = _claim("linattn.separate.rank", {})
    print(f"  Fig. 4, R = 1, 2, 4, 8               {v.verdict:>12}, {wall:6.1f} s wall ({cpu:.1f} s CPU)   "
          "target: ≤ 2 s")
    t_imp, _ = _wall([sys.executable, "-c", "import icltheory"], check=True)
    t_list, _ = _wall([sys.executable, "-m", "icltheory", "list"], check=True, stdout=subprocess.DEVNULL)
    print(f"  import icltheory / icltheory list   {t_imp:6.2f} s / {t_list:.2f} s (process start included)   "
          "target: ≤ 0.5 s / ≤ 1 s")
    if quick:
        for row in ("every claim's standard check", "report --all", "pytest -q (ci profile)"):
            print(f"  {row:<36} skipped (--quick)")
        return
    rows = _every_claim()
    over = [(w, c) for w, c, _ in rows if w > 10.0]
    print(f"  every claim's standard check        slowest {rows[0][0]:.1f} s ({rows[0][1]}), {len(over)} of {len(rows)} "
          "over 10 s (each in its own process)   target: ≤ 10 s each")
    for w, c, verdict in rows[:5]:
        print(f"      {c:<38} {w:6.1f} s  {verdict}")
    with tempfile.TemporaryDirectory() as tmp:
        wall, p = _wall([sys.executable, "-m", "icltheory", "--quiet", "report", "--all", "--out", tmp],
                        stdout=subprocess.DEVNULL)
    print(f"  report --all (-j {_cores()}, the default)         {wall:6.1f} s wall (exit {p.returncode})   "
          "target: ≤ 20 s")
    env = dict(os.environ, CI="true")
    wall, p = _wall([sys.executable, "-m", "pytest", "-q", "-n", "auto", "-p", "no:cacheprovider"], env=env,
                    capture_output=True, text=True)
    tail = (p.stdout.strip().splitlines() or [""])[-1]
    print(f"  pytest -q -n auto (ci profile)      {wall:6.1f} s wall: {tail}   target: ≤ 60 s")


if __name__ == "__main__":
    main()
