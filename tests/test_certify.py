"""The independent certificate checker (icltheory.certify): it accepts the branch and bound's
real certificates, it catches each unsound change to the interval arithmetic or the branch and
bound (each as a one-line edit of the source), it names a tampered certificate's bad box, its
own arithmetic encloses what it claims to, and it shares no code with what it checks."""

from __future__ import annotations

import ast
import dataclasses
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from icltheory.certify import check_certificate
from icltheory.certify._intervals import Iv, exp_enclosure
from icltheory.certify._taylor import TM
from icltheory.core import clear_caches

ROOT = Path(__file__).resolve().parents[1]


def _band(loss="normalized", n=3, R=1.0, boxes=240_000, stop=None, method="eigen",
          target=1.0995):
    from proofs.softmax_regression.theory import _bnb as bnb

    return bnb.certified_band(loss, n, 2, R, seconds=math.inf, max_boxes=boxes, stop=stop,
                              method=method, target=target)


@pytest.fixture(scope="module")
def cert3():
    """A real certificate: normalized loss, n = 3, R = 1, the 1.0995 band."""
    return _band().certificate


# --------------------------------------------------------------------------- real certificates


@pytest.mark.parametrize("args", [
    dict(n=2), dict(n=3, R=2.0), dict(n=4, boxes=1500),
    dict(loss="rescaled", n=3, boxes=4000), dict(n=3, method="ratio", boxes=3000),
], ids=["pencil-n2", "pencil-n3-R2", "pencil-n4-frontier", "rescaled-n3", "ratio-n3"])
@pytest.mark.slow
def test_the_checker_accepts_real_certificates(args):
    band = _band(**args)
    rep = check_certificate(band.certificate)
    assert rep.status == "verified", rep.summary()
    assert rep.coverage == "exact" and rep.max_bound <= rep.upper
    # the number the claims use is R² × the bound on ψ, and the check saw that too (its report
    # carries the certificate's factor, which its line names where it is not 1)
    assert band.upper >= float(Fraction(band.R) ** 2 * Fraction(rep.upper))
    assert rep.factor == float(band.certificate.factor)
    assert ("is at least" in rep.summary(False)) == (rep.factor != 1.0)


def test_one_logit_needs_no_certificate():
    assert _band(n=1).certificate is None


# --------------------------------------------------------------------------- planted slips


def _slip(monkeypatch, key):
    """Install one of the claims' certified-layer slips (a one-line edit of the source)."""
    import importlib

    from proofs.softmax_regression.claims._common import CERTIFIED_SLIPS

    _, target, replace = CERTIFIED_SLIPS[key]
    mod, attr = target.split(":")
    obj = importlib.import_module(mod)
    *path, name = attr.split(".")
    for p in path:
        obj = getattr(obj, p)
    monkeypatch.setattr(obj, name, replace(getattr(obj, name)))
    clear_caches()


@pytest.mark.parametrize("key, args, needle", [
    ("exp_half", dict(n=3), "certified in arb"),
    ("split_gap", dict(n=3), "not the part of the partition"),
    ("prune_high", dict(n=3), "reported bound"),
    ("no_frontier", dict(n=3, boxes=60), "reported bound"),
    # the two slips that only bite on boxes cut tight around the maximum: a candidate just
    # above the best value found (1.001×; 1.0001× at R = 3)
    ("exp_low", dict(n=3, stop=0.3042, boxes=200_000), "certified in arb"),
    ("no_remainder", dict(n=3, R=3.0, stop=3.2325, boxes=300_000), "certified in arb"),
])
def test_each_unsound_slip_is_refuted(monkeypatch, key, args, needle):
    _slip(monkeypatch, key)
    try:
        rep = check_certificate(_band(**args).certificate)
    finally:
        monkeypatch.undo()
        clear_caches()
    assert rep.status == "refuted", rep.summary()
    assert needle in rep.bad and rep.bad  # the first bad box (or the violated claim) is named


@pytest.mark.slow
def test_the_tight_certificates_of_those_slips_verify_without_them():
    for args in (dict(n=3, stop=0.3042, boxes=200_000), dict(n=3, R=3.0, stop=3.2325,
                                                            boxes=300_000)):
        rep = check_certificate(_band(**args).certificate)
        assert rep.status == "verified", rep.summary()


# --------------------------------------------------------------------------- tampering


def _tamper(cert, **changes):
    return dataclasses.replace(cert, **changes)


