"""Shared pieces of the softmax-regression claims: planted-error factories, judging helpers
(the certified bound path and float bound checks) and cost estimates."""

from __future__ import annotations

import math


from icltheory.core import Cost, cached, lazy_module, source_edit

PKG = "proofs.softmax_regression"
theory = lazy_module(f"{PKG}.theory._paper")
bnb = lazy_module(f"{PKG}.theory._bnb")
_SLACK = 1e-9
_SLACK_WHY = ("observed ≤ bound·(1+1e-9): the observed ratio is a float64 computation from "
              "cancellation-free differences (expm1 of ΔM = A1(X−Y)A2ᵀ), relative error ≲ 1e-11 "
              "for any R and ‖x−y‖")
ASSUMPTIONS_TEX = (r"\ \text{for }\lVert A_1\otimes A_2\rVert\le R,\ \lVert x\rVert,\lVert y\rVert"
                    r"\le R,\ \lVert b_j\rVert_2\le1")


def one_entry(s, consequence: str) -> str | None:
    """Why a setting with one context entry (n = 1) decides nothing, or ``None`` for n ≥ 2: the
    row softmax is then over a single entry, the constant 1, and ``consequence`` follows."""
    if s.n != 1:
        return None
    return f"n = 1: with one context entry the row softmax is constant (f = 1), so {consequence}"


# --------------------------------------------------------------------------- planted errors


def temperature(orig):
    """A row softmax at temperature ½ (logits doubled)."""
    return lambda M: orig(2.0 * M)


def logits_doubled(orig):
    return lambda A1, A2, X: 2.0 * orig(A1, A2, X)


def other_loss(orig):
    """The certified evaluation uses the other loss's gradient (a mixed-up loss argument)."""
    def wrong(A1, A2, B, X, Y, loss):
        return orig(A1, A2, B, X, Y, "rescaled" if loss == "normalized" else "normalized")
    return wrong


def drop_projection(orig):
    """P without its −f⟨f, c⟩ term (the softmax Jacobian's rank-one part forgotten)."""
    def wrong(F, B):
        import sympy as sp

        return sp.Matrix(F.rows, F.cols, lambda j, k: F[j, k] * (F[j, k] - B[j, k]))
    return wrong


def _exp_upper_scaled(orig, factor: float):
    """An exp enclosure whose upper ends are ``factor`` × the true ones."""
    from icltheory.bounds._interval import Interval

    def exp_interval(lo, hi):
        e = orig(lo, hi)
        return Interval(e.lo, e.hi * factor)
    return exp_interval


# the certified layer: one-line slips in the interval arithmetic and the branch and bound
# (each turns the certificate wrong; the independent check must say so)
_IV = "icltheory.bounds._interval"
_BNB = f"{PKG}.theory._bnb:branch_and_bound"  # the name the branch and bound module calls
CERTIFIED_SLIPS = {
    "exp_low": ("e^x enclosure whose upper end is 0.1 % low", f"{_IV}:exp_bounds",
                source_edit("hi = _up(e_hi * p_hi)", "hi = _up(e_hi * p_hi) * 0.999")),
    "exp_half": ("e^x enclosure whose upper end is halved", f"{_IV}:exp_bounds",
                 source_edit("hi = _up(e_hi * p_hi)", "hi = _up(e_hi * p_hi) * 0.5")),
    "no_remainder": ("second-order Taylor forms without their third-order remainder",
                     f"{_IV}:Quad._apply", source_edit("+ g3 * r * r * r", "+ 0.0")),
    "split_gap": ("a split that leaves a quarter of each box unexamined", _BNB,
                  source_edit("b_lo[rows, k] = m\n", "b_lo[rows, k] = m + 0.5 * (chi[rows, k] - m)\n")),
    "prune_high": ("boxes pruned below 1.2 × the best value (not below it)", _BNB,
                   source_edit("live = ub >= best * (1 - 1e-9)", "live = ub >= best * 1.2")),
    "no_frontier": ("the reported bound ignores the unprocessed frontier", _BNB,
                    source_edit("upper = max(retired, pending, best)", "upper = max(retired, best)")),
    # the ratio form's own enclosure (the rescaled loss's path: exp over the logits' boxes)
    "ratio_exp_low": ("the ratio form's e^x enclosure with its upper end 0.1 % low",
                      f"{PKG}.theory._bnb:exp_interval", lambda orig: _exp_upper_scaled(orig, 0.999)),
    "ratio_exp_half": ("the ratio form's e^x enclosure with its upper end halved",
                       f"{PKG}.theory._bnb:exp_interval", lambda orig: _exp_upper_scaled(orig, 0.5)),
    "wrong_R": ("the branch and bound run at 0.999 R (a certificate of another setting)",
                f"{PKG}.theory._bnb:certified_upper",
                lambda orig: (lambda loss, n, R, boxes, stop=None: orig(loss, n, R * 0.999, boxes, stop))),
}


