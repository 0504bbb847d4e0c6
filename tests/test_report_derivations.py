"""Reports that read as derivations: steps as derived and as verified with their tier, vector
checks summarised (every value kept in the JSON), sources that cite papers, not paths."""

from __future__ import annotations

import json
import re

import numpy as np
import sympy as sp

from icltheory.core import CheckContext, Derivation, Verdict, all_claims
from icltheory.report import render_claim, render_markdown


def _steps_md(d: Derivation) -> list[str]:
    """The Markdown of each step (split at the numbered items)."""
    md = d.to_markdown()
    return re.split(r"\n(?=\d+\. )", md.split("### Steps", 1)[1])[1:]


def test_unevaluated_forms_are_shown_as_derived_and_verified_carried_out():
    a, b, t = sp.symbols("a b t", positive=True)
    d = Derivation("demo")
    # what the sigmoid claim's step "balance is conserved" could record instead of 0 = 0
    st = d.step("balance", sp.Subs(2 * a * (a - b) - 2 * b * (a - b), b, a), 0, "set b = a")
    assert st.status == "verified" and st.tier == "exact"
    assert isinstance(st.lhs, sp.Subs) and st.lhs_value == 0  # recorded as given, verified done
    d.step("derivative", sp.Derivative(sp.exp(2 * t), t), 2 * sp.exp(2 * t), "chain rule")
    d.step("limit", sp.Limit(1 / (1 + sp.exp(-t)), t, sp.oo), 1, "t → ∞")
    d.step("wrong derivative", sp.Derivative(t**3, t), 2 * t**2, "a slip")
    subs, deriv, lim, wrong = _steps_md(d)
    assert r"\right|_{\substack{ b=a }} = 0" in subs  # the substitution, as derived
    assert "Carried out" in subs and "0 = 0" in subs and "tier **exact**" in subs
    assert r"\frac{d}{d t} e^{2 t} = 2 e^{2 t}" in deriv
    assert r"\lim_{t \to \infty}" in lim
    # the tiers see the carried-out form, so an unevaluated form cannot hide a wrong step
    assert "❌" in wrong and "Refuted" in wrong and "3 t^{2} = 2 t^{2}" in wrong
    assert not d.ok
    data = d.as_dict()["steps"]
    assert data[0]["lhs"].startswith("Subs(") and data[0]["verified_lhs_latex"] == "0"
    assert "verified_lhs_latex" not in Derivation("x").step("plain", a, a, "").as_dict()


def test_steps_recorded_already_simplified_say_so():
    x = sp.Symbol("x")
    d = Derivation("demo")
    d.step("same", sp.expand((x + 1) ** 2), x**2 + 2 * x + 1, "expanded before recording")
    d.step("zero", sp.Integer(0), 0, "simplified before recording")
    d.step("real", (x + 1) ** 2, x**2 + 2 * x + 1, "expand")
    d.fact("positive", True, "λ > 0", "given")
    same, zero, real, fact = _steps_md(d)
    assert "0 = 0" in zero
    for md in (same, zero):
        assert "Both sides were recorded already simplified" in md and "tier **exact**" in md
    assert "already simplified" not in real and "already simplified" not in fact
    assert "λ > 0" in fact and "Verified by tier **exact**" in fact


def _verdict(checks: CheckContext) -> Verdict:
    return Verdict(claim="testonly.vector", verdict="holds", setting={"n": 2001},
                   predicted={"curve": []}, measured={"trace": list(np.linspace(0, 1, 2001))},
                   checks=checks.checks, evidence={}, seed=0, runtime_s=0.0, versions={},
                   claim_info={"title": "vector", "source": "arXiv 0000.00000, Eq. 1",
                               "statement": "y=x"})


