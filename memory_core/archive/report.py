"""What a transfer did: counts of records copied, skipped and not carried, with reasons."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KIND_ORDER = (
    "conversation",
    "message",
    "entity",
    "mention",
    "relationship",
    "preference",
    "fact",
    "trace",
    "step",
    "tool_call",
)


def counted(count: int, kind: str) -> str:
    """``1 entity``, ``2 entities``, ``1,200 messages``, ``3 tool calls``."""
    kind = kind.replace("_", " ")
    if count == 1:
        return f"1 {kind}"
    return f"{count:,} {kind[:-1]}ies" if kind.endswith("y") else f"{count:,} {kind}s"


@dataclass
class TransferReport:
    """The outcome of :func:`~memory_core.transfer.export_memory`,
    :func:`~memory_core.transfer.import_memory` or :func:`~memory_core.transfer.copy_memory`.

    ``copied[kind]`` counts records written (exported, for an export). ``skipped[(kind,
    reason)]`` counts records left out on purpose (already in the target, …).
    ``not_carried[(field, reason)]`` counts values the target (or source) cannot hold, per
    field — e.g. ``("message.metadata", "nams stores no message metadata")``.
    ``truncated`` lists conversations of which only the newest messages could be read.
    """

    copied: Counter[str] = field(default_factory=Counter)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    not_carried: Counter[tuple[str, str]] = field(default_factory=Counter)
    truncated: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    bad_lines: int = 0
    bad_line_errors: list[str] = field(default_factory=list)
    on_progress: Callable[[TransferReport], None] | None = field(default=None, repr=False)

    def started(self) -> None:
        """Hand the report to ``on_progress`` once before anything is done, so that the
        caller holds it (and can say what was done if the transfer is interrupted)."""
        if self.on_progress is not None:
            self.on_progress(self)

    def copy(self, kind: str, count: int = 1) -> None:
        self.copied[kind] += count
        if self.on_progress is not None and kind == "message":
            self.on_progress(self)

    def skip(self, kind: str, reason: str, count: int = 1) -> None:
        self.skipped[(kind, reason)] += count

    def lose(self, name: str, reason: str, count: int = 1) -> None:
        """``count`` values of ``name`` (``kind.field``) could not be carried."""
        self.not_carried[(name, reason)] += count

    def merge(self, other: TransferReport) -> None:
        """Add the counts of ``other`` (a batch's tally) to this report."""
        self.skipped.update(other.skipped)
        self.not_carried.update(other.not_carried)
        for kind, n in other.copied.items():
            self.copy(kind, n)

    @property
    def messages_done(self) -> int:
        """Messages copied plus skipped (progress)."""
        return self.copied["message"] + sum(
            n for (kind, _), n in self.skipped.items() if kind == "message"
        )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (for ``--json`` and logs)."""
        return {
            "copied": dict(self.copied),
            "skipped": [{"kind": k, "reason": r, "count": n} for (k, r), n in self.skipped.items()],
            "not_carried": [
                {"field": f, "reason": r, "count": n} for (f, r), n in self.not_carried.items()
            ],
            "truncated": self.truncated,
            "unreadable": self.unreadable,
            "bad_lines": self.bad_lines,
            "bad_line_errors": self.bad_line_errors,
        }

    def summary(self) -> str:
        """A human summary: copied, skipped, not carried (each with its reason)."""
        kinds = [k for k in KIND_ORDER if self.copied[k]] + sorted(
            k for k in self.copied if k not in KIND_ORDER
        )
        copied = ", ".join(counted(self.copied[k], k) for k in kinds) or "nothing"
        lines = [f"copied: {copied}"]
        for (kind, reason), n in sorted(self.skipped.items()):
            lines.append(f"skipped: {counted(n, kind)} ({reason})")
        for (name, reason), n in sorted(self.not_carried.items()):
            lines.append(f"not carried: {n} x {name} ({reason})")
        for item in self.truncated:
            lines.append(
                f"truncated: conversation {item['session_id']!r} — only the newest "
                f"{item['exported']} messages could be read"
            )
        for what in self.unreadable:
            lines.append(f"not readable: {what}")
        if self.bad_lines:
            lines.append(f"bad lines skipped: {self.bad_lines}")
            lines.extend(f"  {e}" for e in self.bad_line_errors)
        return "\n".join(lines)
