"""A long-lived process that runs command lines in-process for the fuzz tests, under a memory
limit, so a runaway allocation cannot take the test session down.

    python tests/_cli_worker.py REQUEST_FD REPLY_FD MEMORY_LIMIT_BYTES

Each request is one JSON line ``{"argv": [...], "cwd": "..."}``; each reply one JSON line
``{"code", "out", "err", "seconds", "escaped"}``.  Standard input is not used (a
``--config /dev/stdin`` reads nothing); the parent enforces the time limit by killing us.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import sys
import time


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 0


def main() -> None:
    req = os.fdopen(int(sys.argv[1]), "r", encoding="utf-8", errors="surrogateescape")
    rep = os.fdopen(int(sys.argv[2]), "w", encoding="utf-8", errors="surrogateescape")
    extra = int(sys.argv[3])
    os.environ["MPLBACKEND"] = "Agg"
    from icltheory._cli import main as cli
    from icltheory.core import all_claims

    all_claims()  # load every paper before the limit is set
    import matplotlib  # noqa: F401 - loaded before the limit too (reports draw figures)

    base = _vm_bytes()
    if base:
        resource.setrlimit(resource.RLIMIT_AS, (base + extra, base + extra))
    rep.write(json.dumps({"ready": True, "vm": base}) + "\n")
    rep.flush()
    for line in req:
        job = json.loads(line)
        os.chdir(job["cwd"])
        out, err = io.StringIO(), io.StringIO()
        escaped = None
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli(job["argv"])
            except BaseException as exc:  # noqa: BLE001 - report everything to the parent
                code, escaped = None, f"{type(exc).__name__}: {exc}"[:500]
        reply = {"code": code, "out": out.getvalue(), "err": err.getvalue()[-5000:],
                 "seconds": time.perf_counter() - t0, "escaped": escaped}
        rep.write(json.dumps(reply) + "\n")
        rep.flush()


if __name__ == "__main__":
    main()
