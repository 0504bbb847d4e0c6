r"""Derivations: recorded chains of steps, each verified by the cheapest decisive test.

A :class:`Derivation` keeps *named intermediate terms* (``define``) and *steps*
(``step(name, lhs, rhs, why)``).  Every step is verified the moment it is recorded, by the
first tier that decides it:

1. ``exact``   — ``cancel(together(lhs − rhs)) == 0`` (entrywise for matrices);
2. ``equals``  — SymPy's ``Expr.equals`` (may answer "don't know");
3. ``numeric`` — evaluation at random rational points with 50-digit mpmath arithmetic; a point
   where |lhs − rhs| is not tiny *refutes* the step, otherwise it is verified with high
   probability (not proved; recorded as such);
4. ``arb``     — for closed (symbol-free) expressions: a python-flint ball enclosure; a ball
   that excludes 0 refutes, a ball of radius < 1e-40 around 0 certifies |lhs − rhs| < radius.

A step that no tier decides is ``undecided``.  ``Derivation.ok`` is true only when every step
is verified; claims put that into a check, so a broken derivation makes the verdict fail.

*As derived* and *verified*: a step keeps both sides exactly as the claim recorded them, which
is what reports print.  A side may be an unevaluated SymPy form — ``Subs(e, b, a)``,
``Derivative(f, t)``, ``Limit(f, t, oo)``, ``Integral``, ``Sum``, ``Product``, or a part
wrapped in ``UnevaluatedExpr`` — so that a reader sees what was substituted, differentiated or
taken to the limit; the tiers then verify the sides after ``doit()`` (recorded as
``lhs_value``/``rhs_value`` and printed as the verified identity).  Sides that hold no such form
are verified as given.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Derivation", "Step", "verify_identity"]


#: what each tier means, as reports explain it
TIERS = {
    "exact": "cancel(together(lhs − rhs)) = 0: proved",
    "equals": "SymPy's Expr.equals(0) is True: proved by SymPy's simplification",
    "numeric": "|lhs − rhs| tiny at random rational points (50 digits): verified with high "
               "probability, not proved",
    "arb": "a certified interval enclosure of lhs − rhs (python-flint arb)",
}

#: SymPy classes that stand for an operation not carried out (see the module docstring)
_UNEVALUATED = ("UnevaluatedExpr", "Derivative", "Subs", "Limit", "Integral", "Sum", "Product")


@dataclass
class Step:
    """One recorded step: ``lhs = rhs`` as derived (or a fact), its justification and how it
    was verified.  ``lhs_value``/``rhs_value``: the sides the tiers verified, when they differ
    from the recorded ones (unevaluated forms carried out); ``None`` otherwise."""

    name: str
    lhs: Any
    rhs: Any
    why: str
    status: str = "undecided"  # verified | refuted | undecided
    tier: str | None = None
    detail: str = ""
    lhs_value: Any = None
    rhs_value: Any = None

    @property
    def is_fact(self) -> bool:
        """Whether this is a fact decided by the caller (``Derivation.fact``), not an identity."""
        return isinstance(self.lhs, str) and isinstance(self.rhs, bool)

    @property
    def verified_sides(self) -> tuple[Any, Any]:
        """The two sides the tiers compared (the recorded ones unless they were evaluated)."""
        return (self.lhs if self.lhs_value is None else self.lhs_value,
                self.rhs if self.rhs_value is None else self.rhs_value)

    @property
    def same_on_both_sides(self) -> bool:
        """Whether both recorded sides print the same (e.g. ``0 = 0``): the claim simplified
        them before recording, so the report can only show the result."""
        return not self.is_fact and _latex(self.lhs) == _latex(self.rhs)

    def as_dict(self) -> dict[str, Any]:
        """The step as data: both sides as recorded (SymPy ``srepr`` and LaTeX), the verified
        sides when they differ, why, status and tier."""
        out = {
            "name": self.name,
            "lhs": _srepr(self.lhs),
            "rhs": _srepr(self.rhs),
            "lhs_latex": _latex(self.lhs),
            "rhs_latex": _latex(self.rhs),
            "why": self.why,
            "status": self.status,
            "tier": self.tier,
            "detail": self.detail,
        }
        if self.lhs_value is not None or self.rhs_value is not None:
            lv, rv = self.verified_sides
            out["verified_lhs_latex"] = _latex(lv)
            out["verified_rhs_latex"] = _latex(rv)
        return out


def _srepr(e: Any) -> str:
    import sympy as sp

    return sp.srepr(e) if isinstance(e, (sp.Basic, sp.MatrixBase)) else str(e)


def _evaluated(e: Any) -> Any:
    """``e`` with its unevaluated forms carried out, or ``None`` when it holds none."""
    import sympy as sp

    kinds = tuple(getattr(sp, k) for k in _UNEVALUATED)
    if isinstance(e, (list, tuple)):
        parts = [_evaluated(x) for x in e]
        if all(p is None for p in parts):
            return None
        return type(e)(x if p is None else p for x, p in zip(e, parts))
    if isinstance(e, (sp.Basic, sp.MatrixBase)) and e.has(*kinds):
        return e.doit()
    return None


def _latex(e: Any) -> str:
    import sympy as sp

    try:
        return sp.latex(e)
    except Exception:  # pragma: no cover - exotic objects
        return str(e)


def _entries(e: Any) -> list:
    import sympy as sp

    if isinstance(e, (sp.MatrixBase,)):
        return list(e)
    if isinstance(e, sp.MatrixExpr):
        return list(e.as_explicit())
    if isinstance(e, (list, tuple)):
        out = []
        for x in e:
            out.extend(_entries(x))
        return out
    return [sp.sympify(e)]


def _shape(e: Any) -> tuple:
    """The shape of a side of an identity: a matrix's ``(rows, cols)``, a regular nested list's
    (``(n, …)``), ``()`` for a scalar, and for a list or tuple of parts of different shapes
    (several matrices) ``("parts", shape, …)``."""
    import sympy as sp

    if isinstance(e, sp.MatrixBase):
        return tuple(e.shape)
    if isinstance(e, sp.MatrixExpr):
        return tuple(int(n) for n in e.shape)
    if isinstance(e, (list, tuple)):
        inner = [_shape(x) for x in e]
        if inner and all(x == inner[0] for x in inner) and (not inner[0] or inner[0][0] != "parts"):
            return (len(e),) + inner[0]
        return ("parts",) + tuple(inner) if inner else (0,)
    return ()


def _shapes_agree(a: tuple, b: tuple) -> bool:
    """Whether two sides' shapes agree: equal, or a flat list of n entries against an n × 1 or
    1 × n matrix (a vector written either way), part by part for sides made of parts; a
    transposed or reshaped side does not."""
    if a == b:
        return True
    if a[:1] == ("parts",) or b[:1] == ("parts",):
        return (a[:1] == b[:1] == ("parts",) and len(a) == len(b)
                and all(_shapes_agree(x, y) for x, y in zip(a[1:], b[1:])))
    for flat, other in ((a, b), (b, a)):
        if len(flat) == 1 and len(other) == 2 and 1 in other and other[0] * other[1] == flat[0]:
            return True
    return False


def _canonical(d: Any) -> Any:
    """``cancel(together(expand(d)))``, or ``None`` when SymPy cannot form it."""
    import sympy as sp

    try:
        return sp.cancel(sp.together(sp.expand(d)))
    except Exception:
        return None


def _nonzero_rational_function(c: Any) -> bool:
    """Whether ``c`` (a canonical form ``p/q`` from :func:`_canonical`) is a nonzero rational
    function with rational coefficients: then ``p`` is a nonzero polynomial, which is not zero
    on any open set of its symbols (nor on all integer points), so ``lhs = rhs`` is false."""
    import sympy as sp

    if c is None or c == 0 or not isinstance(c, sp.Expr):
        return False
    if c.atoms(sp.NumberSymbol) or not all(n.is_Rational for n in c.atoms(sp.Number)):
        return False
    if c.atoms(sp.Function):  # sin(1)² + cos(1)² − 1 is no rational number: cancel cannot see it is 0
        return False
    if not all(p.exp.is_Integer for p in c.atoms(sp.Pow)):
        return False
    return bool(c.is_rational_function(*sorted(c.free_symbols, key=str)))


def _random_point(symbols: Any, rnd: random.Random) -> dict[Any, Any]:
    import sympy as sp

    pt = {}
    for s in symbols:
        if s.is_integer:
            pt[s] = sp.Integer(rnd.randint(2, 9))
        elif s.is_positive or s.is_nonnegative:
            pt[s] = sp.Rational(rnd.randint(1, 997), rnd.randint(1, 331))
        else:
            pt[s] = sp.Rational(rnd.randint(-997, 997), rnd.randint(1, 331))
    return pt


def _nonzero_at_random_points(diffs: Any, *, points: int, seed: int) -> tuple[str, str, str] | None:
    """A refutation where some ``lhs − rhs`` is nonzero at a random rational point respecting
    the symbols' assumptions: exactly (the value is a nonzero rational number) or numerically
    (≥ 1e-20 relative to its terms' scale at 50 digits); ``None`` when nothing was found."""
    import sympy as sp

    free = sorted(set().union(*(d.free_symbols for d in diffs)), key=lambda s: s.name)
    rnd = random.Random(seed)
    for _ in range(points):
        pt = _random_point(free, rnd)
        for k, d in enumerate(diffs):
            try:
                exact = d.xreplace(pt)
                if exact.is_Rational and exact != 0:
                    return ("refuted", "exact", f"entry {k}: lhs − rhs = {exact} ≠ 0 at {pt} "
                            "(exact rational arithmetic)")
                val = sp.N(exact, 50)
                if not val.is_number or val.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
                    continue
                # SymPy floats keep any exponent (a value of 1e-900 is not rounded to 0)
                mag = sp.Abs(val)
                if mag == 0 or not mag.is_finite:  # zero to the digits carried: no terms to size
                    continue
                scale = max((sp.Abs(sp.N(a.xreplace(pt), 50)) for a in sp.Add.make_args(d)),
                            default=sp.Float(0))
                if not (scale.is_finite and scale > 0):
                    continue
            except Exception:
                continue
            if mag > NUMERIC_RTOL * scale:  # zero to the digits carried decides nothing (the usual true step)
                return "refuted", "numeric", f"entry {k}: |lhs − rhs| = {sp.N(mag, 3)} at {pt} (50 digits)"
    return None


#: the largest expression (in SymPy operations) handed to ``Expr.equals``
EQUALS_MAX_OPS = 300
#: the numeric tier's tolerance on |lhs − rhs| relative to the size of its terms, at 50 digits
#: (a true identity leaves ≲ 1e-45 of cancellation error; any real discrepancy is far above)
NUMERIC_RTOL = 1e-20


def verify_identity(lhs: Any, rhs: Any, *, points: int = 12, seed: int = 0) -> tuple[str, str | None, str]:
    """Return (status, tier, detail) for the identity ``lhs == rhs``."""
    import sympy as sp

    L, R = _entries(lhs), _entries(rhs)
    if len(L) != len(R) or not _shapes_agree(_shape(lhs), _shape(rhs)):
        return "refuted", "exact", f"shape mismatch: {_shape(lhs)} vs {_shape(rhs)} ({len(L)} vs {len(R)} entries)"
    diffs = [sp.sympify(a) - sp.sympify(b) for a, b in zip(L, R)]
    # tier 0: a false identity is usually plainly nonzero at a random admissible point; one
    # point at 50 digits refutes it before the exact tiers, which can spend seconds trying
    # to prove it.  A zero (or unevaluable) value decides nothing and the exact tiers run.
    early = _nonzero_at_random_points(diffs, points=1, seed=seed + 7919)
    if early is not None:
        return early
    # tier 1: exact (each entry tested once; cancel() is the expensive part).  A nonzero
    # canonical form of a rational function with rational coefficients refutes at once.
    canon = [_canonical(d) for d in diffs]
    remaining = [d for d, c in zip(diffs, canon) if c is None or c != 0]
    if not remaining:
        return "verified", "exact", "cancel(together(lhs − rhs)) == 0"
    for k, c in enumerate(canon):
        if _nonzero_rational_function(c):
            return ("refuted", "exact", f"entry {k}: cancel(together(lhs − rhs)) = {c} ≠ 0, a "
                    "nonzero rational function")
    # tier 2: equals — only on small expressions (SymPy's equals can run for minutes and
    # gigabytes on a large false identity with exponentials; the numeric tier decides those)
    answers: list[bool | None] = []
    for d in remaining:
        if sp.count_ops(d) > EQUALS_MAX_OPS:
            answers.append(None)
            continue
        try:
            answers.append(d.equals(0))
        except Exception:
            answers.append(None)
    if all(a is True for a in answers):
        return "verified", "equals", "Expr.equals(0) is True for every entry"
    if any(a is False for a in answers):
        k = answers.index(False)
        return "refuted", "equals", f"Expr.equals(0) is False for entry {k}: {remaining[k]}"
    # tier 3/4: numeric or arb
    undecided = [d for d, a in zip(remaining, answers) if a is None]
    free = set().union(*(d.free_symbols for d in undecided))
    if free:
        rnd = random.Random(seed)
        syms = sorted(free, key=lambda s: s.name)
        worst = sp.Float(0)
        evaluated = 0
        for _ in range(points):
            pt = _random_point(syms, rnd)
            for d in undecided:
                try:
                    val = sp.N(d.xreplace(pt), 50)
                    # the terms' scale at the same digits (SymPy floats: no overflow or underflow)
                    scale = max((sp.Abs(sp.N(a.xreplace(pt), 50)) for a in sp.Add.make_args(d)),
                                default=sp.Float(0))
                except Exception as exc:  # pragma: no cover
                    return "undecided", None, f"numeric evaluation failed: {exc}"
                if not val.is_number or val.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or not scale.is_finite:
                    continue
                evaluated += 1
                rel = sp.Abs(val) / scale if scale > 0 else sp.Abs(val)
                worst = max(worst, rel)
                if rel > NUMERIC_RTOL:
                    return "refuted", "numeric", (f"|lhs − rhs| = {sp.N(sp.Abs(val), 3)} ({sp.N(rel, 3)} of its "
                                                  f"terms' size) at {pt}")
        if evaluated < (points * len(undecided) + 1) // 2:
            return "undecided", None, (f"numeric: only {evaluated} of {points * len(undecided)} random points "
                                       "gave a finite value")
        return (
            "verified",
            "numeric",
            f"|lhs − rhs| ≤ {sp.N(worst, 2)} of its terms' size at {evaluated} random rational points "
            "(50 digits); verified with high probability, not proved",
        )
    return _arb_tier(undecided)


def _arb_tier(diffs: Any) -> tuple[str, str | None, str]:
    try:
        import flint
    except ImportError:  # pragma: no cover
        return "undecided", None, "python-flint not installed"
    from ..bounds import arb_eval

    old = flint.ctx.prec
    try:
        flint.ctx.prec = 256
        worst = None
        for d in diffs:
            ball = arb_eval(d)
            if not ball.contains(0):
                return "refuted", "arb", f"certified |lhs − rhs| ∈ {ball.str(10, radius=True)}"
            rad = float(ball.rad()) + abs(float(ball.mid()))
            worst = rad if worst is None else max(worst, rad)
        if worst is not None and worst < 1e-40:
            return "verified", "arb", f"certified |lhs − rhs| ≤ {worst:.1e} (arb, 256 bits)"
        return "undecided", "arb", f"arb ball around 0 too wide ({worst})"
    finally:
        flint.ctx.prec = old


def _verifier_code() -> tuple[Any, ...]:
    """The code of this module's functions: differs from the imported code while a test patches
    the verifier (then no stored verdict may stand in for it)."""
    return tuple((name, f.__code__) for name, f in sorted(globals().items())
                 if callable(f) and getattr(f, "__module__", None) == __name__ and hasattr(f, "__code__"))


def _verify_once(lhs: Any, rhs: Any, *, seed: int) -> tuple[str, str | None, str]:
    """:func:`verify_identity`, its answer kept per machine by the identity's exact spelling
    (``srepr`` of both sides and the seed): the same identity is proved once, also when a
    planted error re-derives a theory whose other steps it leaves unchanged."""
    import sympy as sp

    from . import _cache

    if _verifier_code() != _PRISTINE:
        return verify_identity(lhs, rhs, seed=seed)
    try:
        parts = (sp.srepr(lhs), sp.srepr(rhs), f"points=12 seed={seed}")
    except Exception:
        return verify_identity(lhs, rhs, seed=seed)
    return _cache.identity_verdict(parts, lambda: verify_identity(lhs, rhs, seed=seed))


@dataclass
class Derivation:
    """A recorded, verified chain of symbolic steps with named intermediates."""

    title: str
    terms: dict[str, Any] = field(default_factory=dict)
    term_notes: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    @classmethod
    def joined(cls, title: str, *parts: "Derivation") -> "Derivation":
        """One claim's view of a paper's derivation: the named sections' terms, text and
        (already verified) steps, in order, under one title."""
        d = cls(title)
        for part in parts:
            d.text.append(f"**{part.title}.**")
            d.text.extend(part.text)
            d.terms.update(part.terms)
            d.term_notes.update(part.term_notes)
            d.steps.extend(part.steps)
        return d

    def define(self, name: str, expr: Any, note: str = "") -> Any:
        """Record a named intermediate term (no verification: it is a definition)."""
        self.terms[name] = expr
        self.term_notes[name] = note
        return expr

    def say(self, paragraph: str) -> None:
        """Add a paragraph of explanation between steps."""
        self.text.append(paragraph)

    def step(self, name: str, lhs: Any, rhs: Any, why: str) -> Step:
        """Record the step ``lhs = rhs`` (with its justification) and verify it at once.

        The sides are kept as given and shown so in reports; to show what was substituted,
        differentiated or taken to a limit, pass unevaluated forms (``sp.Subs(e, b, a)``,
        ``sp.Derivative(f, t)``, ``sp.Limit(f, t, sp.oo)``, ``sp.UnevaluatedExpr(part)``):
        they are verified after ``doit()``, and both forms are recorded."""
        lv, rv = _evaluated(lhs), _evaluated(rhs)
        status, tier, detail = _verify_once(lhs if lv is None else lv, rhs if rv is None else rv,
                                            seed=len(self.steps))
        st = Step(name, lhs, rhs, why, status, tier, detail, lv, rv)
        self.steps.append(st)
        return st

    def fact(self, name: str, holds: bool, statement: str, why: str, tier: str = "exact") -> Step:
        """A verified non-identity fact (e.g. 'Hessian eigenvalue < 0'), decided by the caller."""
        st = Step(name, statement, bool(holds), why, "verified" if holds else "refuted", tier,
                  "decided by an exact computation" if tier == "exact" else "")
        self.steps.append(st)
        return st

    @property
    def ok(self) -> bool:
        """Whether every step is verified."""
        return all(s.status == "verified" for s in self.steps)

    def summary(self) -> dict[str, int]:
        """How many steps are verified, refuted and undecided."""
        out = {"verified": 0, "refuted": 0, "undecided": 0}
        for s in self.steps:
            out[s.status] += 1
        return out

    def as_dict(self) -> dict[str, Any]:
        """The derivation as data: title, terms, steps and the summary."""
        return {
            "title": self.title,
            "terms": {k: {"latex": _latex(v), "note": self.term_notes.get(k, "")}
                      for k, v in self.terms.items()},
            "steps": [s.as_dict() for s in self.steps],
            "text": self.text,
            "summary": self.summary(),
        }

    def _repr_html_(self) -> str:
        """Jupyter's view: :meth:`to_markdown` rendered with formulas as MathML."""
        from ..report._html import fragment

        return f'<div class="icltheory-derivation">\n{fragment(self.to_markdown())}</div>\n'

    def to_markdown(self, level: int = 2) -> str:
        """The derivation as Markdown with math: the named terms, then each step as derived
        (both sides as recorded), the verified identity where unevaluated forms were carried
        out, and the tier that decided it with its detail."""
        h = "#" * level
        out = [f"{h} Derivation: {self.title}", ""]
        for p in self.text:
            out += [p, ""]
        if self.terms:
            out += [f"{h}# Named terms", ""]
            for k, v in self.terms.items():
                note = self.term_notes.get(k, "")
                out += [f"- **{k}**" + (f" — {note}" if note else ""), "", "  ```math",
                        _indent(_latex(v), "  "), "  ```", ""]
        out += [f"{h}# Steps", "",
                "Each step is shown as derived (both sides as the claim recorded them) and was "
                "verified when it was recorded, by the first tier that decides it: "
                + "; ".join(f"**{k}** — {v}" for k, v in TIERS.items()) + ".", ""]
        for i, s in enumerate(self.steps, 1):
            out += _step_markdown(i, s)
        return "\n".join(out)


_MARK = {"verified": "✅", "refuted": "❌", "undecided": "❔"}


def _indent(text: str, pad: str) -> str:
    return "\n".join(pad + line for line in text.splitlines())


def _math(tex: str, pad: str = "   ") -> list[str]:
    return [pad + "```math", _indent(tex, pad), pad + "```", ""]


def _plain_text(text: str) -> str:
    """Text shown as it is written: Markdown's emphasis and code characters escaped (a step
    named ``ℓ'(m*) = 0`` must not open an emphasis)."""
    import re

    parts = re.split(r"(\$[^$]+\$)", str(text))  # inline math ($…$) is left as written
    for k in range(0, len(parts), 2):
        for ch in ("\\", "*", "_", "`"):
            parts[k] = parts[k].replace(ch, "\\" + ch)
    return "".join(parts)


def _step_markdown(i: int, s: Step) -> list[str]:
    """One step as a numbered list item (its math indented so it stays inside the item)."""
    out = [f"{i}. {_MARK[s.status]} **{_plain_text(s.name)}** — {_plain_text(s.why)}", ""]
    if s.is_fact:
        out += ["   " + s.lhs, ""]
    else:
        out += _math(f"{_latex(s.lhs)} = {_latex(s.rhs)}")
        if s.lhs_value is not None or s.rhs_value is not None:
            lv, rv = s.verified_sides
            out += ["   Carried out, the identity verified is", ""]
            out += _math(f"{_latex(lv)} = {_latex(rv)}")
        elif s.same_on_both_sides:
            out += ["   *Both sides were recorded already simplified to the same expression; "
                    "the justification says how each was obtained.*", ""]
    verdict = {"verified": "Verified", "refuted": "Refuted", "undecided": "Undecided"}[s.status]
    line = f"   {verdict}" + (f" by tier **{s.tier}**" if s.tier else "")
    out += [line + (f": {s.detail}" if s.detail else "") + ".", ""]
    return out


_PRISTINE = _verifier_code()