def test_a_gap_in_coverage_is_named(cert3):
    keep = np.ones(cert3.boxes, bool)
    keep[7] = False  # one leaf left out
    bad = _tamper(cert3, leaf_id=cert3.leaf_id[keep], leaf_kind=cert3.leaf_kind[keep],
                  leaf_lo=cert3.leaf_lo[keep], leaf_hi=cert3.leaf_hi[keep],
                  leaf_bound=cert3.leaf_bound[keep])
    rep = check_certificate(bad)
    assert rep.status == "refuted" and rep.coverage == "FAILED"
    assert f"box #{int(cert3.leaf_id[7])}" in rep.bad and "unexamined" in rep.bad
    # a leaf shrunk inside its place in the partition is a gap too
    lo = cert3.leaf_lo.copy()
    free = np.flatnonzero(lo[3] < cert3.leaf_hi[3])[0]
    lo[3, free] = 0.5 * (lo[3, free] + cert3.leaf_hi[3, free])
    rep = check_certificate(_tamper(cert3, leaf_lo=lo))
    assert rep.status == "refuted" and f"box #{int(cert3.leaf_id[3])}" in rep.bad


def test_a_bound_below_the_enclosure_is_refuted_at_a_certified_point(cert3):
    # the box holding the largest value of ψ found, its bound lowered below that value
    dom = cert3.domain
    inside = np.flatnonzero(cert3.leaf_kind != 3)
    mids = 0.5 * (cert3.leaf_lo[inside] + cert3.leaf_hi[inside])
    i = int(inside[np.argmax(dom.value_float(mids))])
    b = cert3.leaf_bound.copy()
    b[i] = 0.9 * dom.value_float(mids[[list(inside).index(i)]])[0]
    rep = check_certificate(_tamper(cert3, leaf_bound=b))
    assert rep.status == "refuted" and rep.bad_index == i
    assert f"box #{int(cert3.leaf_id[i])}" in rep.bad and "certified in arb" in rep.bad


def test_a_box_bounded_by_minus_infinity_is_checked_not_trusted(cert3):
    # −inf claims the quantity is nowhere defined on the box: the checker encloses it like any
    # other box, and a finite value there refutes it (also when every box claims it, with a
    # reported bound of 1e-300 that no box bound exceeds)
    inside = np.flatnonzero(cert3.leaf_kind != 3)
    i = int(inside[np.argmax(cert3.leaf_bound[inside])])
    b = cert3.leaf_bound.copy()
    b[i] = -np.inf
    rep = check_certificate(_tamper(cert3, leaf_bound=b))
    assert rep.status == "refuted" and rep.bad_index == i and "certified in arb" in rep.bad
    b = np.where(cert3.leaf_kind != 3, -np.inf, cert3.leaf_bound)
    rep = check_certificate(_tamper(cert3, leaf_bound=b, upper=1e-300, reported=1e-300))
    assert rep.status == "refuted" and not rep.ok


def test_a_reported_bound_below_a_box_bound_is_named(cert3):
    inside = cert3.leaf_kind != 3
    i = int(np.argmax(np.where(inside, cert3.leaf_bound, -np.inf)))
    rep = check_certificate(_tamper(cert3, upper=float(cert3.leaf_bound[i]) * 0.99))
    assert rep.status == "refuted" and "reported bound" in rep.bad
    assert f"box #{int(cert3.leaf_id[i])}" in rep.bad
    # and the number the caller uses must be at least R² × the reported bound
    rep = check_certificate(_tamper(cert3, reported=cert3.upper * 0.99))
    assert rep.status == "refuted" and "number used" in rep.bad


def test_an_outside_box_that_meets_the_domain_is_refuted(cert3):
    kind = cert3.leaf_kind.copy()
    i = int(np.flatnonzero(kind == 0)[0])
    kind[i] = 3  # a bounded box claimed outside
    rep = check_certificate(_tamper(cert3, leaf_kind=kind))
    assert rep.status == "refuted" and "marked outside" in rep.bad


def test_a_check_out_of_budget_is_undecided_never_verified(cert3):
    rep = check_certificate(cert3, max_pieces=10)
    assert rep.status == "undecided" and not rep.ok


# --------------------------------------------------------------------------- own arithmetic


def test_intervals_enclose_exact_rational_results():
    rng = np.random.default_rng(0)
    a = rng.normal(size=400) * 10.0 ** rng.integers(-8, 8, 400)
    b = rng.normal(size=400) * 10.0 ** rng.integers(-8, 8, 400)
    A, Bv = Iv(a), Iv(b)
    for op, exact in ((lambda x, y: x + y, lambda x, y: x + y),
                      (lambda x, y: x - y, lambda x, y: x - y),
                      (lambda x, y: x * y, lambda x, y: x * y),
                      (lambda x, y: x / y, lambda x, y: x / y)):
        r = op(A, Bv)
        for k in range(len(a)):
            e = exact(Fraction(a[k]), Fraction(b[k]))
            assert Fraction(r.lo[k]) <= e <= Fraction(r.hi[k])
    s = Iv(np.abs(a)).sqrt()
    assert np.all(s.lo ** 2 <= np.abs(a)) and np.all(s.hi ** 2 >= np.abs(a))
    lo, hi = exp_enclosure(np.array([-700.0, -1.0, 0.0, 1e-300, 0.5, 3.0, 700.0]))
    import flint

    for x, l, h in zip([-700.0, -1.0, 0.0, 1e-300, 0.5, 3.0, 700.0], lo, hi):
        e = flint.arb(x).exp()
        assert flint.arb(l) <= e.lower() and e.upper() <= flint.arb(h)


