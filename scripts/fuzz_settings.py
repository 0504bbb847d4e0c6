"""Fuzz every setting key of some claims with extreme and malformed values, in-process.

    python scripts/fuzz_settings.py CLAIM-PREFIX [...] [--limit SECONDS] [--profile quick]

For each claim and key, each value is tried alone (other keys at their defaults) through the
command line's ``check`` path.  Reported as a problem: an internal error (exit 4 / a verdict
with ``internal_error``), an exception escaping, a run over ``--limit`` seconds (default 10),
an exit-2 message on more than one line.  Exit 2 (bad input), 0/1/3 (a verdict) are fine;
read the ``fails`` lines yourself: a ``fails`` on a true claim at an extreme value must be
numerical trouble reported as ``inconclusive`` instead.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import time

from icltheory._cli import main as cli
from icltheory.core import all_claims

INT_VALUES = ["0", "-1", "1", "2", "3", "1e30", "2.5", "٣", "３", "", "99999999999999999999",
              "1000000000", "1000000", "100000"]
FLOAT_VALUES = ["0", "-1", "5e-324", "1e-308", "1e-12", "1e-6", "0.5", "1", "1e6", "1e12",
                "1e308", "nan", "inf", "1e999", "", "abc", "1_0"]
LIST_VALUES = ["1,,2", "", ",", "5e-324", "1e-308,1e-308", "1e308,1", "1e308", "0.3,0.2999999",
               "0.3,0.2999999,0.2,0.1", "1," * 300 + "1", "1 2", "-1,1", "0,1", "1e-6,1",
               "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"]
TEXT_VALUES = ["9^9^9", "1e999999999", "10^10^10", "(((((((((((1)))))))))))", "x" * 3000,
               "__import__('os')", "R**2", "exp(exp(exp(10)))", "1/0", "0"]


def values_for(row: dict) -> list[str]:
    kind = row["kind"]
    vals = {"int": INT_VALUES, "float": FLOAT_VALUES, "floats": LIST_VALUES,
            "text": TEXT_VALUES}.get(kind, [])
    vals = list(vals)
    for bound in (row.get("min"), row.get("max")):
        if bound is not None:
            vals.append(repr(bound) if kind != "int" else str(int(bound)))
    if kind == "choice":
        vals = ["", "bogus"] + list(row.get("choices", []))
    return vals


def run_one(claim_id: str, key: str, value: str, profile: str, limit: float):
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli(["check", claim_id, "--set", f"{key}={value}", "--profile", profile,
                        "--json"])
        except BaseException as exc:  # noqa: BLE001 - the point is to see everything
            code = f"escaped {type(exc).__name__}: {exc}"
    dt = time.perf_counter() - t0
    problems = []
    if not isinstance(code, int) or code not in (0, 1, 2, 3):
        problems.append(f"exit {code}")
    if code == 2 and err.getvalue().count("\n") != 1:
        problems.append(f"exit 2 with {err.getvalue().count(chr(10))} stderr lines")
    if "Traceback" in err.getvalue():
        problems.append("traceback on stderr")
    verdict = None
    if code in (0, 1, 3):
        try:
            v = json.loads(out.getvalue())[0]
            verdict = v["verdict"]
            if v.get("internal_error"):
                problems.append(v["internal_error"])
            if verdict == "holds" and not v["checks"]:
                problems.append("holds with no checks")
        except (ValueError, KeyError, IndexError):
            problems.append("unreadable JSON")
    if dt > limit:
        problems.append(f"took {dt:.1f} s")
    return code, verdict, dt, problems, err.getvalue().strip()[:160]


def main(argv: list[str]) -> int:
    limit, profile, prefixes = 10.0, "quick", []
    it = iter(argv)
    for a in it:
        if a == "--limit":
            limit = float(next(it))
        elif a == "--profile":
            profile = next(it)
        else:
            prefixes.append(a)
    bad = 0
    for claim in all_claims():
        if prefixes and not any(claim.id.startswith(p) for p in prefixes):
            continue
        for row in claim.setting_type.describe():
            if row["key"] in ("profile",):
                continue
            for value in values_for(row):
                rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                code, verdict, dt, problems, msg = run_one(claim.id, row["key"], value, profile, limit)
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                if rss - rss0 > 1 << 20:  # KiB: grew by more than 1 GiB
                    problems.append(f"max RSS grew by {(rss - rss0) / 2**20:.1f} GiB")
                tag = "PROBLEM" if problems else "ok"
                bad += bool(problems)
                shown = value if len(value) <= 40 else value[:37] + "..."
                print(f"{tag:<8} {claim.id} {row['key']}={shown!r}: exit {code} {verdict or ''} "
                      f"{dt:.2f}s {'; '.join(problems)} {msg if code == 2 else ''}", flush=True)
    print(f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
