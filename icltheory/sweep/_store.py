"""The results store of a sweep: one JSON Lines file, appended one finished run at a time.

Why JSON Lines and not Parquet: a sweep must lose nothing when it is killed (SIGKILL included)
and must never hold a torn record.  A JSON Lines file is append-only: each finished run is one
line, written by a single ``write`` on a descriptor opened with ``O_APPEND`` and made durable
with ``fsync`` before the next run is recorded.  A kill can therefore leave at most one
incomplete line, at the very end, without its newline; opening the store for writing cuts that
tail off (and the run is computed again), and reading ignores it.  Parquet files are written
whole (a footer closes each file), so appending one row at a time would mean one file per run
or rewriting the file after every run; it would also make pyarrow a dependency, while the
records are nested JSON (settings, checks, evidence) that JSON Lines keeps as they are.  A
DataFrame is one call away (:func:`icltheory.sweep.load`).

Each record is ``{"format": 1, "key", "index", "claim", "cell", "seed", "result"}``, where
``key`` is a hash of the claim id and the complete setting (the run's identity; reading checks
it against ``result["setting"]``) and ``result`` is the verdict's JSON record, the same as
``icltheory check --json`` prints.  Only the process that drives the sweep writes; a lock file
keeps two sweeps from writing one store at once.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Iterator

from ..core import BadInput
from ..report import jsonable
from ._plan import cell_key

__all__ = ["Store", "read_records", "STORE_NAME", "FORMAT"]

STORE_NAME = "results.jsonl"
FORMAT = 1


def _encode(record: dict[str, Any]) -> bytes:
    text = json.dumps(jsonable(record), ensure_ascii=False, allow_nan=False,
                      separators=(",", ":"))
    return (text + "\n").encode("utf-8")


def _parse(path: Path, blob: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of ``blob`` and the length of its complete part (a torn last line, one
    without its newline, is not a record)."""
    end = blob.rfind(b"\n") + 1
    records = []
    for i, line in enumerate(blob[:end].split(b"\n")[:-1], start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise BadInput(f"{path}: line {i} is not a JSON record (the store was edited by "
                           "hand?); move the file away to start again") from None
        if not isinstance(rec, dict) or rec.get("format") != FORMAT or "result" not in rec:
            raise BadInput(f"{path}: line {i} is not a sweep record of format {FORMAT}")
        setting = rec["result"].get("setting", {}) if isinstance(rec["result"], dict) else {}
        if rec.get("key") != cell_key(str(rec.get("claim")), setting):
            raise BadInput(f"{path}: line {i}: the record's key does not match its setting")
        records.append(rec)
    return records, end


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every complete record of a store, once per key (the first kept), in file order."""
    p = Path(path)
    try:
        blob = p.read_bytes()
    except FileNotFoundError:
        return []
    records, _ = _parse(p, blob)
    seen: set[str] = set()
    out = []
    for r in records:
        if r["key"] not in seen:
            seen.add(r["key"])
            out.append(r)
    return out


class Store:
    """An open store (a context manager): the lock is held, a torn tail has been cut off,
    :attr:`records` maps key → record, and :meth:`append` adds one record durably."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.path = self.directory / STORE_NAME
        self._fd: int | None = None
        self._lock: int | None = None
        self.records: dict[str, dict[str, Any]] = {}
        self.repaired = 0  # bytes of a torn last line that were cut off

    def __enter__(self) -> "Store":
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise BadInput(f"cannot write the sweep's store in {str(self.directory)!r}: "
                           f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            self._lock = None
            raise BadInput(f"another sweep is writing {self.directory} (wait for it to end)") \
                from None
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        blob = _read_all(self._fd)
        records, end = _parse(self.path, blob)
        if end < len(blob):  # a torn last line (the writer was killed mid-write): drop it
            os.ftruncate(self._fd, end)
            os.fsync(self._fd)
            self.repaired = len(blob) - end
        for r in records:
            self.records.setdefault(r["key"], r)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            os.close(self._lock)
            self._lock = None

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line and fsync it (a record already stored is skipped)."""
        if self._fd is None:
            raise RuntimeError("the store is not open")
        if record["key"] in self.records:
            return
        data = _encode(record)
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)
        self.records[record["key"]] = json.loads(data)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records.values())


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks: list[bytes] = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
