"""The progress display of the transfer commands: one updating line with a bar on a
terminal, a plain line every few seconds otherwise (logs, pipes).

With a total (the messages the source holds, counted before the copy where the source
can count cheaply) the terminal bar fills up and the line shows the percentage, the rate
and the time left; without one the bar only shows activity and the count reads "of ?".
"""

from __future__ import annotations

import time
from typing import TextIO

from ..archive.report import TransferReport, counted

BAR = 20


class Progress:
    """Call it with the report as records flow (``on_progress=``); :meth:`done` at the end.

    Counts are messages handled (copied or skipped) and the rate since the start.
    ``total``: the messages expected, or ``None`` when unknown (set it once known).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool | None = None,
        every: float = 5.0,
        total: int | None = None,
    ) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.every = 0.1 if self.tty else every
        self.total = total
        self.start = time.monotonic()
        self.last = self.start
        self.ticks = 0
        self.width = 0  # of the line the terminal shows now

    def line(self, report: TransferReport) -> str:
        """The counts, the rate and (with a total) how far along and how long to go."""
        elapsed = max(time.monotonic() - self.start, 1e-9)
        done = report.messages_done
        rate = done / elapsed
        conversations = counted(report.copied["conversation"], "conversation")
        if self.total is None:
            if self.tty:
                return f"{done:,} of ? messages, {conversations}, {rate:,.0f} messages/s"
            return f"{counted(done, 'message')}, {conversations} ({rate:,.0f} messages/s)"
        left = max(self.total - done, 0)
        eta = clock(left / rate) if rate > 0 else "?"
        return (
            f"{done:,} of {self.total:,} messages ({int(self.fraction(done) * 100)}%), "
            f"{conversations}, {rate:,.0f} messages/s, ETA {eta}"
        )

    def fraction(self, done: int) -> float:
        """How far along, 0 to 1 (1 when the total is 0 or was passed)."""
        if not self.total:
            return 1.0
        return min(done / self.total, 1.0)

    def bar(self, report: TransferReport) -> str:
        """The terminal bar: filled to the fraction done, or a walking mark without a total."""
        if self.total is None:
            self.ticks += 1
            spot = self.ticks % BAR
            return "." * spot + "#" + "." * (BAR - spot - 1)
        filled = int(self.fraction(report.messages_done) * BAR)
        return "#" * filled + "." * (BAR - filled)

    def __call__(self, report: TransferReport) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        if self.tty:
            self._overwrite(f"[{self.bar(report)}] {self.line(report)}")
        else:
            self.stream.write(self.line(report) + "\n")
        self.stream.flush()

    def done(self, report: TransferReport, label: str = "done") -> None:
        """The final count line (ends the terminal's updating line)."""
        text = f"{label}: {self.final(report)}"
        if self.tty:
            self._overwrite(text)
            self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _overwrite(self, text: str) -> None:
        """Write ``text`` over the terminal's line, padded with spaces over what is left of
        a longer line before it (no escape sequences: any terminal shows it)."""
        self.stream.write("\r" + text.ljust(self.width))
        self.width = len(text)

    def final(self, report: TransferReport) -> str:
        """The last line: the counts (of the total, when known) and the average rate."""
        elapsed = max(time.monotonic() - self.start, 1e-9)
        done = report.messages_done
        conversations = counted(report.copied["conversation"], "conversation")
        handled = (
            counted(done, "message")
            if self.total is None
            else f"{done:,} of {self.total:,} messages"
        )
        return f"{handled}, {conversations} ({done / elapsed:,.0f} messages/s)"


def clock(seconds: float) -> str:
    """A duration as ``M:SS``, or ``H:MM:SS`` from an hour."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
