r"""The two reduced domains of the softmax-regression certificates, as an independent reader
states them: which set must be covered, which quantity is bounded, how a box is enclosed.

**SoftmaxPencil** (normalized loss).  Coordinates $\theta=(g_0..g_{m-1},c_0..c_{m-1})$,
$m=n-1$.  Logits $z_k=g_k+\dots+g_{m-1}$, $z_{n-1}=0$ (sorted: the quantity is symmetric under a
simultaneous permutation), $f=\operatorname{softmax}(z)$; target
$b=(c,-\textstyle\sum c)/\lVert(c,-\sum c)\rVert$ (every unit $b\perp\mathbf 1$ is this for a
$c$ on the boundary of $[-1,1]^m$, scaled so that its largest entry is $\pm1$).  Quantity
$\psi(\theta)=\max|\lambda(K(f,c'),G)|$, $c'=c/\lVert(c,-\sum c)\rVert$, $G=I+\mathbf 1\mathbf
1^\top$, with $K$ the $m\times m$ SymPy matrix the caller passes (the derivation's pencil).
Domain: $g\ge0$ with centred logit norm $N(g)\le\rho$ — $N(g)^2=\frac1n\sum_{i<j}(z_i-z_j)^2$
grows with every $g_k$, and $N(g)\ge g_k\sqrt{(k+1)(n-k-1)/n}$, so the regions are
$[0,G_k]$ per gap with $G_k^2(k+1)(n-k-1)\ge n\rho^2$ (checked exactly) times the $2m$ faces
$c_j=\pm1$.  A box is outside iff $N$ at its lower corner exceeds $\rho$ (exact rationals).

Enclosure of $\psi$ on a box.  The target patch by convexity: halved along each coordinate with
a range, it is the union of sub-patches, each the hull of its corners (the patch's $3^k$ grid
points: ends and middles); $K$ is affine in $b$, so $\max|\lambda(K,G)|$ is convex in $b$, and
every $b(c)$ of a sub-patch is $t\,y$ with $y$ a convex combination of its corners' unit targets
and $t\in[1,1/\nu]$ ($\nu\le\langle w,y\rangle/\lVert w\rVert$ for a fixed $w$): the bound is
the largest over the grid points $u_v$ at $t=1$ and at the largest $1/\nu$ of the sub-patches
$u_v$ is a corner of.  Over the gaps, at each vertex: $Q^\top KQ=U^\top\operatorname{diag}(\delta)U$,
$U=TE\,Q$ ($Q$ the float eigenbasis of the pencil at the box centre, its departure from
$G$-orthonormality bounded: $|\lambda(K,G)|\le\max|\lambda(Q^\top KQ)|/(1-\lVert Q^\top GQ-I
\rVert_F)$), each entry enclosed by second-order Taylor models in $g$ (:mod:`._taylor`) and by
plain intervals, the narrower kept; then an eigenvalue bound for an interval symmetric matrix
(for the top eigenvalue, $\lambda_{\max}\le$ the larger root of
$\begin{pmatrix}a&\lVert\beta\rVert\\\lVert\beta\rVert&d\end{pmatrix}$ with $a$ the pivot entry,
$\beta$ the rest of its row and $d$ a Gershgorin bound of the remaining block; the same for
$-\lambda_{\min}$).  $f$ over a box: $f_k$ increases with $z_k$ and decreases with the other
logits, so its range is exact per coordinate (exponentials from arb).  The checker's $\delta$
and $K=(TE)^\top\operatorname{diag}(\delta)(TE)$ are checked against the derivation's SymPy
forms by exact expansion.

**SoftmaxRatio** (rescaled loss, or the normalized loss by its ratio form).  Coordinates
$(z,v)$: sorted logits ($z_0\ge\dots$; normalized: $z_{n-1}=0$ dropped, centred norm
$\le\rho$; rescaled: $\lVert z\rVert\le\rho$) and a direction $v$ on a face $v_i=1$ of the cube
(normalized: $v_{n-1}=0$ dropped) — $\psi$ is even and 0-homogeneous in $v$.  Quantity: the
SymPy expression $\psi(x,v)$ the caller passes, $x=e^z$ (rescaled) or
$\operatorname{softmax}(z)$, checked against the checker's own formula for it (the sup over
unit targets of the logit Hessian's quadratic form, over the direction's norm) by exact
expansion.  Enclosure: mean-value forms in $(x, v)$ over the box — about the
centre and about the point that minimises the form's upper end (Baumann) — with derivatives
by forward mode over intervals, intersected with the plain evaluation.  Outside: unsorted
($\mathrm{lo}_j>\mathrm{hi}_i$ for some $i<j$) or the smallest norm over the box above
$\rho$ (exact rationals).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from ._intervals import Dual, Iv, arb_to_float, exp_iv, iv_sum
from ._program import compile_program
from ._taylor import TM

__all__ = ["SoftmaxPencil", "SoftmaxRatio"]


# ----------------------------------------------------------------------------- operation sets


class _IvOps:
    @staticmethod
    def const(q: Fraction) -> Iv:
        f = float(q)
        if Fraction(f) == q:
            return Iv(np.float64(f))
        return Iv(np.nextafter(f, -np.inf), np.nextafter(f, np.inf))

    sqr = staticmethod(lambda x: x.sqr())
    sqrt = staticmethod(lambda x: x.sqrt())
    abs = staticmethod(lambda x: abs(x))
    recip = staticmethod(lambda x: x.recip())


class _DualOps(_IvOps):
    def __init__(self, D: int):
        self.D = D

    def const(self, q: Fraction) -> Dual:  # type: ignore[override]
        return Dual(_IvOps.const(q), [None] * self.D)


class _ArbOps:
    @staticmethod
    def const(q: Fraction):
        import flint

        return flint.arb(q.numerator) / flint.arb(q.denominator)

    @staticmethod
    def sqr(x):
        return x * x

    @staticmethod
    def sqrt(x):
        return x.sqrt()

    @staticmethod
    def abs(x):
        return abs(x)

    @staticmethod
    def recip(x):
        return 1 / x


def _arb(x: float):
    import flint

    return flint.arb(float(x))


def _prec(bits: int):
    import contextlib

    import flint

    @contextlib.contextmanager
    def cm():
        old = flint.ctx.prec
        flint.ctx.prec = bits
        try:
            yield
        finally:
            flint.ctx.prec = old

    return cm()


def _softmax_box(zlo: list[Iv], zhi: list[Iv]) -> list[Iv]:
    """softmax over a box of logits given exp at the lower and upper logits (intervals):
    exact per coordinate up to rounding (f_k increases with z_k, decreases with the others)."""
    n = len(zlo)
    out = []
    for k in range(n):
        lo_den = zlo[k] + iv_sum([zhi[j] for j in range(n) if j != k]) if n > 1 else zlo[k]
        hi_den = zhi[k] + iv_sum([zlo[j] for j in range(n) if j != k]) if n > 1 else zhi[k]
        flo = (zlo[k] / lo_den).lo
        fhi = (zhi[k] / hi_den).hi
        out.append(Iv(np.maximum(flo, 0.0), np.minimum(fhi, 1.0)))
    return out


def _exact(x: float) -> Fraction:
    return Fraction(float(x))


# ----------------------------------------------------------------------------- the pencil


class SoftmaxPencil:
    """The normalized loss's reduced domain in gap and target coordinates (module docstring).
    ``delta``: the n SymPy expressions δ_k(x, c) of J = Tᵀdiag(δ)T and ``K`` the m×m pencil
    matrix (the derivation's; both are checked exactly against the formulas the checker uses);
    ``x`` (f, n symbols), ``c`` (m symbols); ``rho``: the logits' radius (must be ≥ R²);
    ``gap_max``: the gaps' ranges."""

    kind = "softmax-pencil"
    #: its outside test is exact both ways: a box it does not confirm meets the domain
    outside_iff = True

    def __init__(self, n: int, R: float, rho: float, gap_max, delta, K, x, c):
        if n < 2:
            raise ValueError("the pencil needs n ≥ 2 logits")
        self.n, self.m, self.R, self.rho = int(n), int(n) - 1, float(R), float(rho)
        self.gap_max = np.asarray(gap_max, dtype=float)
        self.D = 2 * self.m
        m = self.m
        self._pairs = [(i, j) for i in range(m) for j in range(i, m)]
        self.form_ok = _pencil_form_ok(self.n, tuple(delta), tuple(tuple(r) for r in K),
                                       tuple(x), tuple(c))
        self.program = compile_program(list(x) + list(c), list(delta))
        G = np.eye(m) + 1.0
        w, V = np.linalg.eigh(G)
        self._Gih = V @ np.diag(w ** -0.5) @ V.T  # float: only to choose the eigenbasis

    # ------------------------------------------------------------------ the set
    def describe(self) -> str:
        return (f"sup of max|λ(K(f, c'), G)| over sorted logits with centred norm ≤ ρ = "
                f"{self.rho!r} (n = {self.n}: gaps g ≥ 0) and unit targets b ⟂ 1 (c on the "
                f"faces of [−1, 1]^{self.m})")

    def parameters_ok(self) -> str | None:
        """None if the forms are the checker's, ρ ≥ R² and the gap ranges hold the ball
        (exact), else why not."""
        if not self.form_ok:
            return ("the derivation's δ or K is not the checker's formula "
                    "(δ_k = f_k(2f_k − ‖f‖² − b_k + ⟨f, b⟩), K = (TE)ᵀdiag(δ)(TE))")
        if _exact(self.rho) < _exact(self.R) ** 2:
            return f"ρ = {self.rho!r} < R² (R = {self.R!r})"
        n, rho2 = self.n, _exact(self.rho) ** 2
        for k in range(self.m):
            if _exact(self.gap_max[k]) ** 2 * (k + 1) * (n - k - 1) < n * rho2:
                return f"gap {k}'s range {self.gap_max[k]!r} misses part of the ball"
        return None

    def regions(self) -> list[tuple[np.ndarray, np.ndarray]]:
        m, out = self.m, []
        for j in range(m):
            for s in (1.0, -1.0):
                lo = np.concatenate([np.zeros(m), -np.ones(m)])
                hi = np.concatenate([self.gap_max, np.ones(m)])
                lo[m + j] = hi[m + j] = s
                out.append((lo, hi))
        return out

    def outside(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boxes certainly outside the domain (their lower corner's centred norm > ρ, or a
        negative gap range): interval arithmetic where it decides, exact rationals where not."""
        n, m = self.n, self.m
        g = [Iv(np.maximum(lo[:, k], 0.0)) for k in range(m)]
        z = [iv_sum(g[k:]) for k in range(m)] + [Iv(np.zeros(len(lo)))]
        N2 = iv_sum([(z[i] - z[j]).sqr() for i in range(n) for j in range(i + 1, n)]) / float(n)
        rho2 = Iv(np.float64(self.rho)).sqr()
        out = np.any(hi[:, :m] < 0, axis=1) | (N2.lo > rho2.hi)
        unsure = ~out & ~(N2.hi <= rho2.lo)
        for b in np.flatnonzero(unsure):
            out[b] = self._outside_exact(lo[b], hi[b])
        return out

    def _outside_exact(self, lo: np.ndarray, hi: np.ndarray) -> bool:
        """N(lower corner)² > ρ² in exact rationals."""
        n, m = self.n, self.m
        g = [max(_exact(v), Fraction(0)) for v in lo[:m]]
        z = [sum(g[k:], Fraction(0)) for k in range(m)] + [Fraction(0)]
        N2 = sum(((z[i] - z[j]) ** 2 for i in range(n) for j in range(i + 1, n)),
                 Fraction(0)) / n
        return bool(N2 > _exact(self.rho) ** 2)

    # ------------------------------------------------------------------ enclosures
    def enclose(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Upper bounds of ψ on the boxes (rows of lo, hi), +inf where undecided.

        The target patch by convexity (:meth:`_target_grid`): every b(c) of one of the
        sub-patches that halve the box's target coordinates is t·y with y a convex combination
        of the sub-patch corners' unit targets u_v and t = 1/‖y‖ ∈ [1, 1/ν], K is affine in b and
        max|λ| convex in it, so ψ on the box is at most the largest over the grid points u_v,
        at t = 1 and at the largest 1/ν of their sub-patches, of ψ's sup over the gaps.  Over
        the gaps: in the float eigenbasis Q of the pencil at the box centre, QᵀKQ =
        Uᵀdiag(δ)U with U = TE·Q and δ_k = α_k + β_k (α free of b, β linear in it), so at a
        vertex t·u the entries are A_ij + t·C_ij(u), A_ij = Σ_k α_k U_ki U_kj and
        C_ij = Σ_k β_k(u) U_ki U_kj enclosed by second-order Taylor models in g (and by plain
        intervals, the narrower kept); then the interval eigenvalue bound."""
        if not len(lo):
            return np.zeros(0)
        m, B = self.m, len(lo)
        with np.errstate(all="ignore"):
            glo, ghi = lo[:, :m], hi[:, :m]
            f_iv = self._f_box(glo, ghi)
            f_tm = self._f_taylor(glo, ghi, f_iv)
            clo, chi = lo[:, m:], hi[:, m:]
            w = np.clip(0.5 * (clo + chi), clo, chi)  # a float target direction in the patch
            # the eigenbasis at the centre (float, any choice is sound)
            gm = np.clip(0.5 * (glo + ghi), glo, ghi)
            Q = self._basis(gm, w)
            eta = _nonorthogonality(Q)
            U_tm = _te_q(f_tm, Q)
            U_iv = _te_q(f_iv, Q)
            A, W = self._entry_forms(f_tm, U_tm)
            points, nu = self._target_grid(clo, chi)
            out = np.full(B, -np.inf)
            for u, nu_p in zip(points, nu):
                C = self._target_forms(f_tm, W, u)
                t_end = Iv(np.where(nu_p > 0, nu_p, 1.0)).recip()
                for t in (None, t_end):
                    cp = u if t is None else [uk * t for uk in u]
                    out = np.maximum(out, self._vertex_bound(A, C, t, f_iv, U_iv, cp, eta))
                out = np.where(nu_p > 0, out, np.inf)
        return np.where(np.isfinite(out), out, np.inf)

    @staticmethod
    def _target_grid(clo: np.ndarray, chi: np.ndarray) -> tuple[list, list]:
        """The target patch [clo, chi] (B, m) as the union of the sub-patches that halve each
        coordinate with a range: their corners are the 3^k grid points (k the most such
        coordinates of a box; a box with fewer repeats points).  Returns per grid point its
        c' (Intervals) and a float ν with 0 < ν ≤ ‖y‖ for every convex combination y of the
        unit targets of the corners of any sub-patch it belongs to (ν ≤ 0: not bounded), so
        that every b of those sub-patches is t·y with y such a combination and t ∈ [1, 1/ν]."""
        B, m = clo.shape
        # per box the coordinates with a range first; a fixed one contributes one value
        slots = np.argsort(clo == chi, axis=1, kind="stable")
        k = int(np.max(np.sum(clo < chi, axis=1))) if B else 0
        rows = np.arange(B)[:, None]
        cols = slots[:, :k]
        a, b = clo[rows, cols], chi[rows, cols]
        half = np.clip(0.5 * (a + b), a, b)  # one float cut per slot, shared by both halves

        def place(vals: np.ndarray) -> np.ndarray:
            c = clo.copy()
            c[rows, cols] = vals
            return c

        def digits(v: int) -> list[int]:
            return [(v // 3 ** j) % 3 for j in range(k)]

        grid = []
        for v in range(3 ** k):
            d = np.array(digits(v))
            vals = np.where(d == 0, a, np.where(d == 1, half, b))
            c = place(vals)
            grid.append(_unit_target([Iv(c[:, i]) for i in range(m)]))
        nu = [np.full(B, np.inf) for _ in grid]
        for s in range(2 ** k):
            low = np.array([(s >> j) & 1 == 0 for j in range(k)])
            sa, sb = np.where(low, a, half), np.where(low, half, b)
            w = [Iv(x) for x in place(0.5 * (sa + sb)).T]  # any fixed w serves: ‖y‖ ≥ ⟨w, y⟩/‖w‖
            wn = _bnorm(w)
            members = [sum(((((s >> j) & 1) + ((e >> j) & 1)) * 3 ** j) for j in range(k))
                       for e in range(2 ** k)]
            nu_s = np.full(B, np.inf)
            for v in members:
                nu_s = np.minimum(nu_s, (_bdot(w, grid[v]) / wn).lo)
            for v in members:
                nu[v] = np.minimum(nu[v], nu_s)
        return grid, nu

    def _basis(self, g: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Float eigenbasis Q (B, m, m) of the pencil at points, columns by increasing
        eigenvalue (only a choice of basis: its inexactness is bounded separately)."""
        m, B = self.m, len(g)
        f = self._f_at(g)
        cp = _unit_target([Iv(c[:, k]) for k in range(m)])
        dl = self.program.run(_IvOps, *f, *cp)
        fm = np.stack([0.5 * (x.lo + x.hi) for x in f], 1)
        dm = np.stack([np.broadcast_to(0.5 * (x.lo + x.hi), (B,)) for x in dl], 1)
        TE = np.vstack([np.eye(m), -np.ones((1, m))])[None] - (fm[:, :m] - fm[:, m:])[:, None, :]
        K = np.nan_to_num(np.einsum("bki,bk,bkj->bij", TE, dm, TE))
        _, U = np.linalg.eigh(self._Gih @ K @ self._Gih)
        return np.nan_to_num(self._Gih @ U)

    def _entry_forms(self, f: list, U: list) -> tuple:
        """Taylor models in g of the b-free part of QᵀKQ, A_ij = Σ_k α_k W_ijk with
        α_k = f_k(2f_k − ‖f‖²), and of the products W_ijk = U_ki U_kj."""
        m, n = self.m, self.n
        f2 = f[0] * f[0]
        for k in range(1, n):
            f2 = f2 + f[k] * f[k]
        alpha = [f[k] * (f[k] * 2.0 - f2) for k in range(n)]
        A: dict = {}
        W: dict = {}
        for i in range(m):
            for j in range(i, m):
                W[i, j] = [U[k][i] * U[k][j] for k in range(n)]
                a = alpha[0] * W[i, j][0]
                for k in range(1, n):
                    a = a + alpha[k] * W[i, j][k]
                A[i, j] = a
        return A, W

    def _target_forms(self, f: list, W: dict, cp: list) -> dict:
        """The target's part of QᵀKQ at c' (intervals): C_ij = Σ_k β_k W_ijk with
        β_k = f_k(⟨f, b⟩ − b_k), b = (c', −Σc'), so that δ_k = α_k + β_k."""
        n = self.n
        b = list(cp) + [-iv_sum(list(cp))]
        fb = f[0].times_iv(b[0])
        for k in range(1, n):
            fb = fb + f[k].times_iv(b[k])
        beta = [f[k] * (fb - b[k]) for k in range(n)]
        C: dict = {}
        for key, Wk in W.items():
            acc = beta[0] * Wk[0]
            for k in range(1, n):
                acc = acc + beta[k] * Wk[k]
            C[key] = acc
        return C

    def _vertex_bound(self, A: dict, C: dict, t, f_iv: list, U_iv: list, cp: list,
                      eta: np.ndarray) -> np.ndarray:
        """Upper bound of sup over the gaps of max|λ(K(f, c'), G)| at c' = t·u (QᵀKQ =
        A + t·C(u)), the Taylor models' ranges intersected with plain intervals."""
        m, n = self.m, self.n
        dl = self.program.run(_IvOps, *f_iv, *cp)  # δ over the box, plain intervals
        E: list[list] = [[None] * m for _ in range(m)]
        for i in range(m):
            for j in range(i, m):
                tm = A[i, j] + (C[i, j] if t is None else C[i, j].times_iv(t))
                plain = iv_sum([dl[k] * (U_iv[k][i].sqr() if i == j else U_iv[k][i] * U_iv[k][j])
                                for k in range(n)])
                E[i][j] = E[j][i] = tm.range().meet(plain)
        top = _lam_max_bound(E, m - 1)
        bot = _lam_max_bound([[-e for e in row] for row in E], 0)
        lam = np.maximum(np.maximum(top, bot), 0.0)
        ok = eta < 0.5
        bound = (Iv(lam) / (1.0 - Iv(np.where(ok, eta, 0.0)))).upper()
        return np.where(ok & np.isfinite(bound), bound, np.inf)

    def _f_at(self, g: np.ndarray) -> list:
        """softmax(z(g)) at points (intervals from rounding only)."""
        n = self.n
        zero = Iv(np.zeros(len(g)))
        d = [zero]  # d_k = z_0 − z_k = g_0 + … + g_{k−1}
        for k in range(1, n):
            d.append(d[-1] + Iv(g[:, k - 1]))
        e = [exp_iv(-dk) for dk in d]
        tot = iv_sum(e)
        return [ek / tot for ek in e]

    def _f_box(self, lo: np.ndarray, hi: np.ndarray) -> list:
        """softmax(z(g)) over boxes of gaps: exact per coordinate up to rounding."""
        n, B = self.n, len(lo)
        zero = Iv(np.zeros(B))
        dlo, dhi = [zero], [zero]
        for k in range(1, n):
            dlo.append(dlo[-1] + Iv(lo[:, k - 1]))
            dhi.append(dhi[-1] + Iv(hi[:, k - 1]))
        # exp(−d) at the box's largest and smallest d (e_k decreases in d_k)
        e_lo = [Iv(exp_iv(-Iv(dk.hi)).lo) for dk in dhi]
        e_hi = [Iv(exp_iv(-Iv(dk.lo)).hi) for dk in dlo]
        return _softmax_box(e_lo, e_hi)

    def _f_taylor(self, lo: np.ndarray, hi: np.ndarray, f_iv: list) -> list:
        """softmax(z(g)) as Taylor models in g: e_k = exp(−(g_0 + … + g_{k−1})), f = e/Σe."""
        m, n = self.m, self.n
        mid = np.clip(0.5 * (lo + hi), lo, hi)
        half = np.nextafter(np.maximum(hi - mid, mid - lo), np.inf)
        g = [TM.variable(mid[:, k], half[:, k], k, m) for k in range(m)]
        e = [TM.const(Iv(np.ones(len(lo))), m)]
        d = None
        for k in range(1, n):
            d = g[k - 1] if d is None else d + g[k - 1]
            e.append((-d).exp())
        tot = e[0]
        for k in range(1, n):
            tot = tot + e[k]
        inv = tot.recip()
        return [(e[k] * inv).tighten(f_iv[k]) for k in range(n)]

    def _K_at(self, pts: np.ndarray) -> list[list]:
        """K at points θ as float matrices' interval entries (rounding only)."""
        m = self.m
        f = self._f_at(pts[:, :m])
        cp = _unit_target([Iv(pts[:, m + k]) for k in range(m)])
        dl = self.program.run(_IvOps, *f, *cp)
        Q = np.broadcast_to(np.eye(m), (len(pts), m, m))
        U = _te_q(f, np.ascontiguousarray(Q))
        n = self.n
        return [[iv_sum([dl[k] * (U[k][i] * U[k][j]) for k in range(n)]) for j in range(m)]
                for i in range(m)]

    # ------------------------------------------------------------------ a certified point value
    def value_lower(self, theta: np.ndarray) -> float:
        """A certified lower bound (arb) on ψ at the point θ (floats, taken exactly): Rayleigh
        quotients yᵀKy/yᵀGy at float vectors y, K = (TE)ᵀdiag(δ)(TE) in arb."""
        import flint

        m, n = self.m, self.n
        with _prec(128):
            g = [_arb(v) for v in theta[:m]]
            z = [sum(g[k:], flint.arb(0)) for k in range(m)] + [flint.arb(0)]
            e = [zk.exp() for zk in z]
            tot = sum(e, flint.arb(0))
            f = [ek / tot for ek in e]
            c = [_arb(v) for v in theta[m:]]
            s = sum(c, flint.arb(0))
            nb = (sum((ck * ck for ck in c), flint.arb(0)) + s * s).sqrt()
            cp = [ck / nb for ck in c]
            dl = self.program.run(_ArbOps, *f, *cp)
            TE = [[(1 if k == i else 0) - (1 if k == m else 0) - (f[i] - f[m]) for i in range(m)]
                  for k in range(n)]
            K = [[sum((dl[k] * TE[k][i] * TE[k][j] for k in range(n)), flint.arb(0))
                  for j in range(m)] for i in range(m)]
            Kf = np.array([[float(K[i][j].mid()) for j in range(m)] for i in range(m)])
            G = np.eye(m) + 1.0
            try:
                import scipy.linalg

                _, Y = scipy.linalg.eigh(Kf, G)
            except Exception:
                return -np.inf
            best = -np.inf
            for col, sgn in ((m - 1, 1), (0, -1)):
                y = [_arb(v) for v in Y[:, col]]
                num = sum((y[i] * K[i][j] * y[j] for i in range(m) for j in range(m)),
                          flint.arb(0))
                sy = sum(y, flint.arb(0))
                den = sum((yi * yi for yi in y), flint.arb(0)) + sy * sy
                r = num / den if sgn > 0 else -num / den
                best = max(best, arb_to_float(r.lower(), up=False))
        return best

    def value_float(self, pts: np.ndarray) -> np.ndarray:
        """ψ at points (float, for choosing where to certify)."""
        m, B = self.m, len(pts)
        K = self._K_at(pts)
        Kmid = np.zeros((B, m, m))
        for i in range(m):
            for j in range(m):
                Kmid[:, i, j] = 0.5 * (K[i][j].lo + K[i][j].hi)
        w = np.linalg.eigvalsh(self._Gih @ np.nan_to_num(Kmid) @ self._Gih)
        return np.maximum(w[:, -1], -w[:, 0])

    def widths(self) -> np.ndarray:
        """Coordinate scales for choosing where to cut a box."""
        return np.concatenate([np.maximum(self.gap_max, 1e-300), np.full(self.m, 2.0)])


def _unit_target(c: list) -> list:
    """c' = c/‖(c, −Σc)‖ (any number type with +, *, sqr, sqrt, recip)."""
    tot, sq = c[0], c[0].sqr()
    for ck in c[1:]:
        tot = tot + ck
        sq = sq + ck.sqr()
    inv = (sq + tot.sqr()).sqrt().recip()
    return [ck * inv for ck in c]


def _te_q(f: list, Q: np.ndarray) -> list[list]:
    """U = TE·Q (n × m) for f (intervals or Taylor models) and float Q (B, m, m):
    U_ki = y_k − ⟨f, y⟩ with y = E·q_i = (q_i, −Σq_i), ⟨f, y⟩ = Σ_{l<m} f_l q_li − f_{n−1}Σ_l q_li
    (each f enters once, so its error is counted once)."""
    n = len(f)
    m = n - 1
    U: list[list] = [[None] * m for _ in range(n)]
    for i in range(m):
        s = iv_sum([Iv(Q[:, l, i]) for l in range(m)])
        dot = f[m] * (-s)
        for l in range(m):
            dot = dot + f[l].scale(Q[:, l, i])
        for k in range(n):
            U[k][i] = (-dot) + (Iv(Q[:, k, i]) if k < m else -s)
    return U


@lru_cache(maxsize=16)
def _pencil_form_ok(n: int, delta: tuple, K: tuple, x: tuple, c: tuple) -> bool:
    """Whether the derivation's δ is f_k(2f_k − ‖f‖² − b_k + ⟨f, b⟩) with b = (c, −Σc) and its
    K is (TE)ᵀdiag(δ)(TE), TE_ki = [k=i] − [k=n−1] − (x_i − x_{n−1}) — the formulas the
    checker encloses (exact expansion)."""
    import sympy as sp

    m = n - 1
    b = list(c) + [-sum(c)]
    f2 = sum(xk ** 2 for xk in x)
    fb = sum(xk * bk for xk, bk in zip(x, b))
    for k in range(n):
        if sp.expand(x[k] * (2 * x[k] - f2 - b[k] + fb) - delta[k]) != 0:
            return False
    TE = [[(1 if k == i else 0) - (1 if k == m else 0) - (x[i] - x[m]) for i in range(m)]
          for k in range(n)]
    for i in range(m):
        for j in range(m):
            built = sum(delta[k] * TE[k][i] * TE[k][j] for k in range(n))
            if sp.expand(built - K[i][j]) != 0:
                return False
    return True


def _ratio_form_ok(loss: str, n: int, psi, x: tuple, v: tuple) -> bool:
    """Whether the derivation's ψ is the checker's: the sup over unit targets b of |vᵀJv|, J the
    logit Hessian, over ‖v‖² (rescaled; x = u = e^z) or ‖v − mean v‖² (normalized; x = f =
    softmax(z)), written here from the quadratic forms, by exact expansion.

    normalized: vᵀJv = Σ f_k²w_k² + ⟨f − b, q⟩ with w = v − ⟨f, v⟩, q_k = f_k(w_k² − ⟨f, w²⟩):
    affine in b, so the sup of its modulus is |Σ f_k²w_k² + ⟨f, q⟩| + ‖q‖.  rescaled: with
    α = Σu, p = u∘v, s = Σp, r = u∘v², m = Σr, vᵀJv = 2Σu_k²v_k² + (s² + αm)‖b‖² − ⟨b, 2sp +
    mu + αr⟩, whose sup over ‖b‖ ≤ 1 is 2Σu_k²v_k² + s² + αm + ‖2sp + mu + αr‖ (both
    coefficients ≥ 0, and its inf is ≥ −‖2sp + mu + αr‖)."""
    import sympy as sp

    if len(x) != n or len(v) != n:
        return False
    if loss == "normalized":
        mean_v = sum(fk * vk for fk, vk in zip(x, v))
        w = [vk - mean_v for vk in v]
        spread = sum(fk * wk ** 2 for fk, wk in zip(x, w))
        q = [fk * (wk ** 2 - spread) for fk, wk in zip(x, w)]
        top = (sp.Abs(sum(fk ** 2 * wk ** 2 for fk, wk in zip(x, w)) + sum(fk * qk for fk, qk in zip(x, q)))
               + sp.sqrt(sum(qk ** 2 for qk in q)))
        mine = n * top / sum((v[i] - v[j]) ** 2 for i in range(n) for j in range(i + 1, n))
    else:
        alpha = sum(x)
        p = [uk * vk for uk, vk in zip(x, v)]
        s_ = sum(p)
        r = [uk * vk ** 2 for uk, vk in zip(x, v)]
        m_ = sum(r)
        g = [2 * s_ * pk + m_ * uk + alpha * rk for pk, uk, rk in zip(p, x, r)]
        top = 2 * sum(uk ** 2 * vk ** 2 for uk, vk in zip(x, v)) + s_ ** 2 + alpha * m_ + sp.sqrt(sum(gk ** 2 for gk in g))
        mine = top / sum(vk ** 2 for vk in v)
    return sp.expand(sp.numer(sp.together(sp.expand(psi - mine)))) == 0


def _bnorm(c: list) -> Iv:
    """‖(c, −Σc)‖ for intervals c."""
    tot, sq = c[0], c[0].sqr()
    for ck in c[1:]:
        tot = tot + ck
        sq = sq + ck.sqr()
    return (sq + tot.sqr()).sqrt()


def _bdot(a: list, b: list) -> Iv:
    """⟨(a, −Σa), (b, −Σb)⟩ for intervals a, b."""
    return iv_sum([x * y for x, y in zip(a, b)]) + iv_sum(a) * iv_sum(b)


def _nonorthogonality(Q: np.ndarray) -> np.ndarray:
    """An upper bound on ‖QᵀGQ − I‖_F, G = I + 𝟏𝟏ᵀ (interval arithmetic on exact Q)."""
    B, m, _ = Q.shape
    col_sum = [iv_sum([Iv(Q[:, a, i]) for a in range(m)]) for i in range(m)]
    acc = Iv(np.zeros(B))
    for i in range(m):
        for j in range(m):
            g = iv_sum([Iv(Q[:, a, i]).scale(Q[:, a, j]) for a in range(m)]) + col_sum[i] * col_sum[j]
            if i == j:
                g = g - 1.0
            acc = acc + g.sqr()
    return acc.sqrt().upper()


def _lam_max_bound(E: list[list], p: int) -> np.ndarray:
    """An upper bound on λ_max over the interval symmetric matrix E with pivot p: the larger
    root of [[a, ‖β‖], [‖β‖, d]], a = E_pp, β = row p off the pivot, d ≥ λ_max of the rest
    (Gershgorin); increasing in a, ‖β‖, d, so upper ends are used."""
    m = len(E)
    a = Iv(E[p][p].upper())
    if m == 1:
        return a.hi
    others = [i for i in range(m) if i != p]
    beta2 = iv_sum([Iv(E[p][j].mag()).sqr() for j in others])
    d = None
    for i in others:
        r = Iv(E[i][i].upper())
        for j in others:
            if j != i:
                r = r + Iv(E[i][j].mag())
        d = r.hi if d is None else np.maximum(d, r.hi)
    dI = Iv(d)
    half = (a + dI) * 0.5
    lam = half + (((a - dI) * 0.5).sqr() + Iv(beta2.hi)).sqrt()
    return lam.upper()


# ----------------------------------------------------------------------------- the ratio form


class SoftmaxRatio:
    """The ratio form's domain (module docstring).  ``psi``: SymPy expression in ``x`` (n
    symbols: f or u) and ``v`` (n symbols); ``z_max``: the logits' range."""

    kind = "softmax-ratio"
    #: its outside test is sufficient only (sortedness and the norm are tested apart)
    outside_iff = False

    def __init__(self, loss: str, n: int, R: float, rho: float, z_max: float, psi, x, v):
        if loss not in ("normalized", "rescaled"):
            raise ValueError(f"unknown loss {loss!r}")
        self.loss, self.n, self.R, self.rho, self.z_max = loss, int(n), float(R), float(rho), \
            float(z_max)
        self.nz = self.n - 1 if loss == "normalized" else self.n
        self.nv = self.nz
        self.D = self.nz + self.nv
        self.form_ok = _ratio_form_ok(self.loss, self.n, psi, tuple(x), tuple(v))
        self.program = compile_program(list(x) + list(v), [psi])

    def describe(self) -> str:
        norm = "centred norm" if self.loss == "normalized" else "norm"
        return (f"sup of ψ(x(z), v) ({self.loss} loss, n = {self.n}) over sorted logits with "
                f"{norm} ≤ ρ = {self.rho!r} and directions v on the faces v_i = 1")

    def parameters_ok(self) -> str | None:
        if not self.form_ok:
            return (f"the derivation's ψ is not the checker's formula for the {self.loss} loss (the "
                    "sup over ‖b‖ ≤ 1 of |vᵀJv|, over the direction's norm)")
        if _exact(self.rho) < _exact(self.R) ** 2:
            return f"ρ = {self.rho!r} < R² (R = {self.R!r})"
        zmax2 = _exact(self.z_max) ** 2
        need = 2 * _exact(self.rho) ** 2 if self.loss == "normalized" else _exact(self.rho) ** 2
        if zmax2 < need:
            return f"the logits' range {self.z_max!r} misses part of the ball"
        return None

    def regions(self) -> list[tuple[np.ndarray, np.ndarray]]:
        nz, nv = self.nz, self.nv
        zlo = 0.0 if self.loss == "normalized" else -self.z_max
        out = []
        for face in range(nv):
            lo = np.concatenate([np.full(nz, zlo), -np.ones(nv)])
            hi = np.concatenate([np.full(nz, self.z_max), np.ones(nv)])
            lo[nz + face] = hi[nz + face] = 1.0
            out.append((lo, hi))
        return out

    def outside(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        nz = self.nz
        zl, zh = lo[:, :nz], hi[:, :nz]
        if self.loss == "normalized":  # z_{n−1} = 0 is part of the order
            zl = np.concatenate([zl, np.zeros((len(zl), 1))], axis=1)
            zh = np.concatenate([zh, np.zeros((len(zh), 1))], axis=1)
        k = zl.shape[1]
        unsorted = np.zeros(len(lo), bool)
        for i in range(k):
            for j in range(i + 1, k):
                unsorted |= zl[:, j] > zh[:, i]
        out = unsorted.copy()
        rho2 = _exact(self.rho) ** 2
        todo = ~unsorted
        if self.loss == "rescaled":  # the smallest norm over the box, by interval arithmetic
            d = [Iv(np.maximum(np.maximum(zl[:, j], -zh[:, j]), 0.0)) for j in range(k)]
            m2i = iv_sum([x.sqr() for x in d])
            r2 = Iv(np.float64(self.rho)).sqr()
            out |= todo & (m2i.lo > r2.hi)
            todo &= ~out & ~(m2i.hi <= r2.lo)
        for b in np.flatnonzero(todo):
            ivs = [(_exact(a), _exact(c)) for a, c in zip(zl[b], zh[b])]
            m2 = _min_centred_sq(ivs) if self.loss == "normalized" else \
                sum((max(a, Fraction(0)) ** 2 + max(-c, Fraction(0)) ** 2 for a, c in ivs),
                    Fraction(0))
            out[b] = m2 > rho2
        return out

    def _x_box(self, lo: np.ndarray, hi: np.ndarray) -> list:
        """x over the boxes (intervals): e^z per coordinate (rescaled) or softmax(z) (exact per
        coordinate: f_k increases with z_k and decreases with the others)."""
        nz, B = self.nz, len(lo)
        if self.loss == "rescaled":
            return [exp_iv(Iv(lo[:, k], hi[:, k])) for k in range(nz)]
        el = [Iv(exp_iv(Iv(lo[:, k])).lo) for k in range(nz)] + [Iv(np.ones(B))]
        eh = [Iv(exp_iv(Iv(hi[:, k])).hi) for k in range(nz)] + [Iv(np.ones(B))]
        return _softmax_box(el, eh)

    def _x_at(self, pts) -> list:
        nz, B = self.nz, len(pts)
        e = [exp_iv(Iv(pts[:, k])) for k in range(nz)]
        if self.loss == "rescaled":
            return e
        e.append(Iv(np.ones(B)))
        tot = iv_sum(e)
        return [ek / tot for ek in e]

    def _v_at(self, pts: np.ndarray) -> list:
        v = [Iv(pts[:, self.nz + k]) for k in range(self.nv)]
        if self.loss == "normalized":
            v.append(Iv(np.zeros(len(pts))))
        return v

    def enclose(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Upper bounds of ψ on the boxes: a mean-value form in (x, v) — ψ at the centre of the
        box's x-range and v-range plus the enclosed gradient times the half-widths — and the
        plain evaluation, the smaller kept."""
        return self.enclose_scored(lo, hi)[0]

    def enclose_scored(self, lo: np.ndarray, hi: np.ndarray):
        """(upper bounds, per-coordinate cut scores): the bounds of :meth:`enclose` and, per box
        coordinate, how much ψ may change along it (the enclosed gradient's magnitude times the
        coordinate's reach), so a box that needs cutting is cut where it matters."""
        if not len(lo):
            return np.zeros(0), np.zeros((0, self.D))
        nz, nv = self.nz, self.nv
        xs = self._x_box(lo, hi)
        vs = [Iv(lo[:, nz + k], hi[:, nz + k]) for k in range(nv)]
        if self.loss == "normalized":
            vs.append(Iv(np.zeros(len(lo))))
        args = xs + vs
        D = len(args)
        with np.errstate(all="ignore"):
            mids, dlt = [], []
            for x in args:
                m = np.clip(0.5 * (x.lo + x.hi), x.lo, x.hi)
                mids.append(Iv(m))
                dlt.append(x - Iv(m))
            duals = []
            for k, x in enumerate(args):
                grad: list = [None] * D
                if np.any(x.lo < x.hi):
                    grad[k] = Iv(np.ones(len(lo)))
                duals.append(Dual(x, grad))
            pc = self.program.run(_IvOps, *mids)[0]
            pb = self.program.run(_DualOps(D), *duals)[0]
            acc = pc
            for k in range(D):
                if pb.grad[k] is not None:
                    acc = acc + pb.grad[k] * dlt[k]
            out = acc.meet(pb.val).upper()
            # the same form about the point that minimises its upper end (Baumann): per
            # coordinate (g_hi·hi − g_lo·lo)/(g_hi − g_lo) for a gradient range [g_lo, g_hi] —
            # the upper end where ψ increases along the coordinate, the lower where it decreases
            cs, ds = [], []
            for k, x in enumerate(args):
                g = pb.grad[k]
                if g is None:
                    c = np.clip(0.5 * (x.lo + x.hi), x.lo, x.hi)
                else:
                    glo, ghi = g.lower(), g.upper()
                    den = ghi - glo
                    c = np.where(glo >= 0, x.hi, np.where(ghi <= 0, x.lo, (ghi * x.hi - glo * x.lo)
                                                         / np.where(den > 0, den, 1.0)))
                    c = np.clip(np.where(np.isfinite(c), c, 0.5 * (x.lo + x.hi)), x.lo, x.hi)
                cs.append(Iv(c))
                ds.append(x - Iv(c))
            acc = self.program.run(_IvOps, *cs)[0]
            for k in range(D):
                if pb.grad[k] is not None:
                    acc = acc + pb.grad[k] * ds[k]
            out = np.minimum(out, acc.upper())
            reach = [np.zeros(len(lo)) if pb.grad[k] is None else
                     np.nan_to_num(pb.grad[k].mag() * (args[k].hi - args[k].lo), nan=np.inf,
                                   posinf=1e300) for k in range(D)]
            nz, nv = self.nz, self.nv
            if self.loss == "rescaled":
                zs = reach[:nz]
            else:  # z_j moves every f_k, by at most f_k's range
                tot = np.sum(reach[:self.n], axis=0)
                zs = [tot * (hi[:, j] > lo[:, j]) for j in range(nz)]
            score = np.stack(list(zs) + reach[self.n:self.n + nv], axis=1)
        return np.where(np.isnan(out), np.inf, out), score

    def value_lower(self, theta: np.ndarray) -> float:
        import flint

        nz = self.nz
        with _prec(128):
            z = [_arb(t) for t in theta[:nz]]
            if self.loss == "rescaled":
                x = [zk.exp() for zk in z]
            else:
                e = [zk.exp() for zk in z] + [flint.arb(1)]
                tot = sum(e, flint.arb(0))
                x = [ek / tot for ek in e]
            v = [_arb(t) for t in theta[nz:]] + ([flint.arb(0)] if self.loss == "normalized"
                                                 else [])
            val = self.program.run(_ArbOps, *x, *v)[0]
            return arb_to_float(val.lower(), up=False)

    def value_float(self, pts: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            r = self.program.run(_IvOps, *self._x_at(pts), *self._v_at(pts))[0]
        return 0.5 * (r.lo + r.hi)

    def widths(self) -> np.ndarray:
        return np.concatenate([np.full(self.nz, max(self.z_max, 1e-300)), np.full(self.nv, 2.0)])


def _min_centred_sq(ivs: list[tuple[Fraction, Fraction]]) -> Fraction:
    """min over z_k ∈ [a_k, b_k] of Σ(z_k − mean z)² = min over c of Σ dist(c, [a_k, b_k])²
    (a convex piecewise quadratic in c: its minimum is at a breakpoint or where the derivative
    of one piece vanishes), exactly."""
    pts = sorted({p for ab in ivs for p in ab})

    def h(c: Fraction) -> Fraction:
        return sum(((a - c) ** 2 if c < a else (c - b) ** 2 if c > b else Fraction(0)
                    for a, b in ivs), Fraction(0))

    cands = list(pts)
    for lo, hi in zip(pts, pts[1:]):
        mid = (lo + hi) / 2
        below = [a for a, _ in ivs if a > mid]  # c < a_k on this piece
        above = [b for _, b in ivs if b < mid]
        cnt = len(below) + len(above)
        if cnt:
            c = (sum(below, Fraction(0)) + sum(above, Fraction(0))) / cnt
            if lo <= c <= hi:
                cands.append(c)
    return min(h(c) for c in cands)
