"""Markdown reports (GitHub-renderable math), JSON sidecars, figures and the index."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import Check, Verdict
from ._json import jsonable

__all__ = ["render_markdown", "verdict_markdown", "one_sentence", "fmt", "summarize", "check_cells",
           "BADGE"]

#: a list with more entries than this is summarised in reports (all values stay in the JSON)
SHORT = 8

#: the verdict as shown in reports
BADGE = {"holds": "✅ holds", "fails": "❌ fails", "inconclusive": "❔ inconclusive"}


def fmt(v: Any, digits: int = 6) -> str:
    """A value as short text: floats to ``digits`` significant digits, long lists cut to 12
    entries (with the count), dicts as ``key=value`` pairs."""
    v = jsonable(v)
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    if isinstance(v, list):
        if len(v) > 12:
            return "[" + ", ".join(fmt(x, digits) for x in v[:12]) + f", … ({len(v)} values)]"
        return "[" + ", ".join(fmt(x, digits) for x in v) + "]"
    if isinstance(v, dict):
        return ", ".join(f"{k}={fmt(x, digits)}" for k, x in v.items())
    return str(v)


def _numbers(v: Any) -> np.ndarray | None:
    """``v`` as a float array when it is a (nested) list of numbers, else ``None``."""
    v = jsonable(v)
    if not isinstance(v, list):
        return None
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if a.dtype == float and a.ndim >= 1 else None


def _where(a: np.ndarray, k: int) -> str:
    if a.ndim == 1:
        return f"index {k}"
    return "entry (" + ", ".join(str(int(i)) for i in np.unravel_index(k, a.shape)) + ")"


def _shape(a: np.ndarray) -> str:
    return f"{a.size} values" if a.ndim == 1 else "×".join(map(str, a.shape)) + " array"


def _range(a: np.ndarray, digits: int) -> str:
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return "no finite value"
    text = f"in [{fmt(float(finite.min()), digits)}, {fmt(float(finite.max()), digits)}]"
    if finite.size < a.size:
        text += f", {a.size - finite.size} not finite"
    return text


def summarize(v: Any, digits: int = 6) -> str:
    """A value as short text for a report: like :func:`fmt`, but a list of more than
    ``SHORT`` numbers becomes its size, range, first and last values (the JSON sidecar keeps
    every value)."""
    a = _numbers(v)
    if a is None or a.size <= SHORT:
        return fmt(v, digits)
    flat = a.ravel()
    ends = f"first {fmt(float(flat[0]), digits)}, last {fmt(float(flat[-1]), digits)}"
    return f"{_shape(a)} {_range(a, digits)}; {ends}"


def _worst(c: Check, p: np.ndarray, m: np.ndarray) -> int | None:
    """The flat index where ``m`` is farthest from ``p`` relative to a ``close`` tolerance."""
    tol = c.tolerance
    if not (isinstance(tol, dict) and {"rtol", "atol"} <= set(tol)) or p.shape != m.shape:
        return None
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        err = np.abs(m - p)
        bound = float(tol["atol"]) + float(tol["rtol"]) * np.abs(p)
        ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1.0),
                         np.where(err > 0, np.inf, 0.0))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)  # a non-finite value is the worst point
    return int(np.argmax(ratio)) if ratio.size else None


def check_cells(c: Check, digits: int = 6) -> tuple[str, str]:
    """The predicted and measured cells of a check's row.  A vector check shows its size and
    range and the values at the point of largest error relative to the tolerance (the check's
    detail says how many values are within tolerance); the JSON sidecar keeps every value."""
    p, m = _numbers(c.predicted), _numbers(c.measured)
    if p is None or m is None or max(p.size, m.size) <= SHORT:
        return summarize(c.predicted, digits), summarize(c.measured, digits)
    k = _worst(c, p, m)
    if k is None:
        return summarize(c.predicted, digits), summarize(c.measured, digits)
    where = _where(p, k)
    fine = max(digits, 10)  # enough digits to show the difference at that point
    return (f"{_shape(p)} {_range(p, digits)}; at {where}: {fmt(float(p.ravel()[k]), fine)}",
            f"{_shape(m)} {_range(m, digits)}; at {where}: {fmt(float(m.ravel()[k]), fine)}")


def _is_vector(c: Check) -> bool:
    return any(a is not None and a.size > SHORT for a in (_numbers(c.predicted),
                                                          _numbers(c.measured)))


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def one_sentence(verdict: Verdict) -> str:
    """Why the verdict is what it is, in one sentence: the failed checks, the reason it is
    undecided, or how many checks passed and by what margin."""
    judged = [c for c in verdict.checks if c.passed is not None]
    failed = [c.name for c in verdict.checks if c.passed is False]
    if verdict.verdict == "fails":
        return ("Fails: " + "; ".join(failed[:3]) + (f" (and {len(failed) - 3} more)"
                                                       if len(failed) > 3 else "") + ".")
    if verdict.verdict == "inconclusive":
        return "Undecided: " + ("; ".join(verdict.reasons) or "no check could decide") + "."
    return (f"All {len(judged)} judged checks pass; the closest to failing is "
            f"{margin_cell(verdict.margin)} of its tolerance away from it.")


def _doc_of(claim_info: dict, kind: str, key: str) -> str:
    if kind == "settings":
        for row in claim_info.get("settings", []) or []:
            if isinstance(row, dict) and row.get("key") == key:
                return str(row.get("doc", ""))
        return ""
    return str((claim_info.get("predictions", {}) or {}).get(key, {}).get("meaning", ""))


def _evidence_lines(evidence: dict) -> list[str]:
    """The evidence as a list: text as text, numbers and lists summarised (every value is in
    the JSON sidecar)."""
    out = []
    for k, v in evidence.items():
        if isinstance(v, str):
            out.append(f"- **{_cell(k)}**: {_cell(v)}")
        elif isinstance(v, dict) and v and all(isinstance(x, (str, int, float)) or x is None
                                               for x in v.values()):
            out.append(f"- **{_cell(k)}**: " + "; ".join(f"{_cell(a)} = {_cell(summarize(b))}"
                                                         for a, b in v.items()))
        else:
            text = summarize(v)
            out.append(f"- **{_cell(k)}**: {_cell(text if len(text) <= 600 else text[:597] + '…')}")
    return out


def render_markdown(verdict: Verdict, figure_names: list[str]) -> str:
    """The Markdown report of one verdict (``figure_names``: its figures under ``figures/``),
    in the order a derivation is read: the verdict and why, the statement and its source, what
    was run (setting, model), the derivation, the evidence (figures, predicted and measured
    numbers), and the checks last.

    Everything shown comes from the verdict (``claim_info`` carries title, source, statement,
    provenance and the meanings of keys and constants); nothing depends on the run time, so a
    rerun gives the same bytes."""
    from types import SimpleNamespace

    info = dict(verdict.claim_info)
    claim = SimpleNamespace(**{"id": verdict.claim, "title": "", "source": "", "statement": "",
                               "provenance": "", **info})
    out: list[str] = []
    out += [f"# `{claim.id}` — {claim.title}", ""]
    out += [f"**Verdict: {BADGE[verdict.verdict]}.** {one_sentence(verdict)}", ""]
    out += [f"- Source: {claim.source}", f"- Provenance of the statement: {claim.provenance}",
            f"- Seed {verdict.seed}, profile `{verdict.profile}`; "
            + (f"non-default setting: {_cell(fmt(verdict.non_default))}" if verdict.non_default
               else "default setting"),
            ""]
    out += ["## Statement", "", "```math", claim.statement.strip(), "```", ""]
    if verdict.notes:
        out += ["## What was run", ""] + [f"- {n}" for n in verdict.notes] + [""]
    out += ["## Setting", "", "| key | value | meaning |", "|---|---|---|"]
    for k, v in verdict.setting.items():
        mark = " (non-default)" if k in verdict.non_default else ""
        out.append(f"| `{k}` | {_cell(fmt(v))}{mark} | {_cell(_doc_of(info, 'settings', k))} |")
    if verdict.derivation is not None:
        out += ["", verdict.derivation.to_markdown(level=2)]
    out += ["", "## Predicted constants", "", "| key | value | meaning |", "|---|---|---|"]
    for k, v in verdict.predicted.items():
        out.append(f"| `{k}` | {_cell(summarize(v, 8))} | "
                   f"{_cell(_doc_of(info, 'predictions', k))} |")
    if figure_names:
        out += ["", "## Figures", ""]
        for name, plot in zip(figure_names, verdict.plots):
            out += [f"![{plot.title}](figures/{name})", ""]
            if plot.caption:
                out += [f"*{plot.caption}*", ""]
    if verdict.measured:
        out += ["", "## Measured", "", "| key | value |", "|---|---|"]
        for k, v in verdict.measured.items():
            out.append(f"| `{k}` | {_cell(summarize(v))} |")
    if verdict.evidence:
        out += ["", "## Evidence", "", *_evidence_lines(verdict.evidence),
                "", f"(Every value in full: the JSON sidecar `{verdict.claim}.json`, "
                    "`evidence`.)"]
    out += ["", "## Checks", "",
            "| check | predicted | measured | tolerance | why this tolerance | result | margin |",
            "|---|---|---|---|---|---|---|"]
    for c in verdict.checks:
        res = {True: "✅ pass", False: "❌ FAIL", None: "❔ undecided"}[c.passed]
        if c.detail:
            res += f" ({c.detail})"
        pred, meas = check_cells(c)
        out.append(
            f"| {_cell(c.name)} | {_cell(pred)} | {_cell(meas)} | "
            f"{_cell(fmt(c.tolerance, 3))} | {_cell(c.why)} | {_cell(res)} | {margin_cell(c.margin)} |"
        )
    out += ["", f"Margin: how far each check is from failing, in units of its own tolerance (1 − "
            "error/tolerance; a test's distance to its critical value over the acceptance "
            "half-width; a bound's K/witness − 1); — where none exists (undecided, exact "
            f"booleans). The verdict's margin is the smallest: {margin_cell(verdict.margin)}."]
    if any(_is_vector(c) for c in verdict.checks):
        out += ["", f"A check of more than {SHORT} values shows their range and the values at the "
                "point farthest from the prediction relative to the tolerance; every value is "
                f"in the JSON sidecar `{verdict.claim}.json` (`checks`)."]
    out += ["", "## Versions", "", ", ".join(f"{k} {v}" for k, v in verdict.versions.items()), ""]
    return "\n".join(out)


def verdict_markdown(v: Verdict) -> str:
    """A short Markdown view of a verdict (notebooks): badge, reasons, the checks table."""
    out = [f"**`{v.claim}`: {BADGE[v.verdict]}**"
           + (f" — {'; '.join(v.reasons)}" if v.reasons else ""), "",
           "| check | predicted | measured | result | margin |", "|---|---|---|---|---|"]
    for c in v.checks:
        res = {True: "✅", False: "❌", None: "❔"}[c.passed]
        pred, meas = check_cells(c)
        out.append(f"| {_cell(c.name)} | {_cell(pred)} | {_cell(meas)} | "
                   f"{res} {_cell(c.detail)} | {margin_cell(c.margin)} |")
    out += ["", f"Margin (smallest over the checks): {margin_cell(v.margin)}"]
    return "\n".join(out)


def margin_cell(m: float | None) -> str:
    """A margin for a table: three significant digits, — when there is none."""
    if m is None:
        return "—"
    return f"{m:.3g}" if math.isfinite(m) else ("−∞" if m < 0 else "∞")
