"""The index of a report folder (``index.md``) and its timing file (``timing.md``).

The index is rendered from the JSON sidecars in the folder, so it merges this run's results
with earlier ones: a claim that was not in this invocation keeps its last verdict.  Each row
states the non-default setting keys of its run and its profile.  Runtimes vary from run to
run, so they are kept out of the index (which a rerun reproduces byte for byte) and shown in
``timing.md`` (from ``timing.json``).  The folder's sweeps (``icltheory sweep --out``) are
listed in a "Sweeps" section after the claims."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from ._markdown import BADGE, _cell, fmt
from ._render import html_name, markdown_name

__all__ = ["render_index", "render_index_html", "render_timing", "sweeps_section",
           "explorations_section", "SWEEPS_HEADING"]

SWEEPS_HEADING = "## Sweeps"


def _setting_text(record: Mapping[str, Any]) -> str:
    nd = record.get("non_default")
    if nd is None:
        return "(not recorded)"
    if not nd:
        return "default"
    text = ", ".join(f"{k}={fmt(v)}" for k, v in nd.items())
    return text if len(text) <= 160 else text[:157] + "…"


def render_index(records: Mapping[str, Mapping[str, Any]],
                 known: Iterable[tuple[str, str]] | None = None,
                 out_dir: str | Path | None = None) -> str:
    """The index: one row per claim with a report in the folder (``records``: claim id →
    sidecar), then one line naming the ``known`` claims (id, title) that have none ("not run");
    then the folder's sweeps (``out_dir``), if any."""
    titles = dict(known) if known is not None else None
    ids = set(records) | set(titles or ())
    lines = ["# icltheory reports", "",
             "Every claim with its latest verdict in this folder; *setting* names the keys that "
             "differ from the claim's defaults at the run's profile. Runtimes: "
             "[timing.md](timing.md).", "",
             "*Provenance* says where the statement comes from (the paper's text, a "
             "reconstruction, derived here, or a summary's claim — a summary's claim that fails "
             "says the summary is wrong, not the paper).", "",
             "| claim | title | provenance | verdict | setting | profile |",
             "|---|---|---|---|---|---|"]
    unrun = sorted(cid for cid in ids if records.get(cid) is None)
    for cid in sorted(ids):
        rec = records.get(cid)
        title = (titles or {}).get(cid) or (rec or {}).get("title", "")
        if rec is None:  # listed once, after the table
            continue
        if not rec.get("verdict"):
            lines.append(f"| `{_cell(cid)}` | {_cell(title)} | | unreadable report | | |")
            continue
        verdict = BADGE.get(rec["verdict"], _cell(rec["verdict"]))
        if titles is not None and cid not in titles:
            verdict += " (claim no longer registered)"
        prov = str(rec.get("provenance", "") or "")
        if "summary's claim" in prov:
            prov = f"**{prov}**"
        lines.append(f"| [`{_cell(cid)}`]({markdown_name(cid)}) | {_cell(title)} | {_cell(prov)} | {verdict} | "
                     f"{_cell(_setting_text(rec))} | {_cell(rec.get('profile', ''))} |")
    if unrun:
        lines += ["", f"Claims not run in this folder ({len(unrun)}; `icltheory describe CLAIM` says what "
                  "each checks): " + ", ".join(f"`{_cell(cid)}`" for cid in unrun) + "."]
    extra = [sec for sec in (sweeps_section(out_dir), explorations_section(out_dir))
             if sec] if out_dir is not None else []
    return "\n".join(lines) + "\n" + "".join("\n" + sec for sec in extra)


