"""The phase diagram of a sweep (a deterministic PNG: Agg, no metadata, nothing timed).

* Two or more grid keys: a heatmap, the first key across, every combination of the other keys
  down; the colour is the cell's worst margin (log scale, 1 = at the tolerance; over its
  seeds, the largest), the mark its verdict (✓ every seed holds, ✗ some seed fails — with the
  count when there are several seeds — ? otherwise).
* One grid key: a line plot of one check's predicted and measured values along the grid (each
  seed a dot, the mean a line), above the worst margin of every run, marked by verdict.
"""

from __future__ import annotations

import io
import math
from typing import cast, Any, Sequence

import numpy as np

from ._rows import Row, aggregate, check_ids, verdict_of

__all__ = ["phase_png", "line_check"]

_RC = {"font.size": 8, "axes.grid": False, "svg.hashsalt": "icltheory"}
_LOG_RANGE = (-3.0, 1.0)  # colour scale of log10(worst margin): 0.001× to 10× the tolerance
_MARK = {"holds": "✓", "fails": "✗", "inconclusive": "?"}
#: Okabe–Ito colours (distinct under the common colour-vision deficiencies): blue holds,
#: vermillion fails, grey inconclusive
_VCOLOR = {"holds": "#0072B2", "fails": "#D55E00", "inconclusive": "#999999"}
#: the margin's colour map: blue (far inside the tolerance) through white (at it) to orange
#: (beyond it); a cell without a margin (inconclusive) is grey and hatched
_CMAP = "PuOr_r"


def _label(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_label(x) for x in v) + "]"
    return str(v)


def _scalar(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def line_check(rows: Sequence[Row], constant: str | None = None) -> str | None:
    """The check a 1-D sweep plots: ``constant`` (a check id or a judged key) if given, else
    the first check with a margin whose predicted and measured values are finite scalars in
    every run."""
    if not rows:
        return None
    first = rows[0].checks
    candidates = check_ids(first)
    if constant is not None:
        if constant in candidates:
            candidates = [constant]
        else:
            candidates = [c for c in candidates if c.split("[")[0] == constant]
            if not candidates:
                return None
    for cid in candidates:
        ok = True
        for r in rows:
            by_id = dict(zip(check_ids(r.checks), r.checks))
            c = by_id.get(cid)
            if c is None or _scalar(c.get("predicted")) is None \
                    or _scalar(c.get("measured")) is None or r.margins.get(cid) is None:
                ok = False
                break
        if ok:
            return cid
    return None


def _norm():
    from matplotlib.colors import TwoSlopeNorm

    return TwoSlopeNorm(vmin=_LOG_RANGE[0], vcenter=0.0, vmax=_LOG_RANGE[1])


def _logm(m: float | None) -> float:
    if m is None:
        return math.nan
    if m <= 0:
        return _LOG_RANGE[0]
    return float(np.clip(math.log10(m) if math.isfinite(m) else _LOG_RANGE[1], *_LOG_RANGE))


def _heatmap(fig, rows: Sequence[Row], keys: Sequence[str], title: str) -> None:
    groups = aggregate(rows, keys)
    xk, yks = keys[0], list(keys[1:])
    xs: list[Any] = []
    ys: list[tuple] = []
    for g in groups:
        x, y = g["cell"][xk], tuple(g["cell"][k] for k in yks)
        if x not in xs:
            xs.append(x)
        if y not in ys:
            ys.append(y)
    z = np.full((len(ys), len(xs)), np.nan)
    ax = fig.add_subplot()
    for g in groups:
        i = ys.index(tuple(g["cell"][k] for k in yks))
        j = xs.index(g["cell"][xk])
        z[i, j] = _logm(g["worst_margin"])
        v = verdict_of(g)
        mark = _MARK[v] + (f"{g['fails']}/{g['runs']}" if v == "fails" and g["runs"] > 1 else "")
        ax.text(j, i, mark, ha="center", va="center", fontsize=9 if len(xs) <= 12 else 6,
                color="black")
    import matplotlib

    from matplotlib.patches import Rectangle

    cmap = matplotlib.colormaps[_CMAP].with_extremes(bad="#d9d9d9")
    im = ax.imshow(np.ma.masked_invalid(z), cmap=cmap, norm=_norm(), aspect="auto",
                   origin="lower", interpolation="nearest")
    for i, j in zip(*np.nonzero(np.isnan(z))):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                               edgecolor="#999999", lw=0))
    ax.set_xticks(range(len(xs)), [_label(x) for x in xs],
                  rotation=45 if len(xs) > 8 else 0, ha="right" if len(xs) > 8 else "center")
    ax.set_yticks(range(len(ys)), [", ".join(f"{k}={_label(v)}" for k, v in zip(yks, y))
                                   if len(yks) > 1 else _label(y[0]) for y in ys])
    ax.set_xlabel(xk)
    ax.set_ylabel(", ".join(yks))
    ax.set_title(title)
    cb = fig.colorbar(im, ax=ax, shrink=0.9)
    cb.set_label("log₁₀ worst margin (error / tolerance; > 0 fails)")


