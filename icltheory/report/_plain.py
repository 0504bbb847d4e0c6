"""Markdown with inline TeX, as plain terminal text: what ``check`` prints of a verdict's notes.

The reports render notes as Markdown with ``$…$`` formulas; a terminal shows them raw.
:func:`plain` drops the emphasis and the formula delimiters and writes the common TeX commands
as the Unicode characters they stand for (``\\lVert x\\rVert`` → ``‖x‖``, ``Q^\\top`` →
``Qᵀ``, ``\\alpha`` → ``α``); anything it does not know is left as it is.
"""

from __future__ import annotations

import re

__all__ = ["plain"]

_SYMBOLS = {
    "top": "ᵀ", "to": "→", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠",
    "sim": "~", "in": "∈", "approx": "≈", "propto": "∝", "times": "×", "cdot": "·", "star": "*",
    "lVert": "‖", "rVert": "‖", "Vert": "‖", "lvert": "|", "rvert": "|", "partial": "∂",
    "infty": "∞", "sum": "Σ", "prod": "∏", "pm": "±", "ldots": "…", "dots": "…",
    "cdots": "⋯", "nabla": "∇", "langle": "⟨", "rangle": "⟩", "otimes": "⊗", "oplus": "⊕",
    "perp": "⊥", "Rightarrow": "⇒", "quad": " ", "qquad": "  ", ",": " ", ";": " ", "!": "",
    "int": "∫", "%": "%", "mid": "|", "setminus": "∖", "cap": "∩", "cup": "∪", "forall": "∀",
    "min": "min", "max": "max", "ln": "ln", "log": "log", "exp": "exp", "cos": "cos",
    "sin": "sin", "arg": "arg", "det": "det", "tr": "tr",
}
_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ",
    "Lambda": "Λ", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}
_FONTS = ("mathrm", "text", "textbf", "textit", "operatorname", "mathbf", "mathcal", "mathbb", "rm",
          "boldsymbol", "mathit")
_ACCENTS = {"bar": "\u0304", "hat": "\u0302", "tilde": "\u0303", "dot": "\u0307"}
# inline math as Markdown reads it: $…$ with no space just inside either dollar and no digit
# just after the closing one (so "costs $5 and $10" is text); a display $$…$$ likewise
_MATH = re.compile(r"(?<![\\$])(\$\$?)(?=\S)([^$]*?\S)\1(?![\d$])")


def _formula(tex: str) -> str:
    out = re.sub(r"\^\{?\\top\}?", "ᵀ", tex)
    out = re.sub(r"([_^])\{(\w+)\}", r"\1\2", out)  # x^{2} → x^2 (before the fractions read braces)
    out = re.sub(r"\\[td]?frac\s*(\d)(\d)", r"\1/\2", out)  # \tfrac12 → 1/2
    out = re.sub(r"\\sqrt\s*\{([^{}]*)\}", r"√(\1)", out)
    out = re.sub(r"\\sqrt\s*", "√", out)

    def command(m: re.Match) -> str:
        name = m.group(1)
        return _GREEK.get(name, _SYMBOLS.get(name, "\\" + name + " " * (m.group(0) != "\\" + name)))

    out = re.sub(r"\\([A-Za-z]+)\s*|\\([,;!%])", lambda m: command(m) if m.group(1) else
                 _SYMBOLS[m.group(2)], out)  # (TeX ignores the spaces after a command's name)
    for name, mark in _ACCENTS.items():  # \bar{x}, \bar x, \tilde\kappa → x̄, κ̃ (one character)
        out = re.sub(r"\\" + name + r"(?![A-Za-z])\s*\{([^{}]+)\}|\\" + name + r"(?![A-Za-z])\s*(\w)",
                     r"\1\2" + mark, out)
    fonts = "|".join(_FONTS)
    for _ in range(3):  # \mathrm{x} → x (nested at most a few deep)
        out = re.sub(r"\\(?:" + fonts + r")\s*\{([^{}]*)\}", r"\1", out)
    out = re.sub(r"\\(?:" + fonts + r")\b\s*", "", out)  # {\rm x}, \mathbb R
    out = re.sub(r"\\[td]?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", out)
    out = re.sub(r"\\binom\{([^{}]*)\}\{([^{}]*)\}", r"C(\1, \2)", out)
    # a sub- or superscript that is not one word keeps its grouping: x_{N+1} → x_(N+1)
    out = re.sub(r"([_^])\{(\w*[^\w{}][^{}]*)\}", r"\1(\2)", out)
    out = out.replace("\\{", "\x00").replace("\\}", "\x01")
    out = re.sub(r"[{}]", "", out).replace("\x00", "{").replace("\x01", "}")
    return out


def plain(text: str) -> str:
    """``text`` (Markdown, inline ``$…$`` TeX) as plain text for a terminal."""
    out = _MATH.sub(lambda m: _formula(m.group(2)), str(text))
    out = re.sub(r"(?<!\w)\*\*(?=\S)(.+?)(?<=\S)\*\*(?!\w)", r"\1", out)  # **bold** (not x**2)
    return out.replace("`", "").replace("\\$", "$")
