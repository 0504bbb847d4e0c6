"""One claim's report set, rendered in memory: Markdown, JSON sidecar, figures.

The JSON sidecar is the set's manifest: its ``report.files`` maps every other file of the set
to its SHA-256, so a reader (and :func:`~icltheory.report.verify`) can tell a complete set
from a torn one.  Nothing rendered depends on the run time: the runtime travels beside the
files (``ClaimReport.runtime_s``) into the separate timing file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..core import Verdict
from ._figures import render_png
from ._json import dumps
from ._markdown import render_markdown

__all__ = ["ClaimReport", "render_claim", "sidecar_name", "markdown_name", "figure_name",
           "html_name"]


def markdown_name(claim_id: str) -> str:
    """The Markdown report's path inside the report folder."""
    return f"{claim_id}.md"


def sidecar_name(claim_id: str) -> str:
    """The JSON sidecar's path inside the report folder."""
    return f"{claim_id}.json"


def html_name(claim_id: str) -> str:
    """The HTML page's path inside the report folder (``report --html``)."""
    return f"{claim_id}.html"


def figure_name(claim_id: str, k: int) -> str:
    """The path of the claim's ``k``-th figure (from 1) inside the report folder."""
    return f"figures/{claim_id}-{k}.png"


@dataclass
class ClaimReport:
    """A rendered report set and what the command line prints about it.

    ``files`` maps paths relative to the report folder to their bytes (Markdown, figures, and
    the JSON sidecar last); ``runtime_s`` goes to the timing file only."""

    claim: str
    verdict: str
    files: dict[str, bytes]
    runtime_s: float
    profile: str
    internal_error: str | None = None
    notes: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def sha256(blob: bytes) -> str:
    """The hex SHA-256 of ``blob``."""
    return hashlib.sha256(blob).hexdigest()


def render_claim(verdict: Verdict, *, html: bool = False) -> ClaimReport:
    """Render ``verdict`` into its report set (deterministic: same verdict → same bytes);
    ``html``: add the self-contained HTML page (its figures embedded)."""
    if not isinstance(verdict, Verdict):
        raise TypeError(f"render_claim: expected a Verdict (from run_check), got "
                        f"{type(verdict).__name__}")
    v = verdict
    names = [figure_name(v.claim, k + 1) for k in range(len(v.plots))]
    files: dict[str, bytes] = {}
    for name, plot in zip(names, v.plots):
        files[name] = render_png(plot)
    md = render_markdown(v, [n.split("/", 1)[1] for n in names])
    files[markdown_name(v.claim)] = md.encode("utf-8")
    if html:
        from ._html import page

        title = f"{v.claim} — {v.claim_info.get('title', '')}".rstrip(" —")
        files[html_name(v.claim)] = page(md, title=title,
                                         images={n: files[n] for n in names}).encode("utf-8")
    data = v.as_dict()
    data.pop("runtime_s", None)  # runtimes live in the timing file only
    info = v.claim_info
    for k in ("title", "source", "statement", "provenance"):
        data[k] = info.get(k, "")
    data["figures"] = names
    if v.derivation is not None:
        data["derivation"] = v.derivation.as_dict()
    data["report"] = {"files": {name: sha256(blob) for name, blob in files.items()}}
    files[sidecar_name(v.claim)] = (dumps(data) + "\n").encode("utf-8")
    return ClaimReport(claim=v.claim, verdict=v.verdict, files=files, runtime_s=v.runtime_s,
                       profile=v.profile, internal_error=v.internal_error, notes=list(v.notes),
                       reasons=list(v.reasons))
