"""``icltheory describe CLAIM``: everything a user needs to run a claim in their own setting."""

from __future__ import annotations

import shlex
import textwrap
from typing import Any

from .core import Claim, SettingError
from .report import fmt

__all__ = ["describe_data", "describe_text", "example_command"]


def _sample_value(row: dict[str, Any]) -> str | None:
    """A valid-looking non-default value for a key with a ``sample`` range, or ``None``."""
    sample = row.get("sample")
    if not sample or row["kind"] not in ("int", "float", "choice"):
        return None
    default = row.get("default")
    if row["kind"] == "choice":
        others = [c for c in sample if c != default]
        return others[0] if others else None
    lo, hi = sample[0], sample[1]
    if row["kind"] == "int":
        for v in (int(hi), int(lo), (int(lo) + int(hi)) // 2):
            if v != default:
                return str(v)
        return None
    for v in ((float(lo) * float(hi)) ** 0.5 if lo > 0 else (lo + hi) / 2, lo, hi):
        if v != default:
            return f"{float(v):.3g}"
    return None


def example_command(claim: Claim) -> str:
    """One command that runs the claim at a non-default setting (validated), at ``quick``."""
    given = getattr(claim, "example", None)
    if isinstance(given, str) and given.strip():
        return given.strip()
    specs = claim.setting_type.field_specs()
    rows = {r["key"]: r for r in claim.setting_type.describe()}
    for key, spec in specs.items():
        if key in ("seed", "profile") or spec.sample is None:
            continue
        value = _sample_value({**rows[key], "sample": spec.sample})
        if value is None:
            continue
        try:
            claim.setting({key: value, "profile": "quick"})
        except SettingError:
            continue
        return (f"icltheory check {claim.id} --set {shlex.quote(f'{key}={value}')} "
                "--profile quick")
    return f"icltheory check {claim.id} --set seed=1 --profile quick"


def describe_data(claim: Claim) -> dict[str, Any]:
    """``Claim.describe()`` with the example command and, for a claim that does not declare
    its predictions, the names of the constants it computes at its defaults."""
    data = claim.describe()
    specs = claim.setting_type.field_specs()
    for row in data["settings"]:
        spec = specs.get(row["key"])
        if spec is not None and spec.sample is not None:
            row["sample"] = list(spec.sample)
    if not data["predictions"]:
        try:
            names = list(claim.constants(claim.setting()))
        except Exception as exc:  # reported, not fatal: describe must always answer
            names, data["constants_error"] = [], f"{type(exc).__name__}: {exc}"[:200]
        data["predictions"] = {k: {"meaning": "", "formula": "", "kind": "value",
                                   "informational": False} for k in names}
        data["predictions_declared"] = False
    else:
        data["predictions_declared"] = True
    from .core._resolution import load_resolutions, resolution_text

    measured = load_resolutions().get(claim.id, {})
    for key, p in data["predictions"].items():
        res = {prof: resolution_text(rec[key]) for prof, rec in measured.items() if key in rec}
        if res:
            p["resolution"] = res
    data["example"] = example_command(claim)
    return data


def _sample_text(row: dict[str, Any]) -> str:
    sample = row["sample"]
    if row["kind"] in ("choice", "text"):
        return "one of " + ", ".join(str(x) for x in sample)
    scale = " (log-uniform)" if len(sample) > 2 and sample[2] == "log" else ""
    what = " each" if row["kind"] == "floats" else ""
    return f"{fmt(sample[0])} to {fmt(sample[1])}{what}{scale}"


def _wrap(text: str, indent: str, width: int = 92) -> list[str]:
    out: list[str] = []
    for para in str(text).strip().splitlines() or [""]:
        out += textwrap.wrap(para, width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False) or [indent.rstrip()]
    return out


def _default_text(row: dict[str, Any]) -> str:
    if row.get("by_profile"):
        bp = row["by_profile"]
        return " / ".join(fmt(bp[p]) for p in ("quick", "standard", "thorough")) + \
            " (quick / standard / thorough)"
    if row["default"] is None:
        return "derived from the other keys"
    return fmt(row["default"])


def describe_text(claim: Claim) -> str:
    """The human-readable description printed by ``icltheory describe``."""
    d = describe_data(claim)
    lines = [f"{d['id']} — {d['title']}", ""]
    lines += ["Source:", *_wrap(d["source"], "    ")]
    lines += [f"Provenance of the statement: {d['provenance']}", ""]
    lines += ["Statement (LaTeX):", *_wrap(d["statement"], "    "), ""]
    lines += ["Setting keys (--set KEY=VALUE, or KEY = VALUE in a --config TOML file):"]
    rows = [r for r in d["settings"] if r["key"] not in ("seed", "profile")]
    rows += [r for r in d["settings"] if r["key"] in ("seed", "profile")]
    for row in rows:
        lines.append(f"  {row['key']}  [{row['type']}]")
        lines += _wrap(row["doc"], "      ")
        lines.append(f"      default: {_default_text(row)}")
        if row.get("length"):
            lines.append(f"      length: as many values as {row['length']}")
        if row.get("sample") and row["key"] != "seed":
            lines.append(f"      random settings draw: {_sample_text(row)}")
    lines += _wrap("Random settings (icltheory.testing.settings, the contract's random draws) "
                   "draw the keys marked 'random settings draw'; the others keep their "
                   "defaults unless fixed by keyword"
                   + ("; settings the claim calls undecidable by construction are skipped"
                      if type(claim).undecidable is not Claim.undecidable else "") + ".", "")
    lines.append("")
    if d["predictions"]:
        declared = d["predictions_declared"]
        lines.append("Predicted constants (--predict KEY=VALUE replaces one by your value):"
                     if declared else "Constants it computes (not yet declared with meanings):")
        for key, p in d["predictions"].items():
            tag = f"  [{p['kind']}" + (", reported only]" if p["informational"] else "]")
            lines.append(f"  {key}{tag if declared else ''}")
            if p["meaning"]:
                lines += _wrap(p["meaning"], "      ")
            if p.get("formula"):
                lines += _wrap(f"formula: {p['formula']}", "      ")
            for prof, text in (p.get("resolution") or {}).items():
                lines += _wrap(f"resolution at {prof}: {text}", "      ")
        lines.append("")
    lines.append(f"Backends (the setting key 'backend' where there is one): "
                 f"{', '.join(d['backends'])}")
    if d.get("planted_errors"):
        lines.append(f"Planted errors the tests use to show the checks can fail: "
                     f"{len(d['planted_errors'])} "
                     f"({', '.join(sorted({p['side'] for p in d['planted_errors']}))})")
    lines += ["", "Example:", f"    {d['example']}",
              "Also: icltheory constants " + d["id"] + "   icltheory derive " + d["id"]]
    return "\n".join(lines)
