"""Measure the resolution of every built-in claim's predictions (the smallest error in each
predicted constant that turns the verdict to ``fails``) and write ``proofs/resolutions.json``.

    python scripts/resolution.py [CLAIM-PREFIX ...] [--profiles quick,standard] [--print]

Each claim is measured once per profile at its defaults; the planted errors are judged against
that one measurement (see :mod:`icltheory.core._resolution`).  Claims not named keep their
earlier entries.  Each claim's entry records the hash of the source file that defines it (its
judge), so a test can tell a resolution measured under other code (stale) from a current one.  ``--print`` prints the table without writing.
"""

from __future__ import annotations

import json
import sys
import time

from icltheory._cli import _one_blas_thread, _portable_arithmetic

# the command line's arithmetic (before NumPy is imported), so the recorded resolutions are the
# numbers any x86-64 machine with AVX2 measures
_one_blas_thread()
_portable_arithmetic()

from icltheory.core import all_claims, measure_claim  # noqa: E402
from icltheory.core._resolution import (RESOLUTIONS_FILE, claim_source_hash,  # noqa: E402
                                        load_resolution_sources, load_resolutions,
                                        measure_resolution, resolution_text)


def main(argv: list[str]) -> int:
    profiles = ["quick", "standard"]
    prefixes, show_only = [], False
    it = iter(argv)
    for a in it:
        if a == "--profiles":
            profiles = next(it).split(",")
        elif a == "--print":
            show_only = True
        else:
            prefixes.append(a)
    table, sources = load_resolutions(), load_resolution_sources()
    for c in all_claims():
        if c.is_legacy() or (prefixes and not any(c.id.startswith(p) for p in prefixes)):
            continue
        entry = {}
        for profile in profiles:
            t0 = time.perf_counter()
            s = c.setting({"profile": profile})
            res = measure_resolution(c, s, measurement=measure_claim(c, s))
            entry[profile] = {k: r.as_dict() for k, r in sorted(res.items())}
            for k, r in sorted(res.items()):
                print(f"{c.id:38s} {profile:9s} {k:28s} {resolution_text(r.as_dict())}",
                      flush=True)
            print(f"{c.id:38s} {profile:9s} ({time.perf_counter() - t0:.1f} s)", flush=True)
        table.setdefault(c.id, {}).update(entry)  # profiles not measured now keep their entries
        if set(table[c.id]) >= {"quick", "standard"} and set(profiles) >= {"quick", "standard"}:
            sources[c.id] = claim_source_hash(c)  # both profiles measured with this source
    if not show_only:
        RESOLUTIONS_FILE.write_text(json.dumps({"claims": dict(sorted(table.items())),
                                                "sources": dict(sorted(sources.items()))},
                                               indent=1, sort_keys=True) + "\n",
                                    encoding="utf-8")
        print(f"wrote {RESOLUTIONS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
