"""Markdown reports (GitHub-renderable math), JSON sidecars, figures and the index."""

from __future__ import annotations

from typing import Any

from ..core import Verdict
from ._json import dumps, jsonable

__all__ = ["render_markdown", "verdict_markdown", "fmt", "BADGE"]

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


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(verdict: Verdict, figure_names: list[str]) -> str:
    """The Markdown report of one verdict (``figure_names``: its figures under ``figures/``).

    Everything shown comes from the verdict (``claim_info`` carries title, source, statement
    and provenance); nothing depends on the run time, so a rerun gives the same bytes."""
    from types import SimpleNamespace

    claim = SimpleNamespace(**{"id": verdict.claim, "title": "", "source": "", "statement": "",
                               "provenance": "", **verdict.claim_info})
    out: list[str] = []
    out += [f"# `{claim.id}` — {claim.title}", ""]
    out += [f"**Verdict: {BADGE[verdict.verdict]}**"
            + (f" — {'; '.join(verdict.reasons)}" if verdict.reasons else ""), ""]
    out += [f"- Source: {claim.source}", f"- Provenance of the statement: {claim.provenance}",
            f"- Seed {verdict.seed}, profile `{verdict.profile}`; "
            + (f"non-default setting: {_cell(fmt(verdict.non_default))}" if verdict.non_default
               else "default setting"),
            ""]
    out += ["## Statement", "", "```math", claim.statement.strip(), "```", ""]
    out += ["## Setting", "", "| key | value |", "|---|---|"]
    for k, v in verdict.setting.items():
        mark = " (non-default)" if k in verdict.non_default else ""
        out.append(f"| `{k}` | {_cell(fmt(v))}{mark} |")
    out += ["", "## Predicted constants", "", "| key | value |", "|---|---|"]
    for k, v in verdict.predicted.items():
        out.append(f"| `{k}` | {_cell(fmt(v, 8))} |")
    out += ["", "## Checks", "",
            "| check | predicted | measured | tolerance | why this tolerance | result |",
            "|---|---|---|---|---|---|"]
    for c in verdict.checks:
        res = {True: "✅ pass", False: "❌ FAIL", None: "❔ undecided"}[c.passed]
        if c.detail:
            res += f" ({c.detail})"
        out.append(
            f"| {_cell(c.name)} | {_cell(fmt(c.predicted))} | {_cell(fmt(c.measured))} | "
            f"{_cell(fmt(c.tolerance, 3))} | {_cell(c.why)} | {_cell(res)} |"
        )
    if verdict.measured:
        out += ["", "## Measured", "", "| key | value |", "|---|---|"]
        for k, v in verdict.measured.items():
            out.append(f"| `{k}` | {_cell(fmt(v))} |")
    if verdict.evidence:
        out += ["", "## Evidence", "", "```json", dumps(verdict.evidence)[:6000], "```"]
    if figure_names:
        out += ["", "## Figures", ""]
        for name, plot in zip(figure_names, verdict.plots):
            out += [f"![{plot.title}](figures/{name})", ""]
            if plot.caption:
                out += [f"*{plot.caption}*", ""]
    if verdict.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in verdict.notes]
    if verdict.derivation is not None:
        out += ["", verdict.derivation.to_markdown(level=2)]
    out += ["", "## Versions", "", ", ".join(f"{k} {v}" for k, v in verdict.versions.items()), ""]
    return "\n".join(out)


def verdict_markdown(v: Verdict) -> str:
    """A short Markdown view of a verdict (notebooks): badge, reasons, the checks table."""
    out = [f"**`{v.claim}`: {BADGE[v.verdict]}**"
           + (f" — {'; '.join(v.reasons)}" if v.reasons else ""), "",
           "| check | predicted | measured | result |", "|---|---|---|---|"]
    for c in v.checks:
        res = {True: "✅", False: "❌", None: "❔"}[c.passed]
        out.append(f"| {_cell(c.name)} | {_cell(fmt(c.predicted))} | {_cell(fmt(c.measured))} | "
                   f"{res} {_cell(c.detail)} |")
    return "\n".join(out)
