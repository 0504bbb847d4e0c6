"""Plant errors in the judges and show that the calibration tests catch each one.

    python scripts/planted_judges.py [--json] [NAME ...]

A judge is the code that turns a measurement into pass / fail / undecided: the mean tests and
their validity rules, the exact binomial judgement, the tolerance of ``ctx.close``, the bound
check, the slope allowance of a log-log fit.  Each planted change below makes one of them
unsound or powerless in a way a careful reviewer would try (a critical value three times too
large, a false-fail budget of 1e-12, a validity rule dropped, a tolerance three times too wide,
a bound refuted only below half its witness).  For each, ``pytest -m calibration`` runs in a
fresh process with the change applied everywhere the judge is bound; the change is *caught* when
that run fails.  The score is printed per change (exit 1 if any is missed).

The changes are applied by replacing the function or constant in every loaded module that
holds it (``from … import`` copies included), before the tests import anything else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: name → (what, Python source run before pytest: it defines the change and applies it)
CHANGES: dict[str, tuple[str, str]] = {
    "critical-x3": (
        "the mean tests' critical values three times too large",
        """
from icltheory.core import _stats as S
orig = S.t_quantile
def wide(p, n, skewness=0.0, kurtosis=0.0):
    q, r1, r2 = orig(p, n, skewness, kurtosis)
    return 3 * q, r1, r2
replace(orig, wide)
""",
    ),
    "mean-alpha-1e-12": (
        "the mean test run at a false-fail budget of 1e-12 whatever the level asked",
        """
from icltheory.core import _stats as S
orig = S.mean_test
def tiny(*a, **k):
    k["alpha"] = 1e-12
    return orig(*a, **k)
replace(orig, tiny)
""",
    ),
    "binomial-alpha-1e-12": (
        "the exact binomial judgement at a false-fail budget of 1e-12",
        """
from icltheory.core import _stats as S
orig = S.binomial_judge
replace(orig, lambda x, n, p0, alpha: orig(x, n, p0, 1e-12))
""",
    ),
    "symmetric-alpha-1e-12": (
        "the sign-symmetric test at a false-fail budget of 1e-12",
        """
from icltheory.core import _stats as S
orig = S.symmetric_mean_test
replace(orig, lambda samples, mu0, *, alpha: orig(samples, mu0, alpha=1e-12))
""",
    ),
    "validity-dropped": (
        "the validity rule of the Cornish–Fisher test dropped (any skewness accepted)",
        """
from icltheory.core import _stats as S
replace_constant(S, "FIRST_ORDER_MAX", 1e9)
replace_constant(S, "SECOND_ORDER_MAX", 1e9)
replace_constant(S, "MIN_SAMPLES", 2)
""",
    ),
    "close-x3": (
        "every ctx.close tolerance three times too wide",
        """
from icltheory.core._verdict import CheckContext
orig = CheckContext.close
def wide(self, name, *, atol=0.0, rtol=0.0, **k):
    return orig(self, name, atol=3 * atol, rtol=3 * rtol, **k)
CheckContext.close = wide
""",
    ),
    "bound-half-witness": (
        "a claimed bound refuted only below half the certified witness",
        """
from icltheory.core._verdict import CheckContext
orig = CheckContext.bound
def lax(self, name, *, certified_lower, **k):
    return orig(self, name, certified_lower=0.5 * certified_lower, **k)
CheckContext.bound = lax
""",
    ),
    "slope-allowance-x3": (
        "the log-log fit's slope allowance three times too wide",
        """
from icltheory.dynamics import _scaling as D
orig = D.slope_allowance
replace(orig, lambda fit, y, abs_err: 3 * orig(fit, y, abs_err))
""",
    ),
    "rescaling-kappa-squared": (
        "nonlinear.rescaling's exponent tolerance growing as κ² (not κ) with the gradient's cancellation",
        """
import inspect, textwrap
from proofs.nonlinear_regression.claims import scaling as M
src = textwrap.dedent(inspect.getsource(M.Rescaling.judge))
assert "1e-13 * max(1.0, k)" in src
ns = {}
exec(compile(src.replace("1e-13 * max(1.0, k)", "1e-13 * max(1.0, k) ** 2"), M.__file__, "exec"), vars(M), ns)
M.Rescaling.judge = ns["judge"]
""",
    ),
}

_PRELUDE = """
import sys, types
def replace(orig, new):
    for mod in list(sys.modules.values()):
        if isinstance(mod, types.ModuleType):
            for k, v in list(vars(mod).items()):
                if v is orig:
                    setattr(mod, k, new)
def replace_constant(module, name, value):
    old = getattr(module, name)
    for mod in list(sys.modules.values()):
        if isinstance(mod, types.ModuleType) and mod.__name__.startswith("icltheory"):
            if name in vars(mod) and vars(mod)[name] == old:
                setattr(mod, name, value)
import icltheory.core, icltheory.core._verdict, icltheory.dynamics
"""

_RUN = """
import pytest
sys.exit(pytest.main(["-q", "-x", "-m", "calibration", "-p", "no:cacheprovider", "-p", "no:xdist",
                      "tests/test_calibration.py"]))
"""


def run(name: str) -> dict:
    what, patch = CHANGES[name]
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _PRELUDE + patch + _RUN], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    failed = [ln.split(" - ")[0] for ln in p.stdout.splitlines() if ln.startswith("FAILED")]
    return {"change": name, "what": what, "caught": p.returncode == 1 and bool(failed),
            "returncode": p.returncode, "first_failure": failed[0] if failed else None,
            "seconds": round(time.perf_counter() - t0, 1)}


def clean() -> dict:
    """The calibration tests without any change: they must pass (else a catch means nothing)."""
    p = subprocess.run([sys.executable, "-c", _PRELUDE + _RUN], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    return {"change": "none", "passed": p.returncode == 0}


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    names = [a for a in argv if not a.startswith("--")] or list(CHANGES)
    unknown = [n for n in names if n not in CHANGES]
    if unknown:
        print(f"unknown change(s): {', '.join(unknown)}; known: {', '.join(CHANGES)}",
              file=sys.stderr)
        return 2
    base = clean()
    rows = [run(n) for n in names]
    if as_json:
        print(json.dumps({"clean": base, "changes": rows}, indent=1, ensure_ascii=False))
    else:
        print(f"calibration tests without a change: {'pass' if base['passed'] else 'FAIL'}")
        for r in rows:
            mark = "caught" if r["caught"] else "MISSED"
            print(f"{mark:7s} {r['change']:24s} {r['what']}  ({r['seconds']} s; "
                  f"{r['first_failure'] or 'no test failed'})")
        print(f"{sum(r['caught'] for r in rows)} of {len(rows)} planted judge changes caught")
    return 0 if base["passed"] and all(r["caught"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
