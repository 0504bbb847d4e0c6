"""A sweep's files under ``<out>/<name>/``: the manifest and report page.

* ``sweep.json``   — the sweep's definition (claim, grid, seeds, fixed keys, profile), then,
  once it has run, the summary per grid cell (the page's JSON);
* ``results.jsonl`` — the store (:mod:`._store`);
* ``results.csv``  — one row per run (:func:`icltheory.sweep.load` gives the same as a
  DataFrame);
* ``phase.png``    — the phase diagram (:mod:`._figure`);
* ``report.md``    — the page: definition, the command that reproduces it, the figure, the
  table, the failed runs with their evidence.

The page, the figure and ``sweep.json`` hold no timings, so the same store gives the same
bytes (the runtimes are in the store and the CSV).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core import BadInput
from ..report import atomic_write_bytes, atomic_write_text, dumps
from ._figure import line_check, phase_png
from ._index import INDEX_NAME, update_index
from ._plan import Plan
from ._rows import aggregate, to_csv, verdict_of

__all__ = ["check_manifest", "write_manifest", "write_outputs", "MANIFEST"]

MANIFEST = "sweep.json"
_BADGE = {"holds": "✅ holds", "fails": "❌ fails", "inconclusive": "❔ inconclusive"}


def check_manifest(directory: Path, plan: Plan) -> None:
    """Refuse to reuse a directory that holds another sweep (only possible by a hash clash or
    a hand-made directory)."""
    path = directory / MANIFEST
    if not path.exists():
        return
    try:
        spec = json.loads(path.read_text(encoding="utf-8")).get("spec")
    except (OSError, ValueError, AttributeError):
        raise BadInput(f"{path} is unreadable; move {directory} away to start again") from None
    if spec != json.loads(dumps(plan.spec())):
        raise BadInput(f"{directory} holds a different sweep; use another --out")


def _manifest(plan: Plan) -> dict[str, Any]:
    return {"format": 1, "name": plan.name, "claim": plan.claim.id,
            "title": plan.claim.title, "spec": plan.spec(), "command": plan.command(),
            "runs": len(plan.cells), "complete": False}


def write_manifest(directory: Path, plan: Plan) -> None:
    path = directory / MANIFEST
    if not path.exists():
        atomic_write_text(path, dumps(_manifest(plan)) + "\n")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def _margin(m: float | None) -> str:
    return "–" if m is None else ("∞" if m == float("inf") else f"{m:.3g}")


def _cell_text(values: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {_fmt(v)}" for k, v in values.items())


def _seeds_text(plan: Plan) -> str:
    if plan.seeds is None:
        return f"the setting's seed ({plan.cells[0].seed})"
    s = plan.seeds
    if len(s) > 2 and s == list(range(s[0], s[0] + len(s))):
        return f"{s[0]}..{s[-1]} ({len(s)} seeds)"
    return ", ".join(str(x) for x in s)


def _markdown(result, groups: list[dict[str, Any]], constant: str | None) -> str:
    plan = result.plan
    c = plan.claim
    counts = result.counts()
    keys = plan.keys
    lines = [f"# Sweep: `{c.id}` over {' × '.join(keys)}", "", f"**{c.title}**", "",
             f"Source: {c.source}", ""]
    lines += ["- grid: " + "; ".join(f"`{k}` = {', '.join(_fmt(v) for v in vals)}"
                                      for k, vals in plan.grid.items()),
              f"- seeds: {_seeds_text(plan)}",
              "- fixed: " + (", ".join(f"`{k}={_fmt(v)}`" for k, v in plan.base.items())
                             or "the claim's defaults"),
              f"- profile: `{plan.profile}`",
              f"- runs: {len(result.rows)} — " + ", ".join(f"{n} {k}" for k, n in counts.items()),
              "", "Reproduce (a rerun computes only what the store lacks):", "",
              "```bash", plan.command() + " --out DIR", "```", "",
              "![phase diagram](phase.png)", ""]
    if len(keys) == 1:
        what = f"check `{constant}`" if constant else "no check with scalar values"
        lines.append(f"Top: predicted and measured values of the {what} along `{keys[0]}`; "
                     "bottom: the worst margin of each run, coloured by verdict.")
    else:
        lines.append("Colour: the worst margin of each grid cell over its seeds (log scale); "
                     "mark: ✓ every run holds, ✗ some run fails, ? otherwise.")
    lines += ["", "The **margin** of a check is its error in units of its tolerance (≤ 1 passes; "
              "a z-test's |z| over its critical value; a failed condition ∞); a run's worst "
              "margin is the largest over its checks.", "",
              "| " + " | ".join(keys) + " | runs | verdict | holds | fails | inconclusive "
              "| worst margin |",
              "|" + "---|" * (len(keys) + 6)]
    for g in groups:
        lines.append("| " + " | ".join(_fmt(g["cell"][k]) for k in keys)
                     + f" | {g['runs']} | {_BADGE[verdict_of(g)]} | {g['holds']} | {g['fails']}"
                       f" | {g['inconclusive']} | {_margin(g['worst_margin'])} |")
    bad = [r for r in result.rows if r.verdict != "holds"]
    if bad:
        lines += ["", "## Runs that do not hold", ""]
        for r in bad[:30]:
            lines.append(f"- {_cell_text(r.cell)}, seed {r.seed}: **{r.verdict}**")
            for ch in r.checks:
                if ch.get("passed") is False:
                    lines.append(f"  - failed: {ch.get('name')} ({ch.get('detail', '')})")
            for reason in r.result.get("reasons", [])[:3]:
                if not reason.startswith("failed:"):
                    lines.append(f"  - reason: {reason}")
        if len(bad) > 30:
            lines.append(f"- … and {len(bad) - 30} more (see results.csv)")
    lines += ["", "Data: [results.csv](results.csv) (one row per run), "
              "[results.jsonl](results.jsonl) (one verdict record per run, as `icltheory check "
              "--json` prints it), [sweep.json](sweep.json). In Python: "
              "`icltheory.sweep.load(DIR)` → a pandas DataFrame.", ""]
    return "\n".join(lines)


def write_outputs(directory: Path, result, *, constant: str | None = None) -> list[Path]:
    """Write the CSV, the figure, the page and the summary; link the page from the index of
    the parent directory when that directory holds one."""
    plan = result.plan
    keys = plan.keys
    rows = result.rows
    groups = aggregate(rows, keys)
    chosen = line_check(rows, constant) if len(keys) == 1 else None
    paths = {name: directory / name for name in
             ("results.csv", "phase.png", "report.md", MANIFEST)}
    atomic_write_text(paths["results.csv"], to_csv(rows, keys))
    atomic_write_bytes(paths["phase.png"],
                       phase_png(rows, keys, title=f"{plan.claim.id} ({plan.profile})",
                                 constant=constant))
    atomic_write_text(paths["report.md"], _markdown(result, groups, chosen))
    summary = _manifest(plan)
    summary.update({
        "complete": True,
        "counts": result.counts(),
        "line_check": chosen,
        "cells": [{**{"values": g["cell"]}, "verdict": verdict_of(g),
                   **{k: g[k] for k in ("runs", "holds", "fails", "inconclusive",
                                        "worst_margin")}} for g in groups],
        "versions": sorted({json.dumps(r.result.get("versions", {}), sort_keys=True)
                            for r in rows}),
    })
    summary["versions"] = [json.loads(v) for v in summary["versions"]]
    atomic_write_text(paths[MANIFEST], dumps(summary) + "\n")
    out = list(paths.values())
    if (directory.parent / INDEX_NAME).exists():
        out.append(update_index(directory.parent))
    return out
