"""The independent certificate check against the branch and bound that made the certificate.

For the normalized loss at n = 4 (d = 3) and R ∈ {1, 2}, and the rescaled loss at n = 4, R = 1,
at the quick and standard profiles' default box budgets: the branch and bound's CPU time (its
SymPy lowering done once beforehand, so both numbers are the search and the check proper), the
certificate's size and the checker's CPU time, and the ratio.

    python benchmarks/bench_certify.py
"""

from __future__ import annotations

import math
import time

from icltheory.certify import check_certificate
from proofs.softmax_regression.theory import _bnb as bnb
from proofs.softmax_regression.settings import bnb_default_boxes


def main() -> None:
    rows = []
    for loss, n, R in (("normalized", 4, 1.0), ("normalized", 4, 2.0), ("rescaled", 4, 1.0)):
        bnb.certified_band(loss, n, 3, R, seconds=math.inf, max_boxes=10)  # lower once
        for profile in ("quick", "standard"):
            boxes = bnb_default_boxes(n, profile, loss)
            t0 = time.process_time()
            band = bnb.certified_band(loss, n, 3, R, seconds=math.inf, max_boxes=boxes)
            t_bnb = time.process_time() - t0
            t0 = time.process_time()
            rep = check_certificate(band.certificate)
            t_chk = time.process_time() - t0
            rows.append((loss, n, R, profile, boxes, band.boxes, rep.boxes, rep.pieces, band.upper,
                         rep.status, t_bnb, t_chk))
            print(f"{loss:<10} n={n} R={R:g} {profile:<8} budget {boxes:>7} evaluated "
                  f"{band.boxes:>7} leaves {rep.boxes:>7} enclosed {rep.pieces:>7}  bound "
                  f"{band.upper:.6g}  {rep.status:<9} branch and bound {t_bnb:6.2f} s CPU, "
                  f"check {t_chk:6.2f} s CPU ({t_chk / t_bnb:.2f}×)", flush=True)


if __name__ == "__main__":
    main()
