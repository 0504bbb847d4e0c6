"""The "Sweeps" section of a reports index: kept by the report layer
(:func:`icltheory.report.sweeps_section` lists every ``sweep-*/sweep.json`` under the folder, so
it is always complete), refreshed here after a sweep writes its page.
"""

from __future__ import annotations

from pathlib import Path

from ..report import sweeps_section as index_section
from ..report import write_index

__all__ = ["index_section", "update_index", "INDEX_NAME", "HEADING"]

INDEX_NAME = "index.md"
HEADING = "## Sweeps"


def update_index(out_dir: str | Path) -> Path:
    """Re-render ``out_dir/index.md`` (and ``index.html`` where there is one) with the Sweeps
    section listing this folder's sweeps; the reports' rows are kept, and the registered
    claims without a report are listed as "not run"."""
    from ..core import all_claims

    return Path(write_index(out_dir, known=[(c.id, c.title) for c in all_claims()]))
