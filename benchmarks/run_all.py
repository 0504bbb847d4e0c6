"""Run every benchmark script in this folder (``bench_*.py``) one after another.

Usage: ``python benchmarks/run_all.py [NAME_FILTER]``.  Each script prints its own table.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

here = Path(__file__).parent
flt = sys.argv[1] if len(sys.argv) > 1 else ""
for script in sorted(here.glob("bench_*.py")):
    if flt not in script.name:
        continue
    print(f"\n=== {script.name}")
    t0 = time.perf_counter()
    runpy.run_path(str(script), run_name="__main__")
    print(f"--- {script.name}: {time.perf_counter() - t0:.1f} s")
