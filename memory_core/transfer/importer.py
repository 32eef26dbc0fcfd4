"""Writing archive records into a backend (:func:`import_memory`, :func:`write_records`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import IO, Any

from ..archive.errors import ArchiveError
from ..archive.files import BadLines, PathLike, open_archive, read_records
from ..archive.hooks import ALL_KINDS, BulkTransfer, ImportState, OnConflict, carried_kinds
from ..archive.records import REASONING, Record
from ..archive.report import TransferReport
from ..backend import MemoryBackend
from ..errors import InvalidRequestError
from ..limits import Limits
from ..validation import check_int
from .export import FLAGS, HOOK_LACKS, unlisted
from .public_writer import PublicWriter

ON_CONFLICT: tuple[OnConflict, ...] = ("skip", "overwrite", "new-ids")
HOOK_BATCH = 1000

Numbered = tuple[int | None, Record]


def check_on_conflict(value: Any) -> OnConflict:
    """``on_conflict`` checked: one of ``skip``, ``overwrite``, ``new-ids``."""
    for mode in ON_CONFLICT:
        if value == mode:
            return mode
    raise InvalidRequestError(
        f"{value!r} is not one of {', '.join(ON_CONFLICT)}", argument="on_conflict"
    )


async def import_memory(
    backend: MemoryBackend,
    source: PathLike | IO[str] | IO[bytes] | Iterable[str],
    *,
    on_conflict: OnConflict = "skip",
    skip_bad: bool = False,
    checkpoint: PathLike | None = None,
    on_progress: Callable[[TransferReport], None] | None = None,
    max_line_bytes: int | None = None,
) -> TransferReport:
    """Load a JSON Lines archive (a path — gzip when it ends in ``.gz`` — an open text
    or binary stream, or lines) into ``backend`` and report what was copied, skipped, not
    carried.

    ``on_conflict``: ``"skip"`` (default) leaves what the target already has (same ids;
    through the public API: a session that already has messages) and adds the rest, so
    re-running an interrupted import completes it; ``"overwrite"`` replaces a
    conversation the target already has with the archive's; ``"new-ids"`` lets the target
    issue new ids and appends to sessions that exist.

    Backends with a bulk hook (embedded, Bolt) keep ids, sequence numbers and timestamps
    and need no checkpoint. Other targets are written through the public API; give
    ``checkpoint`` (a file path) to make a re-run resume where the last one stopped.

    Every record is checked as the public API checks its arguments, against the
    target's limits, before anything of it is written. A line that is not a valid record
    (not UTF-8, not JSON, a missing or mistyped field, a value over a limit, longer than
    ``max_line_bytes`` — default :func:`~memory_core.archive.files.max_line_bytes` of
    the target's limits, and never read whole) raises
    :class:`~memory_core.transfer.ArchiveError` with its line number, after the lines
    before it are written; with ``skip_bad=True`` it is counted and skipped. A cut-short
    ``.gz`` ends the archive there (an error, or with ``skip_bad`` a counted bad line).

    In a multi-tenant target a record only ever touches the tenant it names: an id that
    another tenant holds is never written over, deleted or linked to (the record gets an
    id of its own tenant), and a conversation keeps a derived (version-5) id only when it
    is its own session's (else it takes the target's own id of its tenant and session).
    """
    mode = check_on_conflict(on_conflict)
    bound = (
        None if max_line_bytes is None else check_int(max_line_bytes, "max_line_bytes", minimum=1)
    )
    report = TransferReport(on_progress=on_progress)
    report.started()
    bad = BadLines()
    limits = backend.limits
    try:
        if isinstance(source, str | bytes) or hasattr(source, "__fspath__"):
            with open_archive(source) as stream:  # type: ignore[arg-type]
                records = _numbered(stream, skip_bad, bad, limits, bound)
                await write_records(backend, records, mode, report, checkpoint, skip_bad, bad)
        else:
            records = _numbered(source, skip_bad, bad, limits, bound)
            await write_records(backend, records, mode, report, checkpoint, skip_bad, bad)
    finally:
        report.bad_lines = bad.count
        report.bad_line_errors = bad.errors
    return report


async def _numbered(
    lines: Any, skip_bad: bool, bad: BadLines, limits: Limits, bound: int | None
) -> AsyncIterator[Numbered]:
    for number, record in read_records(
        lines, skip_bad=skip_bad, bad=bad, limits=limits, max_bytes=bound
    ):
        yield number, record


class _References:
    """Checks that records only refer to what came before them (archive order), and that
    no message has more mentions than the target takes (``max_mentions``)."""

    def __init__(self, max_mentions: int) -> None:
        self.conversations: set[str] = set()
        self.entities: set[str] = set()
        self.current: str | None = None  # the last conversation: messages follow theirs
        self.messages: set[str] = set()  # of the current conversation only
        self.max_mentions = max_mentions
        self.mentions: dict[str, int] = {}  # per message of the current conversation
        self.trace: str | None = None  # the last trace: its steps follow it
        self.step: str | None = None  # the last step of that trace: its tool calls follow it

    def check(self, record: Record, line: int | None) -> None:
        kind = record["record"]
        if kind == "conversation":
            self.conversations.add(record["id"])
            self.current, self.messages, self.mentions = record["id"], set(), {}
        elif kind == "entity":
            self.entities.add(record["id"])
        elif kind == "message":
            if record["conversation_id"] not in self.conversations:
                raise ArchiveError(
                    f"message {record['id']} comes before its conversation", line=line
                )
            if record["conversation_id"] != self.current:
                raise ArchiveError(
                    f"message {record['id']} does not follow its conversation (another "
                    "conversation comes between them)",
                    line=line,
                )
            self.messages.add(record["id"])
        elif kind in ("preference", "relationship"):
            self._linked(record, line)
        elif kind in REASONING:
            self._reasoning(record, line)
        elif kind == "mention":
            if record["message_id"] not in self.messages:
                raise ArchiveError(
                    f"mention of message {record['message_id']} does not follow it", line=line
                )
            if record["entity_id"] not in self.entities:
                raise ArchiveError(
                    f"mention of entity {record['entity_id']} comes before the entity", line=line
                )
            count = self.mentions.get(record["message_id"], 0)
            if count >= self.max_mentions:
                raise ArchiveError(
                    f"message {record['message_id']} has more than {self.max_mentions} "
                    "mentions (the target's max_mentions)",
                    line=line,
                )
            self.mentions[record["message_id"]] = count + 1

    def _reasoning(self, record: Record, line: int | None) -> None:
        """A trace's steps follow it, and a step's tool calls follow the step."""
        kind = record["record"]
        if kind == "trace":
            self.trace, self.step = record["id"], None
        elif kind == "step":
            if record["trace_id"] != self.trace:
                raise ArchiveError(
                    f"step {record['id']} does not follow its trace {record['trace_id']}",
                    line=line,
                )
            self.step = record["id"]
        elif record["step_id"] != self.step:
            raise ArchiveError(
                f"tool call {record['id']} does not follow its step {record['step_id']}",
                line=line,
            )

    def _linked(self, record: Record, line: int | None) -> None:
        """A preference's linked entities and a relationship's ends come before it."""
        kind = record["record"]
        ends = (
            record["linked_entities"]
            if kind == "preference"
            else [record["source_id"], record["target_id"]]
        )
        for entity_id in ends:
            if entity_id not in self.entities:
                raise ArchiveError(
                    f"{kind} {record['id']} names entity {entity_id} before the entity",
                    line=line,
                )


async def write_records(
    backend: MemoryBackend,
    records: AsyncIterable[Numbered],
    mode: OnConflict,
    report: TransferReport,
    checkpoint: PathLike | None = None,
    skip_bad: bool = False,
    bad: BadLines | None = None,
) -> None:
    """Write a stream of ``(line number, record)`` into ``backend`` (see
    :func:`import_memory`)."""
    await backend.connect()
    hook = backend.store.bulk_transfer() if mode != "new-ids" else None
    carried = carried_kinds(hook) if hook is not None else ALL_KINDS
    state = ImportState(mode, report)
    writer: _HookWriter | PublicWriter
    writer = (
        _HookWriter(hook, state) if hook is not None else PublicWriter(backend, state, checkpoint)
    )
    references = _References(backend.limits.max_mentions)
    ended = False
    try:
        try:
            async for line, record in records:
                kind = record["record"]
                if kind == "header":
                    _note_omitted(record, report)
                    continue
                if kind == "end":
                    ended = True
                    continue
                try:
                    references.check(record, line)
                except ArchiveError as exc:
                    if not skip_bad:
                        raise
                    if bad is None:
                        report.bad_lines += 1
                    else:
                        bad.add(exc)
                    continue
                if kind in FLAGS and not backend.capabilities.supports(FLAGS[kind]):
                    report.skip(kind, no_flag(backend, kind))
                    continue
                if kind not in carried:
                    report.skip(kind, HOOK_LACKS.format(name=backend.name))
                    continue
                await writer.add(record)
        except ArchiveError:
            # What came before the bad line is written, nothing after it.
            await writer.finish()
            raise
        await writer.finish()
    finally:
        writer.close()
    if not ended:
        report.unreadable.append("the archive has no end record: it may have been cut short")


UNHANDLED = "the target's bulk transfer did not write them"


def no_flag(backend: MemoryBackend, kind: str) -> str:
    """Why a record of ``kind`` is skipped: the target lacks the flag for it."""
    kinds = kind.replace("_", " ") + "s"
    return f"{backend.name} stores no {kinds} (capability {FLAGS[kind]!r} is False)"


def _note_omitted(header: Record, report: TransferReport) -> None:
    """The long-term kinds the archive's source held but could not export, in the report."""
    omitted = {item["kind"]: item["reason"] for item in header.get("not_exported", ())}
    for line in unlisted(omitted):
        if line not in report.unreadable:
            report.unreadable.append(line)


class _HookWriter:
    """Hands records to the backend's bulk hook in batches (one transaction each)."""

    def __init__(self, hook: BulkTransfer, state: ImportState) -> None:
        self.hook = hook
        self.state = state
        self.batch: list[Record] = []

    async def add(self, record: Record) -> None:
        self.batch.append(record)
        if len(self.batch) >= HOOK_BATCH:
            await self.finish()

    async def finish(self) -> None:
        batch, self.batch = self.batch, []
        if not batch:
            return
        handed = Counter(r["record"] for r in batch if r["record"] in FLAGS)
        before = {kind: self._handled(kind) for kind in handed}
        await self.hook.import_records(batch, self.state)
        for kind, count in handed.items():
            # A hook counts each of these once, copied or skipped: one that lets some
            # pass unseen (it predates the kind) does not drop them silently.
            missing = count - (self._handled(kind) - before[kind])
            if missing > 0:
                self.state.report.skip(kind, UNHANDLED, missing)

    def _handled(self, kind: str) -> int:
        report = self.state.report
        skipped = sum(n for (name, _), n in report.skipped.items() if name == kind)
        return report.copied[kind] + skipped

    def close(self) -> None:
        pass