def certified_slip(key: str, setting: dict | None = None, *, standard: bool = False):
    """One of :data:`CERTIFIED_SLIPS` as a planted error of the certified layer, run at
    ``setting`` (``standard``: at the standard profile with a small search, where the branch
    and bound's budget is beyond the quick profile's)."""
    from icltheory.core import PlantedError

    what, target, replace = CERTIFIED_SLIPS[key]
    st = dict(setting or {})
    if standard:
        st = {"profile": "standard", "samples": 100, "refine": 0, "witness_starts": 3,
              "grid": 0, **st}
    return PlantedError("certified", what, target, replace, st)


def closed_form_tenth():
    """The reviewer's slip: the closed form and its arithmetic step both 13/40·a² (the premise
    chain above them left as it is)."""
    return source_edit([("closed_form = _at(a ** 2 * _KAPPA,",
                         "closed_form = _at(a ** 2 * _KAPPA / 10,"),
                        ("sp.Rational(13, 4) * a ** 2,", "sp.Rational(13, 40) * a ** 2,")])


def bound_tenth(orig):
    return lambda: orig() / 10


def bound_quarter(orig):
    return lambda: orig() / 4


# --------------------------------------------------------------------------- judging helpers


def proved_term(key: str, s, *, lower: bool = False) -> float | None:
    """The derivation's certified value of the term ``key`` at the setting (rounded outward), or
    None where the term is not one of the derivation's."""
    th = theory.theory()
    try:
        return th.lower(key, s.n, s.R) if lower else th.upper(key, s.n, s.R)
    except KeyError:
        return None


def upper_check(ctx, s, name: str, key: str, log_observed: float, what: str,
                proved: float | None = None) -> float:
    """Record 'max observed ≤ predicted[key]' (float, relative slack 1e-9); returns the
    tightness observed/predicted.  A sample can only refute a bound: it passes only where the
    prediction is at least ``proved`` (default: the derivation's term ``key`` at the setting, by
    :func:`proved_term`; a key that is no term of the derivation is taken as proved); below it a
    sample that stays under the prediction leaves it undecided, and a sample with nothing
    observed (−inf) decides nothing."""
    proved = proved_term(key, s) if proved is None else proved
    pred = float(ctx.predicted[key])
    lp = math.log(pred) if pred > 0 else -math.inf
    lo = float(log_observed)
    tight = math.exp(min(lo - lp, 700.0)) if math.isfinite(lo) and math.isfinite(lp) else 0.0
    detail = f"tightness {tight:.3g}"
    if math.isnan(lo) or lo == -math.inf:
        passed = None
        detail = "nothing observed (no usable sample at this setting): undecided"
    elif lo > lp + _SLACK:
        passed = False
    elif proved is not None and pred < proved * (1 - 1e-12):
        passed = None
        detail = (f"tightness {tight:.3g}; the sample stays below the prediction, but a sample cannot prove "
                  f"a bound and the derivation proves only {proved:.6g}: undecided")
    else:
        passed = True
    ctx.condition(name, passed, key=key, measured=math.exp(lo) if lo < 700 else math.inf,
                  why=f"{what}; {_SLACK_WHY}", detail=detail)
    return tight


def lower_check(ctx, s, name: str, key: str, log_observed: float, what: str) -> None:
    """Record 'min observed ≥ predicted[key]'; as :func:`upper_check`, a sample only refutes:
    a prediction above the derivation's lower bound for ``key`` is undecided when the sample
    stays above it."""
    proved = proved_term(key, s, lower=True)
    pred = float(ctx.predicted[key])
    lp = math.log(pred) if pred > 0 else -math.inf
    lo = float(log_observed)
    detail = f"bound/observed {math.exp(min(lp - lo, 700)):.3g}" if math.isfinite(lo) else "nothing observed"
    if math.isnan(lo) or lo == math.inf:
        passed = None
    elif lo < lp - _SLACK:
        passed = False
    elif proved is not None and pred > proved * (1 + 1e-12):
        passed = None
        detail += (f"; the sample stays above the prediction, but a sample cannot prove a bound and the "
                   f"derivation proves only {proved:.6g}: undecided")
    else:
        passed = True
    ctx.condition(name, passed, key=key, measured=math.exp(lo) if math.isfinite(lo) else lo,
                  why=f"{what}; {_SLACK_WHY}", detail=detail)


