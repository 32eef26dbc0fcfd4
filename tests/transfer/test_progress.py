"""The transfer commands' progress display, on a clock the test moves: a plain line every
``every`` seconds when not a terminal, an activity bar that walks one step per update on a
terminal (at most ten updates a second), a bar that fills up with the percentage, rate and
time left when the total is known, and the final line."""

from __future__ import annotations

import io

import pytest

from memory_core.transfer import TransferReport
from memory_core.transfer import progress as progress_module
from memory_core.transfer.progress import BAR, Progress
from memory_core.transfer.progress import clock as as_clock


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", fake)
    return fake


def _report(messages: int, conversations: int) -> TransferReport:
    report = TransferReport()
    report.copy("conversation", conversations)
    report.copy("message", messages)
    return report


def test_a_plain_line_every_few_seconds_off_a_terminal(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out, tty=False, every=5.0)
    report = _report(1200, 3)
    clock.now += 4.9
    progress(report)
    assert out.getvalue() == ""  # not yet
    clock.now += 0.1
    progress(report)
    assert out.getvalue() == "1,200 messages, 3 conversations (240 messages/s)\n"
    clock.now += 1.0
    progress(report)  # within 5 s of the last line
    assert out.getvalue().count("\n") == 1
    clock.now += 5.0
    progress.done(report)
    assert (
        out.getvalue().splitlines()[-1] == "done: 1,200 messages, 3 conversations (109 messages/s)"
    )


def test_the_terminal_bar_walks_one_step_per_update(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out, tty=True, every=5.0)  # a terminal updates every 0.1 s
    report = _report(10, 1)
    frames = []
    for _ in range(BAR + 1):
        clock.now += 0.1
        progress(report)
        frames.append(out.getvalue().split("\r")[-1])
    bars = [frame[1 : 1 + BAR] for frame in frames]
    assert bars[0] == "." + "#" + "." * (BAR - 2)
    assert bars[BAR - 1] == "#" + "." * (BAR - 1)  # wrapped round
    assert bars[BAR] == bars[0]
    assert all(len(frame.split("]")[0]) == BAR + 1 for frame in frames)
    assert frames[0].endswith("] 10 of ? messages, 1 conversation, 100 messages/s")
    clock.now += 0.05
    progress(report)  # too soon for another frame
    assert out.getvalue().count("\r") == BAR + 1
    progress.done(report, label="copied")
    last = out.getvalue().split("\r")[-1]
    assert last.endswith("\n")  # over the longer bar line: padded with spaces
    assert last[:-1].rstrip(" ") == "copied: 10 messages, 1 conversation (5 messages/s)"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_stream_says_whether_it_is_a_terminal(clock: Clock) -> None:
    screen, log = _Terminal(), io.StringIO()
    for stream in (screen, log):
        progress = Progress(stream)
        clock.now += 6.0  # past both intervals
        progress(_report(3, 1))
        progress.done(_report(3, 1))
    assert screen.getvalue().startswith("\r[") and screen.getvalue().count("\r") == 2
    assert "\r" not in log.getvalue() and log.getvalue().startswith("3 messages")


def test_off_a_terminal_the_default_is_a_line_every_five_seconds(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out)
    clock.now += 4.9
    progress(_report(1, 1))
    assert out.getvalue() == ""
    clock.now += 0.2  # 5.1 s after the start
    progress(_report(2, 1))
    assert out.getvalue().startswith("2 messages, 1 conversation")


def test_with_a_total_the_terminal_bar_fills_with_percentage_rate_and_time_left(
    clock: Clock,
) -> None:
    screen = _Terminal()
    progress = Progress(screen, total=1000)  # the stream says it is a terminal
    clock.now += 2.0
    progress(_report(250, 2))
    frame = screen.getvalue().split("\r")[-1]
    assert frame == (
        "[#####...............] 250 of 1,000 messages (25%), 2 conversations, "
        "125 messages/s, ETA 0:06"
    )
    clock.now += 2.0
    progress(_report(1000, 5))
    frame = screen.getvalue().split("\r")[-1]
    assert frame.startswith("[" + "#" * BAR + "] 1,000 of 1,000 messages (100%)")
    assert frame.endswith("ETA 0:00")
    progress.done(_report(1000, 5), label="copied")
    last = screen.getvalue().split("\r")[-1]
    # the final line covers the longer bar line before it, then ends it
    assert last.endswith("\n") and len(last) - 1 >= len(frame)
    assert last[:-1].rstrip(" ") == (
        "copied: 1,000 of 1,000 messages, 5 conversations (250 messages/s)"
    )


def test_a_total_passed_is_shown_as_complete_never_beyond(clock: Clock) -> None:
    screen = _Terminal()
    progress = Progress(screen, total=10)
    clock.now += 1.0
    progress(_report(15, 1))  # the source grew after it was counted
    frame = screen.getvalue().split("\r")[-1]
    assert frame.startswith("[" + "#" * BAR + "] 15 of 10 messages (100%)")


def test_off_a_terminal_nothing_draws_a_bar(clock: Clock) -> None:
    log = io.StringIO()
    progress = Progress(log, total=100)
    for _ in range(3):
        clock.now += 5.0
        progress(_report(20, 1))
    progress.done(_report(20, 1))
    text = log.getvalue()
    assert "\r" not in text and "[" not in text and "#" not in text
    assert (
        text.splitlines()[0] == "20 of 100 messages (20%), 1 conversation, 4 messages/s, ETA 0:20"
    )
    assert len(text.splitlines()) == 4  # a line every five seconds, then the final one


def test_time_left_reads_as_a_clock() -> None:
    assert [as_clock(s) for s in (0, 6.4, 59.6, 61, 3599, 3600, 36_061)] == [
        "0:00",
        "0:06",
        "1:00",
        "1:01",
        "59:59",
        "1:00:00",
        "10:01:01",
    ]
