"""Print the planted-error score: for every claim, how many planted errors (theory side,
measurement side, certified layer — the interval arithmetic and branch and bound behind a
certified number) and planted wrong predictions turn its verdict to ``fails``.

    python scripts/planted_errors.py [CLAIM-PREFIX ...] [--json]

A planted error is caught only when the verdict is ``fails`` (``inconclusive`` is not caught;
for a claim that is false at its defaults, an error declared ``expect="holds"`` is caught when
it makes the verdict ``holds``).
"""

from __future__ import annotations

import json
import sys

import icltheory.testing as itest
from icltheory.core import all_claims, judge_claim, measure_claim


def score(claim) -> dict:
    row = {"claim": claim.id, "theory": [0, 0], "measurement": [0, 0], "certified": [0, 0],
           "prediction": [0, 0], "missed": []}
    if claim.is_legacy():
        row["legacy"] = True
        return row
    for err in claim.planted_errors:
        v = itest.run_planted(claim, err)
        row[err.side][1] += 1
        if v.verdict == err.expect:
            row[err.side][0] += 1
        else:
            row["missed"].append(f"{err.side}: {err.what} → {v.verdict}")
    s = claim.setting({"profile": "quick"})
    m = measure_claim(claim, s)
    consts = claim.constants(s)
    for key, wrong in itest.planted_predictions(claim, s):
        v = judge_claim(claim, s, m, predict={key: wrong}, constants=consts)
        row["prediction"][1] += 1
        if v.verdict == "fails":
            row["prediction"][0] += 1
        else:
            row["missed"].append(f"--predict {key}={wrong} → {v.verdict}")
    return row


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    rows = [score(c) for c in all_claims()
            if not prefixes or any(c.id.startswith(p) for p in prefixes)]
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    tot = {k: [0, 0] for k in ("theory", "measurement", "certified", "prediction")}
    print(f"{'claim':<36} {'theory':>8} {'measurement':>12} {'certified':>10} {'prediction':>11}")
    for r in rows:
        if r.get("legacy"):
            print(f"{r['claim']:<36} {'(legacy claim: no planted errors declared)':>33}")
            continue
        cells = []
        for k in tot:
            tot[k][0] += r[k][0]
            tot[k][1] += r[k][1]
            cells.append(f"{r[k][0]}/{r[k][1]}")
        print(f"{r['claim']:<36} {cells[0]:>8} {cells[1]:>12} {cells[2]:>10} {cells[3]:>11}")
        for miss in r["missed"]:
            print(f"    missed: {miss}")
    caught = sum(v[0] for v in tot.values())
    planted = sum(v[1] for v in tot.values())
    print(f"\ncaught {caught}/{planted}: theory {tot['theory'][0]}/{tot['theory'][1]}, "
          f"measurement {tot['measurement'][0]}/{tot['measurement'][1]}, "
          f"certified {tot['certified'][0]}/{tot['certified'][1]}, "
          f"prediction {tot['prediction'][0]}/{tot['prediction'][1]}")
    return 0 if caught == planted else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
