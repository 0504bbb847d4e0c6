"""The terminal's plain text of a verdict's Markdown notes (icltheory.report._plain)."""

from __future__ import annotations

import pytest

from icltheory.report._plain import plain


@pytest.mark.parametrize("markdown, text", [
    (r"context $(x_i,w_{e,y_i},\bar w_e,0)$, query $(x_{N+1},0,\bar w_e,0)$",
     "context (x_i,w_(e,y_i),w̄_e,0), query (x_(N+1),0,w̄_e,0)"),
    (r"($Q=K=\sqrt s\,S_x$, value $\Gamma_k(u-v)$)", "(Q=K=√s S_x, value Γ_k(u-v))"),
    (r"$Q_k,K_k\in\mathbb R^{d\times D}$", "Q_k,K_k∈R^(d×D)"),
    (r"$\lambda_{\rm data}$ = `amplitude`, $x\sim U[-1,1]^d$", "λ_data = amplitude, x~U[-1,1]^d"),
    (r"**from scratch** and $s\,x_j^\top B x_i$, $\lVert x\rVert_2\le 1$",
     "from scratch and s x_jᵀ B x_i, ‖x‖_2≤1"),
    (r"$\frac{a}{b}$, $\operatorname{tr}\Lambda$, $\{a\}$, $\unknown x$", "(a)/(b), trΛ, {a}, \\unknown x"),
    ("no formula: a $ sign alone, 3 < 4", "no formula: a $ sign alone, 3 < 4"),
    (r"$\Gamma\bar w_e$ and $\tilde\kappa(x_j,x_i)$", "Γw̄_e and κ̃(x_j,x_i)"),
    ("costs $5 and $10, x**2 and **b**", "costs $5 and $10, x**2 and b"),
    (r"$1/\binom{2\,\mathrm{runs}}{\mathrm{runs}}$, $\tfrac12$, $\frac{a^{2}}{b}$",
     "1/C(2 runs, runs), 1/2, (a^2)/(b)"),
])
def test_markdown_notes_read_as_plain_text(markdown, text):
    assert plain(markdown) == text


def test_anything_printed_is_text():
    """A claim may note or give as a reason something that is not a string: it is printed as
    its text, never an exception."""
    assert plain(ValueError("x $a$")) == "x a"
