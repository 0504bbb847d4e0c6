"""The ``icltheory`` command line: one error boundary around thin commands.

Exit status (every command):

* **0** — every claim holds (``check``), or the command did what it was asked;
* **1** — some claim fails (``check``; ``derive`` when a step is refuted);
* **2** — bad input: one line on stderr, nothing written, no check run;
* **3** — no claim fails but some are inconclusive (``check``);
* **4** — internal error: a bug in icltheory or in a claim (one line ``icltheory: internal
  error: …``; ``--debug`` shows the traceback);
* **130** — interrupted (Ctrl-C), one line on stderr.

This module imports only the standard library at module level, so that an interrupt during
start-up (while NumPy and the papers load) is caught like any other: the commands live in
:mod:`icltheory._cli_commands` and the parser in :mod:`icltheory._cli_parser`.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # no `typing` import at start-up: every millisecond before entry() counts
    from typing import Sequence

__all__ = ["main", "entry", "EXIT_OK", "EXIT_FAILS", "EXIT_BAD_INPUT", "EXIT_INCONCLUSIVE",
           "EXIT_INTERNAL", "EXIT_INTERRUPTED"]

EXIT_OK, EXIT_FAILS, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130


def _one_line(text: object, limit: int = 500) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _say(line: str) -> None:
    """Write one line to stderr, even if stderr is a closed pipe."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # pragma: no cover - nowhere to write
        pass