def test_taylor_models_enclose_their_function_on_random_boxes():
    rng = np.random.default_rng(1)
    B, D = 300, 2
    mid = rng.uniform(-1, 1, (B, D))
    half = rng.uniform(0.001, 0.6, (B, D))
    g = [TM.variable(mid[:, k], half[:, k], k, D) for k in range(D)]
    e0 = (g[0] * 1.5 - g[1]).exp()
    e1 = (g[1] * g[0]).exp()
    f = (e0 * (e0 + e1 + 1.0).recip() - g[0] * g[1]).range()
    eps = rng.uniform(-1, 1, (64, B, D))
    x = mid + half * eps
    v = np.exp(1.5 * x[..., 0] - x[..., 1])
    w = np.exp(x[..., 1] * x[..., 0])
    true = v / (v + w + 1.0) - x[..., 0] * x[..., 1]
    assert np.all(true >= f.lo - 1e-12 * np.abs(true)) and np.all(true <= f.hi + 1e-12 * np.abs(true))
    # and at the corners (where the third-order remainder is largest)
    for sx in (-1, 1):
        for sy in (-1, 1):
            x = mid + half * np.array([sx, sy])
            v, w = np.exp(1.5 * x[:, 0] - x[:, 1]), np.exp(x[:, 1] * x[:, 0])
            t = v / (v + w + 1.0) - x[:, 0] * x[:, 1]
            assert np.all((t >= f.lo) & (t <= f.hi))


def test_the_checker_shares_no_code_with_what_it_checks():
    for path in sorted((ROOT / "icltheory" / "certify").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            for name in names:
                assert not name.startswith(("icltheory.bounds", "proofs", "..bounds")), \
                    f"{path.name} imports {name}"
                assert name.startswith((".", "numpy", "flint", "sympy", "math", "time",
                                        "dataclasses", "fractions", "typing", "contextlib",
                                        "__future__", "scipy", "functools")), \
                    f"{path.name} imports {name}"


def test_a_scaled_certificate_names_the_number_used():
    """Where the certificate's bounds are on its own scale (the softmax constants at R ≠ 1 are
    certified for R = 1 and used × R²), the check's line says what the number used is, so a
    bound of 3.6 next to a band of [3.2, 29] is not read as the constant itself."""
    from icltheory.certify._check import CheckReport

    rep = CheckReport("verified", 10, {"bounded": 10}, "exact", 3.5, 3.6, 32.4, 12, 0.1, factor=9.0)
    assert "the number used, 32.4, is at least 9 × the reported bound" in rep.summary(False)
    same = CheckReport("verified", 10, {"bounded": 10}, "exact", 3.5, 3.6, 3.6, 12, 0.1)
    assert "number used" not in same.summary(False)


@pytest.mark.parametrize("loss", ["rescaled", "normalized"])
def test_a_ratio_certificate_of_another_quantity_is_refuted(loss):
    """The ratio form's checker does not take ψ on trust: a certificate whose domain names ψ/2
    (every bound halved with it, consistent with itself) or ψ without its sup term is refuted,
    since ψ must be the checker's own formula; the true ψ verifies."""
    import sympy as sp

    from icltheory.certify import SoftmaxRatio
    from proofs.softmax_regression.theory import _hessian as hessian

    band = _band(loss=loss, n=2, R=1.0, boxes=4000, method="ratio")
    cert, dom = band.certificate, band.certificate.domain
    rh = hessian.reduced_hessian(loss, 2)
    assert check_certificate(cert).status == "verified"
    # the ‖·‖ term of the sup over targets dropped
    no_sup = rh.psi.replace(lambda e: e.is_Pow and e.exp == sp.Rational(1, 2), lambda e: sp.Integer(0))
    assert no_sup != rh.psi and no_sup.free_symbols
    for psi, scale in ((rh.psi / 2, 0.5), (no_sup, 1.0)):
        other = SoftmaxRatio(loss, dom.n, dom.R, dom.rho, dom.z_max, psi, rh.x, rh.v)
        bad = _tamper(cert, domain=other, leaf_bound=np.asarray(cert.leaf_bound) * scale,
                      upper=cert.upper * scale)
        rep = check_certificate(bad)
        assert rep.status == "refuted" and "not the checker's formula" in rep.bad, rep.summary()


def test_a_leaf_of_unknown_kind_is_refuted(cert3):
    kind = np.asarray(cert3.leaf_kind).copy()
    kind[3] = 9
    rep = check_certificate(_tamper(cert3, leaf_kind=kind))
    assert rep.status == "refuted" and "unknown kind" in rep.bad
