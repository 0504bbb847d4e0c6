"""Rows of a sweep: one per run, with its margins; tables, CSV and DataFrame views.

The **margin** of a check is how far the measurement is from the prediction in units of the
check's tolerance, so that a margin ≤ 1 passes and > 1 fails:

* ``close``  — max |m − p| / (atol + rtol·|p|) over the elements;
* ``ztest``  — the statistic over the critical value on its side (the acceptance interval
  [lo, hi] may be asymmetric for skewed samples);
* ``bound``  — certified lower value / claimed bound K (above 1: a witness refutes K);
* a boolean condition has no margin (``None``), unless it failed, where it is ``inf``.

The **worst margin** of a run is the largest margin over its checks (``None`` when none has
one).  Check ids name the predicted constants a check judges (``loss``, ``loss[1]`` for the
second check judging ``loss``) or, for a check judging none, its name: names can carry
setting values, ids stay the same from cell to cell.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["Row", "check_margin", "check_ids", "worst", "summary_table", "aggregate",
           "flat_rows", "to_csv", "to_dataframe", "PANDAS_HINT"]

PANDAS_HINT = "pip install 'icltheory[pandas]' (or pip install pandas)"


def _numbers(v: Any) -> np.ndarray | None:
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if a.dtype.kind == "f" else None


def check_margin(check: dict[str, Any]) -> float | None:
    """The margin of one check record (``Check.as_dict()``); see the module docstring."""
    tol = check.get("tolerance")
    passed = check.get("passed")
    m = None
    if isinstance(tol, dict):
        if "rtol" in tol or "atol" in tol:
            p, x = _numbers(check.get("predicted")), _numbers(check.get("measured"))
            if p is not None and x is not None and p.shape == x.shape and p.size:
                bound = float(tol.get("atol", 0.0)) + float(tol.get("rtol", 0.0)) * np.abs(p)
                err = np.abs(x - p)
                if np.all(np.isfinite(err)):
                    with np.errstate(divide="ignore", invalid="ignore"):
                        units = np.where(err == 0, 0.0, err / bound)
                    m = float(np.max(units))
        elif "critical" in tol:
            p, x = _numbers(check.get("predicted")), _numbers(check.get("measured"))
            se = float(tol.get("stderr", 0.0) or 0.0)
            lo, hi = (float(c) for c in tol["critical"])
            if p is not None and x is not None and p.size == 1 and x.size == 1 and se > 0:
                z = (float(x) - float(p)) / se
                m = z / hi if z >= 0 else z / lo
        elif "certified_lower" in tol:
            k = _numbers(check.get("predicted"))
            low = tol.get("certified_lower")
            if k is not None and k.size == 1 and float(k) > 0 and isinstance(low, (int, float)):
                m = float(low) / float(k)
    if m is not None and not math.isfinite(m):
        m = math.inf
    if m is None and passed is False:
        m = math.inf
    return m


def check_ids(checks: Sequence[dict[str, Any]]) -> list[str]:
    """Stable ids of a run's checks (see the module docstring)."""
    base = ["+".join(c.get("judges") or []) or str(c.get("name", "")) for c in checks]
    ids: list[str] = []
    seen: dict[str, int] = {}
    for b in base:
        k = seen.get(b, 0)
        seen[b] = k + 1
        ids.append(b if k == 0 else f"{b}[{k}]")
    return ids


def worst(margins: Iterable[float | None]) -> float | None:
    vals = [m for m in margins if m is not None]
    return max(vals) if vals else None


@dataclass
class Row:
    """One run of a sweep: its grid values, seed, verdict, margins and the verdict's record
    (``result``: the same JSON as ``icltheory check --json``)."""

    index: int
    cell: dict[str, Any]
    seed: int
    result: dict[str, Any]

    @property
    def verdict(self) -> str:
        return self.result["verdict"]

    @property
    def runtime_s(self) -> float:
        return float(self.result.get("runtime_s", 0.0))

    @property
    def checks(self) -> list[dict[str, Any]]:
        return list(self.result.get("checks", []))

    @property
    def margins(self) -> dict[str, float | None]:
        cs = self.checks
        return {i: check_margin(c) for i, c in zip(check_ids(cs), cs)}

    @property
    def worst_margin(self) -> float | None:
        return worst(self.margins.values())

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> "Row":
        return cls(int(rec["index"]), dict(rec["cell"]), int(rec["seed"]), rec["result"])


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.3g}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    return str(v)


