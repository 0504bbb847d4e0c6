"""The README's findings cannot drift from the reports: every decimal number quoted under
"What the checks found" carries a reference to the report value it quotes
(``0.2583192<!--=softmaxreg.lipschitz:measured.witness_certified_lower-->``, optionally with a
scale, ``1.2<!--=claim:path*100-->`` for a percentage), and the quoted digits are that value
rounded (within half a unit of the last digit quoted).  Numbers inside backticks (commands,
exact rationals) are not quotes of measurements."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ANCHOR = re.compile(r"([-+−]?\d+(?:\.\d+)?(?:e[-+−]?\d+)?)(\s*(?:%|×)?)\s*"
                    r"<!--=([a-z0-9.\-]+):([A-Za-z0-9_.\[\]\-]+)(?:\*(\d+(?:\.\d+)?))?-->")
DECIMAL = re.compile(r"(?<![\w.])[-+−]?\d+\.\d+(?:e[-+−]?\d+)?")


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"### What the checks found.*?\n(.*?)\n## ", text, re.S)
    assert m, "README has no 'What the checks found' section"
    return m.group(1)


def _value(claim: str, path: str):
    rec = json.loads((ROOT / "reports" / f"{claim}.json").read_text(encoding="utf-8"))
    cur = rec
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            cur = cur[int(part[1:-1])]
        elif isinstance(cur, list):
            cur = cur[int(part)]
        else:
            cur = cur[part]
    return cur


def _outside_code(text: str) -> str:
    return re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), text)


def test_every_quoted_decimal_has_a_reference():
    sec = _outside_code(_section())
    anchored = {m.start(1) for m in ANCHOR.finditer(sec)}
    bare = [m.group(0) for m in DECIMAL.finditer(sec) if m.start() not in anchored]
    assert not bare, f"decimal numbers quoted without a report reference: {bare[:12]}"


@pytest.mark.parametrize("match", list(ANCHOR.finditer(_section())),
                         ids=lambda m: f"{m.group(3)}:{m.group(4)}")
def test_quoted_numbers_equal_the_reports(match):
    quoted, claim, path, scale = match.group(1), match.group(3), match.group(4), match.group(5)
    if not (ROOT / "reports" / f"{claim}.json").exists():
        pytest.fail(f"reports/{claim}.json is missing: run icltheory report --all")
    value = float(_value(claim, path)) * (float(scale) if scale else 1.0)
    q = Decimal(quoted.replace("−", "-"))
    half = Decimal(5) * Decimal(10) ** (q.as_tuple().exponent - 1)
    assert abs(Decimal(repr(value)) - q) <= half, (
        f"README quotes {quoted} for {claim}:{path}, the report says {value:.8g}")


def test_the_planted_error_count_is_the_claims_own():
    """The README's count of planted errors per side is what the built-in claims declare."""
    from collections import Counter

    from icltheory.core import all_claims

    claims = [c for c in all_claims() if not c.is_legacy() and not c.id.startswith("example.")]
    sides = Counter(e.side for c in claims for e in c.planted_errors)
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    m = re.search(r"The (\d+) claims carry (\d+) planted errors \((\d+) on the theory side, (\d+) on the "
                  r"measurement side, (\d+) in the certifying layer", text)
    assert m, "README lost its planted-error count"
    assert tuple(map(int, m.groups())) == (len(claims), sum(sides.values()), sides["theory"],
                                           sides["measurement"], sides["certified"]), sides