def test_vector_checks_are_summarised_with_every_value_in_the_json():
    ctx = CheckContext(predicted={}, profile="quick", seed=0)
    p = np.linspace(0.0, 1.0, 2001)
    m = p.copy()
    m[725] += 4e-10  # the worst point relative to the tolerance
    m[1000] += 2e-10
    ctx.close("curve", predicted=p, measured=m, atol=1e-9, why="ODE tolerance")
    ctx.close("short", predicted=[1.0, 2.0], measured=[1.0, 2.0], atol=1e-9, why="exact")
    v = _verdict(ctx)
    md = render_markdown(v, [])
    row = next(line for line in md.splitlines() if line.startswith("| curve "))
    assert "2001 values in [0, 1]; at index 725: 0.3625" in row
    assert "2001/2001 within tolerance" in row  # the check's own detail
    assert row.count(",") < 12 and "…" not in row  # not a dozen of the 2001 values
    assert "| short | [1, 2] | [1, 2] |" in md
    assert "every value is in the JSON sidecar `testonly.vector.json`" in md
    measured = next(line for line in md.splitlines() if line.startswith("| `trace`"))
    assert "2001 values in [0, 1]; first 0, last 1" in measured
    side = json.loads(render_claim(v).files["testonly.vector.json"])
    assert side["checks"][0]["measured"] == m.tolist()  # the full data
    # a matrix names its entry
    ctx = CheckContext(predicted={}, profile="quick", seed=0)
    q = np.zeros((4, 5))
    q2 = q.copy()
    q2[2, 3] = 0.5
    ctx.close("matrix", predicted=q, measured=q2, atol=1.0, why="t")
    row = next(line for line in render_markdown(_verdict(ctx), []).splitlines()
               if line.startswith("| matrix "))
    assert "4×5 array in [0, 0.5]; at entry (2, 3): 0.5" in row


#: a local file or folder: an absolute path, ./ or ~/, or a relative path ending in a file name
_PATH = re.compile(r"(?<![\w.:/])(?:(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+|"
                   r"[\w.-]+(?:/[\w.-]+)*/[\w-]+\.(?:txt|md|py|json|pdf|ipynb|tex|csv|toml))")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)


def _paths(text: str) -> list[str]:
    return _PATH.findall(_URL.sub(" ", text))


def test_path_finder():
    assert _paths("blog summary of arXiv 2507.20443 (shared/seeds/002_657d.txt); x") == [
        "shared/seeds/002_657d.txt"]
    assert _paths("see /work/shared/reference/linear.md") == ["/work/shared/reference/linear.md"]
    for fine in ("arXiv 2405.17248, Theorems 1/2, §4–§5", "Eq. 19 (p. 7), C1/α_min",
                 "https://arxiv.org/abs/2405.17248", "and/or", "input/output"):
        assert _paths(fine) == [], fine


def test_sources_cite_papers_not_local_paths():
    offending = {c.id: _paths(c.source) for c in all_claims()}
    offending = {k: v for k, v in offending.items() if v}
    assert not offending, "claim sources citing local paths: " + "; ".join(
        f"{k}: {', '.join(v)}" for k, v in sorted(offending.items()))


def test_step_titles_render_as_written():
    """A step named with Markdown's emphasis characters (``ℓ'(m*) = 0``) is escaped outside
    inline math and left alone inside it."""
    from icltheory.core._derivation import _plain_text

    assert _plain_text("ℓ'(m*) = 0") == "ℓ'(m\\*) = 0"
    assert _plain_text("a_b with $w_{e,y_i}^*$") == "a\\_b with $w_{e,y_i}^*$"


def test_report_reads_as_a_derivation():
    """Verdict and its one-sentence reason first, then statement, setting with meanings, the
    derivation, the predicted constants with meanings, the evidence, and the checks last."""
    from icltheory.core import get_claim, run_check
    from icltheory.report._markdown import render_markdown

    c = get_claim("linattn.merged.equivalence")
    v = run_check(c, c.setting({"profile": "quick"}))
    md = render_markdown(v, [])
    first = md.splitlines()[2]
    assert first.startswith("**Verdict: ✅ holds.** All ") and "judged checks pass" in first
    order = [md.index(h) for h in ("## Statement", "## Setting", "## Derivation",
                                   "## Predicted constants", "## Checks", "## Versions")]
    assert order == sorted(order), order
    assert "| key | value | meaning |" in md
