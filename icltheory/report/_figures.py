"""Render declarative :class:`~icltheory.core.Plot` specs with matplotlib (Agg, deterministic PNG)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import Plot

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["render_png"]

_STYLE = {"line": "-", "dashed": "--", "dotted": ":", "points": "o"}


def _draw(ax: Any, plot: Plot) -> None:
    for s in plot.series:
        x = np.asarray(s.x, dtype=float)
        y = np.asarray(s.y, dtype=float)
        if s.style == "points":
            ax.plot(x, y, "o", ms=3, label=s.label, color=s.color, alpha=s.alpha)
        else:
            ax.plot(x, y, _STYLE.get(s.style, "-"), lw=1.4, label=s.label,
                    color=s.color, alpha=s.alpha)
    for yh, label in plot.hlines:
        ax.axhline(yh, color="0.45", lw=0.8, ls=":")
        if label:
            ax.annotate(label, xy=(1.0, yh), xycoords=("axes fraction", "data"),
                        xytext=(2, 0), textcoords="offset points", fontsize=7,
                        va="center", color="0.3")
    for xv, label in plot.vlines:
        ax.axvline(xv, color="0.6", lw=0.8, ls="--")
        if label:
            ax.annotate(label, xy=(xv, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(2, -10), textcoords="offset points", fontsize=7,
                        rotation=90, va="top", color="0.3")
    for xa, ya, text in plot.annotations:
        ax.annotate(text, xy=(xa, ya), xytext=(4, 4), textcoords="offset points", fontsize=7)
    if plot.logx:
        ax.set_xscale("log")
    if plot.logy:
        ax.set_yscale("log")
    ax.set_title(plot.title)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    if any(s.label for s in plot.series):
        ax.legend(fontsize=7, loc="best")


_RC: dict[RcKeyType, Any] = {"svg.hashsalt": "icltheory", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3}


def to_figure(plot: Plot) -> Any:
    """A matplotlib ``Figure`` (not attached to pyplot's state) drawing ``plot``."""
    from matplotlib.figure import Figure

    import matplotlib

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(6.4, 4.0), dpi=110)
        ax = fig.add_subplot()
        _draw(ax, plot)
        fig.tight_layout()
    return fig


def render_png(plot: Plot) -> bytes:
    """Deterministic PNG bytes of ``plot`` (Agg, no metadata)."""
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig = to_figure(plot)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
        return buf.getvalue()