def aggregate(rows: Sequence[Row], keys: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per grid cell (over its seeds), in grid order: the values, the counts of
    each verdict, the worst margin, the mean runtime."""
    groups: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r.index):
        gk = repr([r.cell.get(k) for k in keys])
        g = groups.setdefault(gk, {"cell": {k: r.cell.get(k) for k in keys}, "runs": 0,
                                   "holds": 0, "fails": 0, "inconclusive": 0,
                                   "worst_margin": None, "runtime_s": 0.0, "first": r.index})
        g["runs"] += 1
        g[r.verdict if r.verdict in ("holds", "fails") else "inconclusive"] += 1
        g["worst_margin"] = worst([g["worst_margin"], r.worst_margin])
        g["runtime_s"] += r.runtime_s
    out = sorted(groups.values(), key=lambda g: g["first"])
    for g in out:
        g["runtime_s"] = g["runtime_s"] / g["runs"]
        del g["first"]
    return out


def verdict_of(group: dict[str, Any]) -> str:
    """A grid cell's verdict over its seeds: fails if any seed fails, holds if all hold."""
    if group["fails"]:
        return "fails"
    if group["holds"] == group["runs"]:
        return "holds"
    return "inconclusive"


def summary_table(rows: Sequence[Row], keys: Sequence[str], *, runtimes: bool = True) -> str:
    """An aligned text table, one line per grid cell."""
    groups = aggregate(rows, keys)
    head = list(keys) + ["runs", "holds", "fails", "inconcl.", "worst margin"]
    if runtimes:
        head.append("s/run")
    body = []
    for g in groups:
        line = [_fmt(g["cell"][k]) for k in keys] + [str(g["runs"]), str(g["holds"]),
                                                    str(g["fails"]), str(g["inconclusive"]),
                                                    _fmt(g["worst_margin"])]
        if runtimes:
            line.append(f"{g['runtime_s']:.2f}")
        body.append(line)
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    fmt = lambda cols: "  ".join(c.rjust(w) for c, w in zip(cols, widths))  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


def _scalar(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        try:
            return float(v)  # "inf"/"nan" as written by the JSON record
        except ValueError:
            return None
    return None


def flat_rows(rows: Sequence[Row], keys: Sequence[str]) -> list[dict[str, Any]]:
    """One flat dict per run: index, grid values, seed, verdict, worst margin, runtime,
    reasons, the scalar predicted and measured values and every check's margin."""
    out = []
    for r in sorted(rows, key=lambda r: r.index):
        d: dict[str, Any] = {"index": r.index}
        for k in keys:
            v = r.cell.get(k)
            d[k] = ",".join(repr(x) for x in v) if isinstance(v, list) else v
        d.update({"seed": r.seed, "verdict": r.verdict, "worst_margin": r.worst_margin,
                  "runtime_s": r.runtime_s, "reasons": " | ".join(r.result.get("reasons", []))})
        for side in ("predicted", "measured"):
            for k, v in (r.result.get(side) or {}).items():
                s = _scalar(v)
                if s is not None and not isinstance(s, bool):
                    d[f"{side}:{k}"] = s
        for cid, m in r.margins.items():
            d[f"margin:{cid}"] = m
        out.append(d)
    return out


def _columns(flat: Sequence[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for d in flat:
        for k in d:
            if k not in cols:
                cols.append(k)
    return cols


def to_csv(rows: Sequence[Row], keys: Sequence[str]) -> str:
    """The runs as CSV text (floats written in full precision)."""
    flat = flat_rows(rows, keys)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=_columns(flat), lineterminator="\n")
    w.writeheader()
    for d in flat:
        w.writerow({k: (repr(v) if isinstance(v, float) else ("" if v is None else v))
                    for k, v in d.items()})
    return buf.getvalue()


def to_dataframe(rows: Sequence[Row], keys: Sequence[str]):
    """The runs as a pandas DataFrame (the same columns as the CSV)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(f"a sweep's DataFrame needs pandas: {PANDAS_HINT}") from None
    flat = flat_rows(rows, keys)
    return pd.DataFrame(flat, columns=_columns(flat))
