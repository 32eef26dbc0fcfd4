"""Reading and writing archive files: JSON Lines, gzip when the name ends in ``.gz``."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from .errors import ArchiveError
from .records import Record, check_record

PathLike = str | os.PathLike[str]


def open_text(path: PathLike, mode: str) -> IO[str]:
    """``path`` opened as UTF-8 text; gzip-compressed when its name ends in ``.gz``."""
    target = Path(path)
    if target.suffix == ".gz":
        raw = gzip.GzipFile(target, mode + "b")
        return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    return open(target, mode, encoding="utf-8", newline="\n")


def dump_line(record: Record) -> str:
    """One record as one line of JSON (no spaces, non-ASCII kept, ending in ``\\n``)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


class BadLines:
    """Lines skipped by ``skip_bad``: how many, and the first few errors."""

    KEEP = 20

    def __init__(self) -> None:
        self.count = 0
        self.errors: list[str] = []

    def add(self, error: ArchiveError) -> None:
        self.count += 1
        if len(self.errors) < self.KEEP:
            self.errors.append(str(error))


def read_records(
    lines: Iterable[str], *, skip_bad: bool = False, bad: BadLines | None = None
) -> Iterator[tuple[int, Record]]:
    """``(line number, record)`` for every line; the first record must be the header.

    A line that is not a valid record raises :class:`ArchiveError` with its number, or,
    with ``skip_bad``, is counted in ``bad`` and skipped (a bad header always raises).
    """
    seen_header = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = _parse(line, number)
            if not seen_header and (not isinstance(value, dict) or value.get("record") != "header"):
                raise ArchiveError("the archive does not start with a header record", line=number)
            record = check_record(value, number)
        except ArchiveError as exc:
            if not skip_bad or not seen_header:
                raise
            if bad is not None:
                bad.add(exc)
            continue
        if record["record"] == "header":
            if seen_header:
                second = ArchiveError("a second header record", line=number)
                if not skip_bad:
                    raise second
                if bad is not None:
                    bad.add(second)
                continue
            seen_header = True
        yield number, record
    if not seen_header:
        raise ArchiveError("the archive is empty (no header record)", line=None)


def _parse(line: str, number: int) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise ArchiveError(f"not JSON ({exc.args[0] if exc.args else exc})", line=number) from None