def sweeps_section(out_dir: str | Path) -> str:
    """The Markdown section listing every sweep under ``out_dir`` (each ``sweep-*/sweep.json``
    written by ``icltheory sweep``; "" when there is none)."""
    out = Path(out_dir)
    rows = []
    for manifest in sorted(out.glob("sweep-*/sweep.json")):
        try:
            m = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(m, dict) or "spec" not in m:
            continue
        spec = m["spec"]
        grid = " × ".join(f"{k} ({len(v)})" for k, v in spec.get("grid", {}).items())
        page = f"{manifest.parent.name}/report.md"
        if m.get("complete"):
            counts = m.get("counts", {})
            state = ", ".join(f"{counts.get(k, 0)} {k}" for k in
                              ("holds", "fails", "inconclusive"))
        else:
            state = "not finished (rerun the command to complete it)"
        rows.append(f"| [`{m.get('claim', '?')}`]({page}) | {grid} | {m.get('runs', '?')} | "
                    f"`{spec.get('profile', '?')}` | {state} |")
    if not rows:
        return ""
    return "\n".join([SWEEPS_HEADING, "", "Grids of settings run by `icltheory sweep` (each page has "
                      "the phase diagram, the table and the data).", "",
                      "| sweep | grid | runs | profile | verdicts |", "|---|---|---|---|---|",
                      *rows, ""])


def explorations_section(out_dir: str | Path) -> str:
    """The Markdown section listing the counterexamples (``refute-*.json``) and boundaries
    (``boundary-*.json``) found under ``out_dir`` by ``icltheory refute`` / ``boundary``
    ("" when there is none)."""
    out = Path(out_dir)
    rows = []
    for path in sorted(out.glob("refute-*.json")):
        try:
            r = json.loads(path.read_text(encoding="utf-8"))
            cx = ", ".join(f"{k}={fmt(v)}" for k, v in (r.get("counterexample") or {}).items())
        except (OSError, ValueError, AttributeError):
            continue
        rows.append(f"| [`{_cell(str(r.get('claim')))}`]({path.stem}.md) | counterexample | "
                    f"{_cell(cx or 'the defaults')} |")
    for path in sorted(out.glob("boundary-*.json")):
        try:
            b = json.loads(path.read_text(encoding="utf-8"))
            ch = "; ".join(f"{c['from_verdict']} → {c['to_verdict']} between {fmt(c['from'])} "
                           f"and {fmt(c['to'])}" for c in b.get("changes", []))
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            continue
        rows.append(f"| [`{_cell(str(b.get('claim')))}`]({path.stem}.png) | boundary along "
                    f"`{_cell(str(b.get('key')))}` | {_cell(ch or 'no change found')} |")
    if not rows:
        return ""
    return "\n".join(["## Explorations", "", "Counterexamples found by `icltheory refute` and "
                      "boundaries found by `icltheory boundary` in this folder.", "",
                      "| claim | what | result |", "|---|---|---|", *rows, ""])


def render_index_html(records: Mapping[str, Mapping[str, Any]],
                      known: Iterable[tuple[str, str]] | None = None,
                      out_dir: str | Path | None = None) -> str:
    """``index.html``: the index as a page, each claim linked to its HTML page where its
    report set has one (else to its Markdown)."""
    from ._html import page

    links = {markdown_name(cid): html_name(cid) for cid, rec in records.items()
             if html_name(cid) in ((rec.get("report") or {}).get("files") or {})}
    return page(render_index(records, known, out_dir), title="icltheory reports", links=links,
                home=None)


def render_timing(timing: Mapping[str, Mapping[str, Any]],
                  records: Mapping[str, Mapping[str, Any]]) -> str:
    """``timing.md``: the runtime of each claim's latest run (from ``timing.json``)."""
    lines = ["# Runtimes of the latest runs", "",
             "Wall-clock seconds of each claim's latest check (measure, judge and the "
             "derivation); they vary from run to run, so they live here and in "
             "`timing.json`, not in the reports.", "",
             "| claim | runtime (s) | profile | verdict |", "|---|---|---|---|"]
    total = 0.0
    for cid in sorted(timing):
        t = timing[cid]
        rt = float(t.get("runtime_s", 0.0))
        total += rt
        verdict = (records.get(cid) or {}).get("verdict", "")
        lines.append(f"| `{_cell(cid)}` | {rt:.2f} | {_cell(t.get('profile', ''))} | "
                     f"{_cell(verdict)} |")
    lines += ["", f"Sum over the claims: {total:.1f} s (claims run in parallel overlap).", ""]
    return "\n".join(lines)
