"""The report folder: report sets are complete or absent.

A commit (:func:`commit`) writes every new file — each claim's figures, Markdown and JSON
sidecar, the index and the timing file — into a staging folder ``.staging-<pid>-<token>``
inside the report folder, then writes the staging folder's ``JOURNAL.json`` (the list of moves
and deletions; written last and atomically: it is the commit point), then moves the files into
place (a claim's sidecar after its figures and Markdown, the index and timing file last) and
removes the staging folder.  All of it happens under an exclusive ``flock`` on the report
folder, so a staging folder seen by a process holding the lock was left by a killed run.

:func:`recover` (run by the next ``report``, under the lock) finishes a committed journal and
discards an uncommitted staging folder and stray temporary files.  After a kill at any
point, every file in place is a whole file, and after :func:`recover` every claim's set is
complete (its sidecar's hashes match its files) or absent; :func:`verify` checks exactly that.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ..core import BadInput
from ._render import ClaimReport, html_name, markdown_name, sha256, sidecar_name

__all__ = ["commit", "recover", "verify", "check_out_dir", "check_targets", "read_records", "TIMING_JSON",
           "INDEX", "INDEX_HTML"]

STAGING_PREFIX = ".staging-"
JOURNAL = "JOURNAL.json"
INDEX = "index.md"
INDEX_HTML = "index.html"
TIMING_JSON = "timing.json"
TIMING_MD = "timing.md"
#: files of the report folder that are not claim reports
RESERVED = {INDEX, INDEX_HTML, TIMING_JSON, TIMING_MD}


# ----------------------------------------------------------------------------- validation


#: bytes written (and discarded) into the report folder before anything runs: a disk too full
#: for this is too full for a report set (a claim's report with its figures is about this size)
PROBE_BYTES = 1 << 20
#: the longest file name a report set writes inside its folder (``figures/`` + claim id + suffix)
LONGEST_NAME = 160


def _check_name_lengths(out: Path, probe: Path, text: str) -> None:
    """Every folder to be made fits the file system's name limit, and the longest report file
    name fits its path limit."""
    try:
        name_max = os.pathconf(probe, "PC_NAME_MAX")
        path_max = os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    for part in out.parts:
        if len(os.fsencode(part)) > name_max:
            raise BadInput(f"--out {text[:120]!r}: a folder name is longer than the file "
                           f"system's {name_max} bytes")
    if len(os.fsencode(str(out.absolute()))) + LONGEST_NAME > path_max:
        raise BadInput(f"--out {text[:120]!r}: the path is too long for the report files "
                       f"(the file system allows {path_max} bytes)")


def check_out_dir(out_dir: str | os.PathLike[str]) -> Path:
    """Validate a report folder before anything runs: it is a folder (or can be made one) and
    writable.  Raises :class:`BadInput` (one line) otherwise; writes nothing."""
    out = Path(out_dir)
    text = str(out_dir)
    if not text.strip() or "\x00" in text:
        raise BadInput(f"--out {text[:60]!r}: not a usable folder name")
    probe = out
    while True:
        try:
            if probe.exists() or probe.is_symlink():
                break
        except OSError as exc:  # e.g. a name too long for the file system
            raise BadInput(f"--out {text[:120]!r}: {exc.strerror or exc}") from None
        if probe.parent == probe:
            break
        probe = probe.parent
    try:
        if probe.exists() and not probe.is_dir():
            which = "exists and is not a folder" if probe == out else \
                f"cannot be made: {str(probe)!r} is not a folder"
            raise BadInput(f"--out {text[:120]!r} {which}")
        if not probe.exists():
            raise BadInput(f"--out {text[:120]!r} cannot be made (a dangling link in its path)")
        if not os.access(probe, os.W_OK | os.X_OK):
            where = "" if probe == out else f" (its parent {str(probe)!r} is not writable)"
            raise BadInput(f"--out {text[:120]!r} is not writable{where}")
        _check_name_lengths(out, probe, text)
        try:  # an unnamed temporary file: proves the folder takes data, leaves nothing
            with tempfile.TemporaryFile(dir=probe) as fh:
                fh.write(b"\0" * PROBE_BYTES)  # a full disk refuses this now, not after the run
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            where = "" if probe == out else f" (in {str(probe)!r})"
            raise BadInput(f"--out {text[:120]!r}: cannot write files there{where}: "
                           f"{exc.strerror or exc}") from None
        if probe == out:
            for name in (*RESERVED, "figures"):
                p = out / name
                if name == "figures":
                    if p.exists() and not p.is_dir():
                        raise BadInput(f"--out {text[:120]!r}: {str(p)!r} is not a folder")
                elif p.is_dir():
                    raise BadInput(f"--out {text[:120]!r}: {str(p)!r} is a folder")
    except OSError as exc:  # e.g. a name too long for the file system
        raise BadInput(f"--out {text[:120]!r}: {exc.strerror or exc}") from None
    return out


# ----------------------------------------------------------------------------- locking


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    out.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: one writer at a time is assumed
        yield
        return
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


# ----------------------------------------------------------------------------- writing


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse
        pass
    finally:
        os.close(fd)


def _write_file(path: Path, blob: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(blob)
        fh.flush()
        os.fsync(fh.fileno())


def _apply(out: Path, staging: Path, journal: dict) -> None:
    """Carry out a committed journal (idempotent: a file already moved is skipped)."""
    for rel in journal.get("moves", []):
        src = staging / rel
        if src.exists():
            dst = out / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
    for rel in journal.get("delete", []):
        with contextlib.suppress(FileNotFoundError):
            (out / rel).unlink()
    _fsync_dir(out)
    shutil.rmtree(staging, ignore_errors=True)


def _safe_rel(rel: str) -> bool:
    p = Path(rel)
    return not p.is_absolute() and ".." not in p.parts and bool(p.parts)


def _recover_locked(out: Path) -> list[str]:
    done: list[str] = []
    if not out.is_dir():
        return done
    for staging in sorted(out.glob(STAGING_PREFIX + "*")):
        if not staging.is_dir():
            continue
        journal = None
        try:
            journal = json.loads((staging / JOURNAL).read_text(encoding="utf-8"))
            if not all(_safe_rel(r) for r in journal.get("moves", []) + journal.get("delete", [])):
                journal = None
        except (OSError, ValueError, AttributeError, TypeError):
            journal = None
        if journal is None:
            shutil.rmtree(staging, ignore_errors=True)
            done.append(f"discarded the unfinished {staging.name}")
        else:
            _apply(out, staging, journal)
            done.append(f"finished the committed {staging.name}")
    for folder in (out, out / "figures"):
        if folder.is_dir():
            for tmp in folder.glob(".*.tmp"):  # atomic_write's temporary files
                with contextlib.suppress(OSError):
                    tmp.unlink()
                    done.append(f"removed {tmp.name}")
    return done


def recover(out_dir: str | os.PathLike[str]) -> list[str]:
    """Finish or discard what a killed ``report`` left in ``out_dir``; returns what was done
    (one line each).  Safe to call at any time: it waits for a running commit."""
    out = Path(out_dir)
    if not out.is_dir():
        return []
    with _locked(out):
        return _recover_locked(out)


def read_records(out: Path) -> dict[str, dict]:
    """The JSON sidecars in ``out`` (claim id → record); unreadable ones map to ``{}``.  A
    readable JSON file that names a claim other than its own file name is not a claim's report
    (e.g. ``refute-<claim>.json``, ``boundary-<claim>-<key>.json``, written beside the reports)
    and is left out."""
    records: dict[str, dict] = {}
    if not out.is_dir():
        return records
    for side in sorted(out.glob("*.json")):
        if side.name in RESERVED:
            continue
        stem = side.name[: -len(".json")]
        try:
            data = json.loads(side.read_text(encoding="utf-8"))
            cid = data["claim"] if isinstance(data, dict) else None
        except (OSError, ValueError, KeyError, TypeError):
            data, cid = {}, None
        if isinstance(cid, str) and cid != stem:
            continue
        records[stem] = data if isinstance(data, dict) else {}
    return records


def _old_figures(out: Path, claim_id: str) -> list[str]:
    pat = re.compile(re.escape(claim_id) + r"-[0-9]+\.png")
    folder = out / "figures"
    if not folder.is_dir():
        return []
    return sorted(f"figures/{p.name}" for p in folder.iterdir() if pat.fullmatch(p.name))


def _check_target(out: Path, rel: str) -> None:
    """Raise :class:`BadInput` (one line) when ``out / rel`` cannot be written as a file: the
    name, or a folder on its way, is taken by something else (a folder, a file)."""
    target = out / rel
    for parent in reversed(Path(rel).parents[:-1]):
        if (out / parent).exists() and not (out / parent).is_dir():
            raise BadInput(f"{out / parent} is not a folder: the report's {rel} cannot be written there")
    if (target.exists() or target.is_symlink()) and not target.is_file():
        raise BadInput(f"{target} exists and is not a file: the report cannot replace it")


def check_targets(out_dir: str | os.PathLike[str], claim_ids: Iterable[str]) -> None:
    """:func:`_check_target` for every claim's report files in ``out_dir``: before any check runs."""
    for cid in claim_ids:
        for name in (sidecar_name(cid), markdown_name(cid), html_name(cid)):
            _check_target(Path(out_dir), name)


