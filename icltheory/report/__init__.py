"""Reports: Markdown with math, offline HTML with MathML, deterministic figures, JSON
sidecars, the index.

* :func:`write_reports` — write the report sets of some verdicts into a folder;
* :func:`report_claims` — check claims (in worker processes with ``workers > 1``) and write
  their reports;
* :func:`recover` / :func:`verify` — finish what a killed run left / check that every report
  set in a folder is complete;
* :func:`render_claim`, :func:`render_markdown`, :func:`render_png`, :func:`html_page` — the
  pieces, in memory.

Every report set (a claim's Markdown, JSON sidecar, figures and, with ``html=True``, its
self-contained HTML page) and the index entry are
written together or not at all; runtimes go to ``timing.json``/``timing.md`` only, so a rerun
of the same claims, settings and seeds reproduces every other file byte for byte.
Matplotlib is imported only when a figure is drawn, markdown-it-py and latex2mathml only when
HTML is rendered.
"""

from __future__ import annotations

import os
from typing import Iterable

from ..core import Verdict
from ._atomic import atomic_write_bytes as atomic_write_bytes
from ._atomic import atomic_write_text as atomic_write_text
from ._batch import report_claims as report_claims
from ._figures import render_png as render_png
from ._html import page as html_page
from ._json import dumps as dumps
from ._json import jsonable as jsonable
from ._markdown import fmt as fmt
from ._markdown import render_markdown as render_markdown
from ._markdown import verdict_markdown as verdict_markdown
from ._render import ClaimReport as ClaimReport
from ._render import render_claim as render_claim
from ._index import sweeps_section as sweeps_section
from ._store import check_out_dir as check_out_dir
from ._store import check_targets as check_targets
from ._store import commit as commit
from ._store import recover as recover
from ._store import verify as verify

__all__ = ["write_reports", "write_index", "report_claims", "recover", "verify", "commit",
           "check_out_dir", "check_targets", "sweeps_section", "render_claim", "ClaimReport",
           "render_markdown",
           "verdict_markdown", "render_png", "dumps", "jsonable", "fmt", "atomic_write_bytes",
           "atomic_write_text", "html_page"]


def write_reports(verdicts: Iterable[Verdict], out_dir: str | os.PathLike[str] = "reports", *,
                  known: Iterable[tuple[str, str]] | None = None,
                  html: bool = False) -> list[os.PathLike[str]]:
    """Write each verdict's report set (Markdown, JSON sidecar, figures) into ``out_dir`` and
    refresh the index and timing file; returns the paths written.

    ``known``: the registered claims as (id, title) pairs, listed in the index as "not run"
    when the folder has no report of them (the command line passes the registry);
    ``html``: also write each claim's self-contained HTML page and ``index.html``."""
    return list(commit([render_claim(v, html=html) for v in verdicts], out_dir, known=known,
                       html=html))


def write_index(out_dir: str | os.PathLike[str] = "reports", *,
                known: Iterable[tuple[str, str]] | None = None) -> os.PathLike[str]:
    """Render the index of ``out_dir`` again from its sidecars (and the timing file)."""
    paths = commit([], out_dir, known=known)
    return next(p for p in paths if p.name == "index.md")
