"""Backend to backend without a file in between (:func:`copy_memory`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from ..archive.files import PathLike
from ..archive.hooks import OnConflict
from ..archive.records import check_record
from ..archive.report import TransferReport
from ..backend import MemoryBackend
from .export import iter_records
from .importer import Numbered, check_on_conflict, write_records


async def copy_memory(
    source: MemoryBackend,
    target: MemoryBackend,
    *,
    users: list[str] | None = None,
    session_prefix: str | None = None,
    on_conflict: OnConflict = "skip",
    checkpoint: PathLike | None = None,
    on_progress: Callable[[TransferReport], None] | None = None,
) -> TransferReport:
    """Stream the memory of ``source`` into ``target``: :func:`export_memory` piped into
    :func:`import_memory`, with bounded memory. Re-running an interrupted copy (same
    arguments, same ``checkpoint`` for targets without a bulk hook) completes it with
    exactly one copy of every message. The report also lists what the source could not
    read (truncated conversations, unlisted entities). Every record is checked against the
    target's limits before it is written, as an import checks an archive's (a record the
    target cannot take stops the copy with an :class:`~memory_core.transfer.ArchiveError`
    saying which)."""
    mode = check_on_conflict(on_conflict)
    read = TransferReport()
    report = TransferReport(on_progress=on_progress)
    report.started()

    limits = target.limits

    async def numbered() -> AsyncIterator[Numbered]:
        async for record in iter_records(
            source, users=users, session_prefix=session_prefix, report=read
        ):
            yield None, check_record(record, None, limits)

    await write_records(target, numbered(), mode, report, checkpoint)
    report.truncated.extend(read.truncated)
    report.unreadable.extend(line for line in read.unreadable if line not in report.unreadable)
    return report
