"""Reports: Markdown with math, deterministic figures, JSON sidecars, the index."""

from ._atomic import atomic_write_bytes as atomic_write_bytes
from ._atomic import atomic_write_text as atomic_write_text
from ._figures import render_png as render_png
from ._json import dumps as dumps
from ._json import jsonable as jsonable
from ._markdown import render_markdown as render_markdown
from ._markdown import write_index as write_index
from ._markdown import write_reports as write_reports
