"""The "Sweeps" section of a reports index (``index.md``), kept apart from how the rest of the
index is written.

:func:`index_section` builds the section from the sweeps found on disk (each
``sweep-*/sweep.json`` under the directory), so it is always complete and never duplicates a
line; :func:`update_index` replaces the section in ``index.md`` (from its ``## Sweeps`` heading
to the next ``## `` heading), or appends it.  An index writer that rewrites ``index.md`` whole
can append ``index_section(out_dir)`` to keep the section.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..report import atomic_write_text

__all__ = ["index_section", "update_index", "INDEX_NAME", "HEADING"]

INDEX_NAME = "index.md"
HEADING = "## Sweeps"


def index_section(out_dir: str | Path) -> str:
    """The Markdown section listing every sweep under ``out_dir`` ("" when there is none)."""
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
    return "\n".join([HEADING, "", "Grids of settings run by `icltheory sweep` (each page has "
                      "the phase diagram, the table and the data).", "",
                      "| sweep | grid | runs | profile | verdicts |", "|---|---|---|---|---|",
                      *rows, ""])


def update_index(out_dir: str | Path) -> Path:
    """Replace (or append) the Sweeps section of ``out_dir/index.md``; the rest is kept."""
    path = Path(out_dir) / INDEX_NAME
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip() == HEADING), None)
    if start is None:
        head, tail = lines, []
    else:
        end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")),
                   len(lines))
        head, tail = lines[:start], lines[end:]
    while head and not head[-1].strip():
        head.pop()
    section = index_section(out_dir).splitlines()
    parts = head + ([""] + section if section else []) + ([""] + tail if tail else [])
    atomic_write_text(path, "\n".join(parts).rstrip("\n") + "\n")
    return path