def _positions(values: Sequence[Any]) -> tuple[list[float], bool, bool]:
    """x positions of the grid values: the numbers themselves (log axis when positive and
    spanning ≥ 20×), else 0, 1, 2, …"""
    nums = [_scalar(v) for v in values]
    if all(n is not None for n in nums):
        pos = [float(n) for n in nums if n is not None]
        logx = min(pos) > 0 and max(pos) / min(pos) >= 20
        return pos, True, logx
    return [float(i) for i in range(len(values))], False, False


def _line(fig, rows: Sequence[Row], key: str, title: str, constant: str | None) -> None:
    rows = sorted(rows, key=lambda r: r.index)
    values: list[Any] = []
    for r in rows:
        if r.cell[key] not in values:
            values.append(r.cell[key])
    pos, numeric, logx = _positions(values)
    x_of = {repr(v): p for v, p in zip(values, pos)}
    cid = line_check(rows, constant)
    axes = fig.subplots(2 if cid else 1, 1, sharex=True, squeeze=False)[:, 0]
    if cid:
        ax = axes[0]
        pred: dict[float, list[float]] = {}
        meas: dict[float, list[float]] = {}
        name = ""
        for r in rows:
            c = dict(zip(check_ids(r.checks), r.checks))[cid]
            name = name or str(c.get("name", cid))
            x = x_of[repr(r.cell[key])]
            pred.setdefault(x, []).append(float(c["predicted"]))
            meas.setdefault(x, []).append(float(c["measured"]))
        xs = sorted(pred)
        ax.plot(xs, [float(np.mean(pred[x])) for x in xs], "-", color=_VCOLOR["holds"], lw=1.5,
                label="predicted")
        ax.plot(xs, [float(np.mean(meas[x])) for x in xs], "o--", color=_VCOLOR["fails"], ms=4, lw=1,
                label="measured" + (" (mean over seeds)" if len(meas[xs[0]]) > 1 else ""))
        if len(meas[xs[0]]) > 1:
            px = [x for x in xs for _ in meas[x]]
            ax.plot(px, [m for x in xs for m in meas[x]], ".", color=_VCOLOR["fails"], alpha=0.35,
                    ms=3, label="each seed")
        ax.set_ylabel(cid)
        ax.set_title(f"{title}\n{name[:90]}", fontsize=8)
        ax.legend(fontsize=7, loc="best")
        ax.grid(True, alpha=0.3)
    ax = axes[-1]
    for v in ("holds", "inconclusive", "fails"):
        pts = [(x_of[repr(r.cell[key])], r.worst_margin) for r in rows if
               (r.verdict if r.verdict in ("holds", "fails") else "inconclusive") == v
               and r.worst_margin is not None]
        if pts:
            ys = [min(max(m, 10 ** _LOG_RANGE[0]), 10 ** _LOG_RANGE[1]) for _, m in pts]
            ax.plot([p for p, _ in pts], ys, "o", ms=4, color=_VCOLOR[v], label=v)
    ax.axhline(1.0, color="0.3", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_ylim(10 ** _LOG_RANGE[0] / 2, 10 ** _LOG_RANGE[1] * 2)
    ax.set_ylabel("worst margin (error / tolerance)")
    ax.set_xlabel(key)
    if not cid:
        ax.set_title(title)
    if logx:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(pos, [_label(v) for v in values])
    if ax.get_legend_handles_labels()[0]:  # a panel with no plotted verdict has no legend
        ax.legend(fontsize=7, loc="best")
    ax.grid(True, alpha=0.3)


def phase_png(rows: Sequence[Row], keys: Sequence[str], *, title: str,
              constant: str | None = None) -> bytes:
    """The phase diagram of ``rows`` as PNG bytes (the same rows give the same bytes)."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(cast(Any, _RC)):
        if len(keys) == 1:
            fig = Figure(figsize=(6.4, 5.6), dpi=100)
            _line(fig, rows, keys[0], title, constant)
        else:
            n_rows = len({tuple(repr(r.cell[k]) for k in keys[1:]) for r in rows})
            n_cols = len({repr(r.cell[keys[0]]) for r in rows})
            fig = Figure(figsize=(min(4.0 + 0.55 * n_cols, 16.0),
                                  min(2.2 + 0.35 * n_rows, 24.0)), dpi=100)
            _heatmap(fig, rows, keys, title)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
