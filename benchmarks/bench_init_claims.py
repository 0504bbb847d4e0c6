"""Timing of the issue-12 initialisation claims (large-init regime of linattn.init-scale,
linattn.separate.drop-times) per profile: wall time of one check, verdict, and the claim's
own estimate of its work.  Run: ``python benchmarks/bench_init_claims.py``."""

from __future__ import annotations

import time

from icltheory.core import get_claim, run_check


def main() -> None:
    for cid in ("linattn.init-scale", "linattn.separate.drop-times"):
        c = get_claim(cid)
        for profile in ("quick", "standard"):
            s = c.setting({"profile": profile})
            est = c.cost(s)
            t0 = time.perf_counter()
            v = run_check(c, s)
            print(f"{cid:32s} {profile:9s} {v.verdict:13s} {time.perf_counter() - t0:6.2f} s  "
                  f"(estimate {est.work:.3g} flop, {est.memory / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