def witness_bound(ctx, name: str, key: str, m, proved_upper: float, what: str) -> None:
    """The certified path: the witness's arb-certified ratio against predicted[key]."""
    c = ctx.bound(name, key=key, certified_lower=float(m["witness_lower"]),
                  proved_upper=proved_upper,
                  why=(f"{what}: its ratio is certified in ball arithmetic at its exact float "
                       "inputs and it is certified to lie inside the assumptions; a value below "
                       "it is refuted, a value at or above the proved bound of the derivation "
                       "is covered by the proof"),
                  witness=None if m["witness_inside"] else "witness membership not certified")
    if c.passed is False:
        ctx.evidence[f"counterexample_{key}"] = m["witness"]


#: the branch and bound runs for n ≤ this (its lowered gradient grows fast with n)
BNB_MAX_N = 6
#: at the quick profile it runs for n ≤ this (beyond, lowering the pencil alone takes seconds)
BNB_QUICK_MAX_N = 4


def _bnb_allowed(s) -> bool:
    return bool(s.bnb_boxes) and s.n <= (BNB_QUICK_MAX_N if s.profile == "quick" else BNB_MAX_N)


def bnb_upper(s, loss: str, stop: float | None = None) -> float:
    """The branch-and-bound certified upper bound; inf (no certificate: the closed forms
    decide) when the setting allows no boxes, n > BNB_MAX_N, or its cost is over the
    profile's budget.  ``stop``: a candidate constant — the search ends as soon as the bound is
    ≤ it (or a point value shows it cannot be)."""
    if not bnb_runs(s, loss):
        return math.inf
    return bnb.certified_upper(loss, s.n, float(s.R), int(s.bnb_boxes), stop).upper


def bnb_runs(s, loss: str) -> bool:
    """Whether the setting runs the branch and bound (boxes allowed, n ≤ BNB_MAX_N — ≤
    BNB_QUICK_MAX_N at the quick profile —, its cost and its certificate's check within the
    profile's budget)."""
    from icltheory.core import BUDGETS

    return _bnb_allowed(s) and bnb_cost(s, loss) <= BUDGETS[s.profile][0]


@cached(maxsize=8)
def checked_band(loss: str, n: int, R: float, boxes: int, stop: float | None):
    """(band, report): the branch and bound's result and the independent check of its
    certificate (:func:`icltheory.certify.check_certificate`; None where no boxes are needed)."""
    from icltheory.certify import check_certificate

    band = bnb.certified_upper(loss, n, R, boxes, stop)
    if band.certificate is None:
        return band, None
    return band, check_certificate(band.certificate)


def _other_setting(band, loss: str, s) -> str:
    """Why the certificate behind ``band`` is not one of this setting's constant (empty if it
    is): its domain's loss, n and R, its scale factor R² (exact) and the bound it reports."""
    from fractions import Fraction

    cert = band.certificate
    dom = cert.domain
    R = float(s.R)
    bad = []
    if getattr(dom, "loss", "normalized") != loss:
        bad.append(f"loss {getattr(dom, 'loss', 'normalized')} (setting: {loss})")
    if int(dom.n) != int(s.n):
        bad.append(f"n = {dom.n} (setting: {s.n})")
    if float(dom.R) != R:
        bad.append(f"R = {dom.R!r} (setting: {R!r})")
    if cert.factor != Fraction(R) ** 2:
        bad.append(f"scale factor {float(cert.factor)!r} (setting: R² = {R * R!r})")
    if cert.reported != band.upper:
        bad.append(f"reports {cert.reported!r}, the number used is {band.upper!r}")
    return "; ".join(bad)


_CERT_WHY = ("an independent check (icltheory.certify: no code shared with the branch and bound "
             "or its interval arithmetic; the bounded quantity the certificate names, ψ or the "
             "pencil's δ and K, is checked against the checker's own formula for it by exact "
             "expansion) re-derives that the boxes partition the reduced domain "
             "(exact comparisons and rationals), that each box's bound is at least its own "
             "enclosure of the same quantity there (its own interval arithmetic and Taylor "
             "models, exponentials from arb; a box it cannot confirm is cut and its pieces "
             "checked; a point certified in arb above a box's bound refutes it) and that the "
             "reported bound is at least every box's bound")