def _wants_debug(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("ICLTHEORY_DEBUG", "") not in ("", "0")


#: set by the console script's SIGINT handler: a library that turns the KeyboardInterrupt into
#: another exception (NumPy's import does: an ImportError) still ends as an interrupt
_interrupted = False


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line (``argv`` without the program name) and return its exit status.

    Never raises: bad input is exit 2 with one line, an unexpected exception exit 4 with one
    line (``--debug``: the traceback), an interrupt exit 130 with one line."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = _wants_debug(args_list)
    try:
        code = _main(args_list, debug)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    if _interrupted or code == EXIT_INTERRUPTED:
        _say("icltheory: interrupted")
        return EXIT_INTERRUPTED
    return code


def _main(args_list: list[str], debug: bool) -> int:
    try:
        from .core import BadInput

        try:
            from ._cli_commands import run_command

            return run_command(args_list)
        except BadInput as exc:
            if _interrupted:
                return EXIT_INTERRUPTED
            _say(f"icltheory: error: {_one_line(exc)}")
            return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `icltheory derive X | head`: the reader left, not an error
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover
            pass
        return EXIT_OK
    except SystemExit as exc:  # argparse's --help / --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except MemoryError:
        if _interrupted:
            return EXIT_INTERRUPTED
        _say("icltheory: internal error: out of memory")
        return EXIT_INTERNAL
    except Exception as exc:  # the error boundary: never a traceback unless asked
        if _interrupted:
            return EXIT_INTERRUPTED
        if debug:
            import traceback

            traceback.print_exc(file=sys.stderr)
        _say(f"icltheory: internal error: {type(exc).__name__}: {_one_line(exc, 300)}"
             + ("" if debug else " (rerun with --debug for the traceback)"))
        return EXIT_INTERNAL


def _on_second_interrupt(signum: int, frame: object) -> None:
    # a second Ctrl-C while the first one is being handled: leave at once, still one line
    os.write(2, b"icltheory: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _on_first_interrupt(signum: int, frame: object) -> None:
    global _interrupted
    _interrupted = True
    signal.signal(signal.SIGINT, _on_second_interrupt)
    raise KeyboardInterrupt


def _on_unraisable(unraisable: object) -> None:
    """Python's hook for exceptions it can only report (raised in a weakref callback or a
    ``__del__``, e.g. importlib's module-lock cleanup).  The first Ctrl-C raises KeyboardInterrupt
    from the signal handler wherever the main thread is; landing there, it would print a
    traceback and be dropped.  It is already recorded (``_interrupted``): say nothing, and the
    command ends with the one interrupted line and exit 130 when it returns (a second Ctrl-C
    still leaves at once).  A KeyboardInterrupt from Python's own handler (a Ctrl-C before the
    command line's was installed) is recorded the same way.  Every other such exception goes to
    Python's own hook."""
    global _interrupted
    if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
        _interrupted = True
        return
    sys.__unraisablehook__(unraisable)  # type: ignore[arg-type]


#: BLAS libraries read these once, when NumPy is first imported (after this module)
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread() -> None:
    """BLAS on one thread unless the user chose otherwise: the kernels here are small (a
    multi-threaded BLAS spin-waits on them and ran up to 100× slower on a loaded two-core
    machine), ``report -j`` and sweeps parallelise over processes instead, and one thread makes
    the floating-point sums independent of the machine's core count (same bytes everywhere)."""
    for var in _BLAS_THREAD_VARS:
        os.environ.setdefault(var, "1")


#: the arithmetic every x86-64 machine with AVX2 and FMA shares: OpenBLAS's Haswell kernels and
#: NumPy's loops without their AVX-512 variants (names of NumPy 2.x and of NumPy 1.x)
PORTABLE_ARITHMETIC = {"OPENBLAS_CORETYPE": "Haswell",
                       "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512_SKX AVX512_CLX "
                                                   "AVX512_CNL AVX512_KNL AVX512_KNM"}


def _has_avx2_fma() -> bool:
    """Whether this is an x86-64 Linux machine whose CPU has AVX2 and FMA (what the Haswell
    kernels execute): elsewhere the kernels are left to the libraries' own choice."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {"avx2", "fma"} <= flags
    except OSError:
        pass
    return False


def _portable_arithmetic() -> None:
    """The same floating-point bytes on every x86-64 machine with AVX2, unless the user chose
    otherwise: OpenBLAS and NumPy pick their kernels by the CPU (AVX-512 where it exists), and
    two kernels sum in different orders, so a report made on one machine differed from another's
    in round-off digits (and a trained model's last digits).  Pinned to the AVX2 level, an
    AVX-512 machine reproduces an AVX2 machine's reports byte for byte (measured: the project's
    AMD EPYC machine, pinned, gives the committed reports of the earlier Intel one).  Must run
    before NumPy is imported.  ``ICLTHEORY_NATIVE_ARITHMETIC=1`` leaves the kernels to the
    libraries (≈ 5–10 % faster training on an AVX-512 machine, its own last digits)."""
    if os.environ.get("ICLTHEORY_NATIVE_ARITHMETIC") != "1" and _has_avx2_fma():
        for var, value in PORTABLE_ARITHMETIC.items():
            os.environ.setdefault(var, value)


#: glibc's malloc, as :func:`_keep_freed_memory` sets it: blocks up to 32 MiB (glibc's largest
#: mmap threshold) come from the heap, and up to 1 GiB of freed heap memory is kept for reuse
#: rather than returned to the system
MALLOC_MMAP_THRESHOLD = 32 * 1024 * 1024
MALLOC_TRIM_THRESHOLD = 1024 * 1024 * 1024  # (mallopt takes a C int)


def _keep_freed_memory() -> None:
    """Keep freed memory in the process for its next arrays, unless the user tuned glibc's
    malloc (``GLIBC_TUNABLES`` or ``MALLOC_*_`` set).  By default glibc maps every block above a
    threshold afresh and unmaps it when freed, and returns the heap's free top to the system: a
    NumPy temporary of a few MiB, made and freed at every step, is then new memory at every step,
    and touching new memory costs the kernel a page fault per 4 KiB — on some virtual machines
    ≈ 5 µs each (measured on the project's machine: ``linattn.softmax.drops`` spent 1.9 s of its
    5.4 s in the kernel, 0.1 s of 3.2 s with the memory kept).  The process's peak memory is
    unchanged (freed blocks are reused, not added to); the arithmetic is the same.  Linux with
    glibc only; elsewhere nothing is changed."""
    import platform

    if (platform.system() != "Linux" or platform.libc_ver()[0] != "glibc" or "GLIBC_TUNABLES" in os.environ
            or any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ)):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.mallopt(-3, MALLOC_MMAP_THRESHOLD)  # M_MMAP_THRESHOLD (also ends its dynamic raise)
        libc.mallopt(-1, MALLOC_TRIM_THRESHOLD)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # pragma: no cover - no mallopt in this C library
        pass


def entry() -> None:
    """The console script ``icltheory`` (and ``python -m icltheory``)."""
    try:  # (inside the try: a signal may arrive while the handler is being installed)
        # the handlers first: the set-up below imports (ctypes), and a Ctrl-C landing in an
        # import's lock clean-up must be recorded, not printed and dropped
        sys.unraisablehook = _on_unraisable
        try:
            signal.signal(signal.SIGINT, _on_first_interrupt)
        except (ValueError, OSError):  # pragma: no cover - not the main thread
            pass
        _one_blas_thread()
        _portable_arithmetic()
        _keep_freed_memory()
        code = main()
    except KeyboardInterrupt:  # raised before main's handlers were in place
        _say("icltheory: interrupted")
        code = EXIT_INTERRUPTED
    except RuntimeError as exc:
        # a Ctrl-C while a class body is being made (an import before the handler is in place:
        # ``platform``'s cached properties) reaches Python 3.11 wrapped, as the cause of a
        # RuntimeError from __set_name__
        if not isinstance(exc.__cause__, KeyboardInterrupt):
            raise
        _say("icltheory: interrupted")
        code = EXIT_INTERRUPTED
    try:  # the work is done: a late Ctrl-C changes nothing
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError, KeyboardInterrupt):  # pragma: no cover
        code = EXIT_INTERRUPTED
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):  # pragma: no cover
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    sys.exit(code)
