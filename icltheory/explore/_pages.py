"""A refutation's page: the statement, the counterexample, its evidence, the margins of every
draw, and the command that reproduces it (Markdown + JSON + PNG under the report folder)."""

from __future__ import annotations

from pathlib import Path

from ..core import Plot, Series, get_claim
from ._refute import Refutation

__all__ = ["write_refutation", "refutation_markdown"]


def _landscape(r: Refutation) -> Plot:
    colour = {"holds": "#0072B2", "fails": "#D55E00", "inconclusive": "#999999"}
    series = []
    for verdict in ("holds", "fails", "inconclusive"):
        pts = [(i + 1, m) for i, (_, m, v) in enumerate(r.landscape)
               if v == verdict and m is not None]
        if pts:
            series.append(Series([p[0] for p in pts], [max(min(p[1], 1.0), -1.0) for p in pts],
                                 f"{verdict} ({len(pts)})", "points", colour[verdict]))
    return Plot(title=f"refute {r.claim}: margin of each draw", xlabel="draw",
                ylabel="margin (1 − error/tolerance; < 0 fails; clipped to [−1, 1])",
                series=series, hlines=[(0.0, "at the tolerance")],
                caption=f"{r.draws} draws at the {r.profile} profile ({r.undecided} undecided, "
                        "drawn without a margin are not shown)")


def refutation_markdown(r: Refutation, figure: str) -> str:
    """The page's Markdown (``figure``: the PNG's file name)."""
    from ..report import fmt

    info = get_claim(r.claim).describe()
    cx = r.counterexample or {}
    lines = [f"# Counterexample: {r.claim}", "", f"**{info.get('title', '')}**", "",
             f"Source: {info.get('source', '')}", "", "## Statement", "", "$$",
             str(info.get("statement", "")), "$$", "", "## The counterexample", "",
             f"`icltheory refute` found it after {r.draws} draws ({r.undecided} undecided) at "
             f"the {r.profile} profile and shrank it in {r.shrink_steps} step(s) toward the "
             "claim's defaults. Keys that differ from the defaults:", "",
             "| key | value |", "|---|---|"]
    lines += [f"| `{k}` | {fmt(v)} |" for k, v in cx.items()] or ["| (none) | |"]
    lines += ["", "Reproduce it:", "", "```bash", str(r.command), "```", "", "## Evidence", "",
              "| check | predicted | measured | detail |", "|---|---|---|---|"]
    for c in r.evidence:
        lines.append(f"| {c.get('name')} | {fmt(c.get('predicted'))} | {fmt(c.get('measured'))} "
                     f"| {c.get('detail', '')} |")
    lines += ["", "## The search", "", f"![margin of each draw]({figure})", "",
              "Each draw's margin is its closest check's distance from failing, in units of "
              "that check's tolerance (negative: failed)."]
    return "\n".join(lines) + "\n"


def write_refutation(r: Refutation, out_dir: str | Path) -> Path:
    """Write ``refute-<claim>.md``, ``.json`` and ``.png`` into ``out_dir``; refresh the
    index (which links the page).  Returns the Markdown page's path."""
    from ..core import all_claims
    from ..report import atomic_write_bytes, atomic_write_text, dumps, render_png, write_index

    out = Path(out_dir)
    stem = f"refute-{r.claim}"
    atomic_write_bytes(out / f"{stem}.png", render_png(_landscape(r)))
    atomic_write_text(out / f"{stem}.json", dumps(r.as_dict()) + "\n")
    atomic_write_text(out / f"{stem}.md", refutation_markdown(r, f"{stem}.png"))
    write_index(out, known=[(c.id, c.title) for c in all_claims()])
    return out / f"{stem}.md"