def certificate_check(ctx, s, loss: str, key: str, stop: float | None = None, *,
                      tool_claim: bool = True) -> bool:
    """Record the independent check of the branch-and-bound certificate behind predicted[key]
    and return whether its bound may be used as a proof.  A refuted certificate makes the check
    fail when the certified number is the claim's own assertion (``tool_claim``); when the claim
    is about someone else's constant it records the check as undecided (the tool's proof is
    wrong, which says nothing about that constant) — either way its bound is not used.  An
    unconfirmed certificate (the check's budget ran out) is undecided."""
    if not bnb_runs(s, loss):
        return False
    band, rep = checked_band(loss, s.n, float(s.R), int(s.bnb_boxes), stop)
    name = "certificate checked independently"
    if rep is None:  # one logit: the Hessian vanishes, nothing to cover
        ctx.condition(name, True, predicted="no boxes needed", measured="n = 1: ψ = 0",
                      judges=(key,), why="with one logit softmax is constant: the bound is 0")
        return True
    wrong = _other_setting(band, loss, s)
    if wrong:
        ctx.condition(name, False if tool_claim else None, predicted="a certificate of this setting's constant",
                      measured=wrong, judges=(key,), why="the checker reads the domain from the certificate "
                      "itself, so the certificate must name this setting's loss, n and R, scale by R² exactly "
                      "and report the number used", detail="the certificate is for another setting: " + wrong)
        return False
    if rep.status == "empty":  # no check was made: a note, not a passed check
        ctx.note(f"{name}: not made — the branch and bound reports no finite bound, so there is "
                 f"nothing to check and nothing is used ({rep.summary(False)})")
        return False
    measured = {"boxes": rep.boxes, **{k: v for k, v in rep.counts.items() if v},
                "coverage": rep.coverage, "max box bound (psi)": rep.max_bound,
                "reported (psi)": rep.upper, "reported": band.upper,
                "boxes enclosed by the checker": rep.pieces}
    passed: bool | None = {"verified": True, "refuted": False, "undecided": None}[rep.status]
    detail = rep.summary(False)
    if rep.status == "refuted" and not tool_claim:
        passed = None
        detail = ("the tool's own certificate is wrong, so its bound is not used (this says "
                  "nothing about the candidate): " + detail)
    ctx.condition(name, passed, predicted="the boxes cover the domain and every bound holds",
                  measured=measured, judges=(key,), why=_CERT_WHY, detail=detail)
    if rep.status == "refuted":
        ctx.evidence["certificate_bad_box"] = rep.bad
    return rep.status == "verified"


def premise_check(ctx, s, m, judges: tuple) -> bool:
    """The closed form's premise — ‖∇²_z ½‖softmax(z) − b‖²‖₂ ≤ κ for every logit vector and
    ‖b‖ ≤ 1, with κ = closed_form/a² as the derivation states it — against a certified witness
    of that supremum (an explicit pair, :func:`.experiments.premise_witness`): κ below the
    witness refutes the derivation's premise.  Returns whether the closed form may be used as a
    proof (its premise is proved step by step in the derivation and not refuted here)."""
    name = "closed form's premise vs a certified witness (any logits)"
    if s.n < 2:
        ctx.condition(name, True, predicted="‖∇²_z ℓ‖ = 0", measured="n = 1", judges=judges,
                      why="with one logit softmax is constant: the logit Hessian vanishes")
        return True
    th = theory.theory()
    k_lo, k_hi = th.lower("closed_form", s.n, 1.0), th.upper("closed_form", s.n, 1.0)
    w = float(m.get("premise_witness", 0.0))
    why = ("κ is the derivation's bound on the logit Hessian's norm for every logit vector (no "
           "ball: the closed form holds for all x, y); the witness is an explicit pair at two "
           "logits inside a ball of radius R_w = 3 whose gradient-difference ratio is certified "
           "in arb, divided by R_w² (two logits only lower the supremum)")
    if not w > 0:
        ctx.condition(name, None, predicted=k_hi, measured=w, judges=judges, why=why,
                      detail="no certified witness: the premise is not checked, so the closed "
                             "form is not used as a proof")
        return False
    if k_hi < w:
        ctx.condition(name, False, predicted=k_hi, measured=w, judges=judges, why=why,
                      detail=f"κ = {k_hi:.6g} < certified witness {w:.6g}: the derivation's "
                             "premise is false")
        ctx.evidence["closed_form_premise_counterexample"] = m.get("premise_witness_pair")
        return False
    ok = k_lo >= w
    ctx.condition(name, True if ok else None, predicted=k_hi, measured=w, judges=judges, why=why,
                  detail=f"κ = {k_hi:.6g} ≥ certified witness {w:.6g} (κ/witness "
                         f"{k_hi / w:.3g})")
    return ok


