"""Markdown reports (GitHub-renderable math), JSON sidecars, figures and the index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ..core import Verdict, all_claims
from ._atomic import atomic_write_bytes, atomic_write_text
from ._figures import render_png
from ._json import dumps, jsonable

__all__ = ["render_markdown", "write_reports", "write_index", "fmt"]

_BADGE = {"holds": "✅ holds", "fails": "❌ fails", "inconclusive": "❔ inconclusive"}


def fmt(v: Any, digits: int = 6) -> str:
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


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(verdict: Verdict, figure_names: list[str]) -> str:
    from types import SimpleNamespace

    claim = SimpleNamespace(**{"id": verdict.claim, "title": "", "source": "", "statement": "",
                               "provenance": "", **verdict.claim_info})
    out: list[str] = []
    out += [f"# `{claim.id}` — {claim.title}", ""]
    out += [f"**Verdict: {_BADGE[verdict.verdict]}**"
            + (f" — {'; '.join(verdict.reasons)}" if verdict.reasons else ""), ""]
    out += [f"- Source: {claim.source}", f"- Provenance of the statement: {claim.provenance}",
            f"- Seed {verdict.seed}, profile `{verdict.profile}`, runtime {verdict.runtime_s:.2f} s",
            ""]
    out += ["## Statement", "", "```math", claim.statement.strip(), "```", ""]
    out += ["## Setting", "", "| key | value |", "|---|---|"]
    for k, v in verdict.setting.items():
        out.append(f"| `{k}` | {_cell(fmt(v))} |")
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
    out = [f"**`{v.claim}`: {_BADGE[v.verdict]}**"
           + (f" — {'; '.join(v.reasons)}" if v.reasons else ""), "",
           "| check | predicted | measured | result |", "|---|---|---|---|"]
    for c in v.checks:
        res = {True: "✅", False: "❌", None: "❔"}[c.passed]
        out.append(f"| {_cell(c.name)} | {_cell(fmt(c.predicted))} | {_cell(fmt(c.measured))} | "
                   f"{res} {_cell(c.detail)} |")
    return "\n".join(out)


def _slug(claim_id: str) -> str:
    return claim_id


def write_reports(verdicts: Iterable[Verdict], out_dir: str | Path = "reports") -> list[Path]:
    """Write per-claim Markdown + JSON + figures, then refresh ``index.md``.

    Everything is rendered in memory first; each file is then written atomically.
    """
    out = Path(out_dir)
    pending: list[tuple[Path, bytes]] = []
    for v in verdicts:
        info = v.claim_info
        slug = _slug(v.claim)
        names = [f"{slug}-{k + 1}.png" for k in range(len(v.plots))]
        for name, plot in zip(names, v.plots):
            pending.append((out / "figures" / name, render_png(plot)))
        md = render_markdown(v, names)
        data = v.as_dict()
        for k in ("title", "source", "statement", "provenance"):
            data[k] = info.get(k, "")
        data["figures"] = [f"figures/{n}" for n in names]
        if v.derivation is not None:
            data["derivation"] = v.derivation.as_dict()
        pending.append((out / f"{slug}.md", md.encode("utf-8")))
        pending.append((out / f"{slug}.json", dumps(data).encode("utf-8")))
    written = []
    for path, blob in pending:
        atomic_write_bytes(path, blob)
        written.append(path)
    written.append(write_index(out))
    return written


def write_index(out_dir: str | Path) -> Path:
    out = Path(out_dir)
    lines = ["# icltheory reports", "",
             "Every registered claim with its latest verdict (default setting unless stated).", "",
             "| claim | title | verdict | runtime (s) |", "|---|---|---|---|"]
    for claim in all_claims():
        side = out / f"{_slug(claim.id)}.json"
        if side.exists():
            try:
                data = json.loads(side.read_text(encoding="utf-8"))
                verdict = _BADGE.get(data.get("verdict"), data.get("verdict"))
                rt = f"{data.get('runtime_s', 0):.2f}"
                link = f"[`{claim.id}`]({_slug(claim.id)}.md)"
            except (OSError, ValueError):
                verdict, rt, link = "unreadable report", "", f"`{claim.id}`"
        else:
            verdict, rt, link = "not run", "", f"`{claim.id}`"
        lines.append(f"| {link} | {_cell(claim.title)} | {verdict} | {rt} |")
    lines.append("")
    path = out / "index.md"
    atomic_write_text(path, "\n".join(lines))
    return path