def commit(reports: Sequence[ClaimReport], out_dir: str | os.PathLike[str], *,
           known: Iterable[tuple[str, str]] | None = None, html: bool = False) -> list[Path]:
    """Put ``reports`` into ``out_dir`` together with the refreshed index and timing file
    (see the module docstring for the protocol).  ``known``: the registered claims (id,
    title), listed in the index as "not run" when the folder has no report of them;
    ``html``: write ``index.html`` too (it is also refreshed whenever the folder has one).
    A claim's HTML page from an earlier run is removed when its new set has none, so no page
    is ever stale.  Returns the paths written."""
    from ._index import render_index, render_index_html, render_timing

    out = Path(out_dir)
    with _locked(out):
        _recover_locked(out)
        records = read_records(out)
        files: dict[str, bytes] = {}
        delete: list[str] = []
        for r in reports:
            new = set(r.files)
            delete += [f for f in _old_figures(out, r.claim) if f not in new]
            if html_name(r.claim) not in new and (out / html_name(r.claim)).is_file():
                delete.append(html_name(r.claim))
            side = sidecar_name(r.claim)
            for rel in sorted(r.files, key=lambda f: (f == side, f == markdown_name(r.claim), f)):
                files[rel] = r.files[rel]
            records[r.claim] = json.loads(r.files[side].decode("utf-8"))
        timing = _read_timing(out)
        for r in reports:
            timing[r.claim] = {"runtime_s": round(float(r.runtime_s), 4), "profile": r.profile}
        files[TIMING_JSON] = (json.dumps({"runtime_s": dict(sorted(timing.items()))}, indent=2,
                                         ensure_ascii=False) + "\n").encode("utf-8")
        files[TIMING_MD] = render_timing(timing, records).encode("utf-8")
        files[INDEX] = render_index(records, known, out).encode("utf-8")
        if html or (out / INDEX_HTML).is_file():
            files[INDEX_HTML] = render_index_html(records, known, out).encode("utf-8")
        # a target taken since the run began is refused before anything is staged: nothing written
        for rel in files:
            _check_target(out, rel)
        staging = out / f"{STAGING_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        staging.mkdir()
        try:
            for rel, blob in files.items():
                _write_file(staging / rel, blob)
            journal = {"moves": list(files), "delete": sorted(set(delete))}
            tmp = staging / (JOURNAL + ".tmp")
            _write_file(tmp, json.dumps(journal).encode("utf-8"))
            os.replace(tmp, staging / JOURNAL)  # the commit point
            _fsync_dir(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _apply(out, staging, journal)
    return [out / rel for rel in files]


def _read_timing(out: Path) -> dict[str, dict]:
    try:
        data = json.loads((out / TIMING_JSON).read_text(encoding="utf-8"))
        table = data.get("runtime_s", {})
        return {str(k): dict(v) for k, v in table.items() if isinstance(v, dict)}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


# ----------------------------------------------------------------------------- checking


def verify(out_dir: str | os.PathLike[str]) -> list[str]:
    """Problems of a report folder, one line each (empty: every set is complete).

    A set is complete when its JSON sidecar parses and every file its ``report.files`` lists
    exists with that SHA-256; Markdown or figures that no sidecar lists are orphans; staging
    folders and temporary files are leftovers of a killed run (see :func:`recover`)."""
    out = Path(out_dir)
    problems: list[str] = []
    if not out.is_dir():
        return problems
    listed: set[str] = set()
    for cid, data in read_records(out).items():
        files = (data.get("report") or {}).get("files") if data else None
        if not isinstance(files, dict):
            problems.append(f"{cid}: sidecar without a file manifest (unreadable or old format)")
            continue
        listed.add(sidecar_name(cid))
        for rel, digest in files.items():
            listed.add(rel)
            p = out / rel
            if not p.is_file():
                problems.append(f"{cid}: {rel} is missing")
            elif sha256(p.read_bytes()) != digest:
                problems.append(f"{cid}: {rel} does not match its sidecar")
    for p in sorted([*out.glob("*.md"), *out.glob("*.html")]):
        if p.name not in RESERVED and p.name not in listed:
            problems.append(f"{p.name}: no sidecar lists it")
    if (out / "figures").is_dir():
        for p in sorted((out / "figures").iterdir()):
            rel = f"figures/{p.name}"
            if rel not in listed:
                problems.append(f"{rel}: no sidecar lists it")
    for p in sorted(out.glob(STAGING_PREFIX + "*")):
        state = "committed" if (p / JOURNAL).exists() else "uncommitted"
        problems.append(f"{p.name}: {state} staging folder of a killed run")
    for folder in (out, out / "figures"):
        if folder.is_dir():
            problems += [f"{t.name}: temporary file" for t in sorted(folder.glob(".*.tmp"))]
    return problems