def bnb_derivation_check(ctx, s, loss: str, key: str) -> None:
    """When the branch and bound runs, its reduction (theory._hessian) must be verified."""
    if bnb_runs(s, loss):
        th = bnb.hessian
        derivations = [th.reduced_hessian(loss, s.n).derivation]
        if loss == "normalized" and s.n >= 2:  # the eigenvalue (pencil) form bounds it
            derivations.append(th.reduced_matrix(s.n).derivation)
        ok = all(d.ok for d in derivations)
        ctx.condition("reduction to the logits verified (branch-and-bound objective)", ok,
                      predicted="all steps verified",
                      measured={k: sum(d.summary()[k] for d in derivations)
                                for k in ("verified", "refuted", "undecided")}, judges=(key,),
                      why="the certified upper bound is the sup over the logits of this "
                          "derivation's form (for the normalized loss: the largest |eigenvalue| "
                          "of its pencil), lowered to interval arithmetic")


def best_proved(s, loss: str, terms, stop: float | None = None) -> float:
    """The best proved upper bound on the gradient's Lipschitz constant at the setting (the
    prediction): the derivation's closed forms and the branch-and-bound certificate (aimed at
    ``stop``, a candidate constant, when given)."""
    th = theory.theory()
    return min([th.upper(t, s.n, s.R) for t in terms] + [bnb_upper(s, loss, stop)])


def checked_proved(s, loss: str, terms, stop: float | None, bnb_ok: bool) -> float:
    """The proved upper bound a verdict may rest on: the given closed forms (their premises
    proved or checked by the caller) and the branch-and-bound bound only if its certificate
    passed the independent check."""
    th = theory.theory()
    vals = [th.upper(t, s.n, s.R) for t in terms]
    if bnb_ok:
        vals.append(bnb_upper(s, loss, stop))
    return min(vals) if vals else math.inf


def bnb_cost(s, loss: str) -> float:
    """≈ flop-equivalents of the branch and bound and of the independent check of its
    certificate (measured at most about as costly: ×2): its box budget × one box's work for
    the loss (:func:`.settings.bnb_box_work`); 0 when it does not run."""
    from ..settings import bnb_box_work

    if not _bnb_allowed(s):
        return 0.0
    return 2.0 * float(s.bnb_boxes) * bnb_box_work(s.n, loss)


def bnb_memory(s) -> float:
    """≈ bytes of the branch and bound: the frontier (two corners and a bound per box, at most
    one box per box evaluated, ×3 for the copies made when it is split), the second-order
    forms of one chunk (≈ 350 MB at most: the chunk shrinks as n grows; measured peak resident
    size 180 MB at n = 4, 350 MB at n = 6, the process included), and the certificate with
    its check (per box evaluated: a leaf's corners, id, kind and bound, a split's record, and
    the checker's copy of every node's corners)."""
    if not _bnb_allowed(s):
        return 0.0
    from ..settings import BNB_BASE_BYTES, bnb_box_bytes

    return BNB_BASE_BYTES + bnb_box_bytes(s.n) * float(s.bnb_boxes)


def premise_cost(s, loss: str) -> float:
    """≈ flop-equivalents of the closed form's premise witness (normalized loss, n ≥ 2): three
    BFGS starts at two logits (measured ≈ 0.3 s)."""
    if loss != "normalized" or s.n < 2:
        return 0.0
    return 3 * 800 * 7 * 6e4


def witness_cost(s) -> float:
    """≈ flop-equivalents of the explicit-witness maximisation (BFGS with finite differences
    on the numeric logit Hessian: ~3n evaluations per iteration, each ~5e4)."""
    n = max(s.n, 2)
    return float(s.witness_starts) * max(40, 1600 // n) * (3 * n + 1) * (5e4 + 40 * n ** 3)


def search_cost(n: int, d: int, samples: int, refine: int, maxiter: int, what: str) -> Cost:
    dim = 2 * n * d + 1 + 2 * d * d + n * n
    per = 40.0 * (n * n * d + n * d * d + d ** 3) + 10.0 * n ** 3
    evals = samples * 3 + refine * maxiter * (dim + 1) * 3
    return Cost(work=evals * per + samples * (n * n * d ** 4 + d ** 6),
                memory=8.0 * samples * (dim + n ** 3 + d ** 4) * 12,
                what=what)


