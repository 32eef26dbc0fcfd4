"""Only memory-core's capability warnings are re-issued in the calling thread: another
library's warning raised on the portal thread stays there, where it was raised."""

from __future__ import annotations

import inspect
import threading
import warnings

from memory_core import Message
from memory_core.sync import open_backend


class OtherLibraryWarning(UserWarning):
    """A warning no part of memory-core raises."""


def test_another_librarys_warning_stays_on_the_portal_thread() -> None:
    raised_in: list[int] = []
    warn_line = 0

    async def summarizer(messages: list[Message]) -> str:
        nonlocal warn_line
        raised_in.append(threading.get_ident())
        warn_line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        warnings.warn("from another library", OtherLibraryWarning, stacklevel=1)
        return f"{len(messages)} messages"

    with open_backend("memory://") as memory, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        memory.add_message("s", "user", "hello")
        summary = memory.get_conversation_summary("s", summarizer=summarizer)
    assert summary.summary == "1 messages"
    assert raised_in and raised_in[0] != threading.get_ident()  # it ran on the portal
    others = [w for w in seen if issubclass(w.category, OtherLibraryWarning)]
    # once, where it was raised: not re-issued at this test's line
    assert [(w.filename, w.lineno) for w in others] == [(__file__, warn_line)]
