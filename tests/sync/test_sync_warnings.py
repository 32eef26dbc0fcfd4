"""The blocking facade leaves :mod:`warnings` alone: after any blocking call
``warnings.warn`` is still the standard library's own function, and the backend's
capability warnings still reach the caller, pointing at the caller's line.

``WARN_AT_IMPORT`` is ``warnings.warn`` as it was when this module was imported (other
modules of the run may have imported :mod:`memory_core.sync` before; the fresh-interpreter
test takes it before that import)."""

from __future__ import annotations

import _warnings
import inspect
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from warnings import warn as WARN_AT_IMPORT

import pytest

from memory_core import CapabilityWarning, warning_channel
from memory_core.sync import open_backend

ROOT = Path(__file__).resolve().parents[2]


def _assert_standard_warn() -> None:
    assert warnings.warn is WARN_AT_IMPORT
    # CPython's warnings.warn is the C function of _warnings, whose __module__ says so
    # (a replacement that wraps it would not be it, whatever its __wrapped__ or name).
    assert warnings.warn is _warnings.warn
    assert warnings.warn.__module__ == "_warnings"


def test_warnings_warn_is_the_standard_one_after_blocking_calls() -> None:
    _assert_standard_warn()
    with open_backend("memory://") as memory:
        memory.add_message("s", "user", "hello")
        memory.get_conversation("s", limit=5)
        with pytest.warns(CapabilityWarning, match="user_identifier") as record:
            line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
            memory.find_entities("x", user_identifier="someone")  # entities are shared
        _assert_standard_warn()
        [warning] = [w for w in record if issubclass(w.category, CapabilityWarning)]
        assert (warning.filename, warning.lineno) == (__file__, line)
        memory.search_messages("hello", session_id="s")
    _assert_standard_warn()


def test_a_warning_is_reissued_in_the_calling_thread_once_per_drop() -> None:
    with open_backend("memory://") as memory, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        memory.find_entities("x", user_identifier="someone")
        memory.find_entities("x", user_identifier="someone")  # warned once per backend
    found = [w for w in seen if issubclass(w.category, CapabilityWarning)]
    assert len(found) == 1
    assert found[0].filename == __file__
    _assert_standard_warn()


def test_strict_still_raises_instead_of_warning() -> None:
    from memory_core import NotSupportedError

    with open_backend("memory://", strict=True) as memory, warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning would fail the test
        with pytest.raises(NotSupportedError):
            memory.find_entities("x", user_identifier="someone")


def test_a_fresh_interpreter_keeps_its_warnings_warn() -> None:
    """Checked where nothing else ran first: ``warnings.warn`` taken before
    :mod:`memory_core.sync` is even imported is the one there after blocking calls."""
    script = textwrap.dedent(
        """
        import warnings
        before = warnings.warn
        from memory_core import CapabilityWarning
        from memory_core.sync import open_backend
        with open_backend("memory://") as memory:
            memory.add_message("s", "user", "x")
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                memory.find_entities("x", user_identifier="someone")
        assert [w.category for w in seen] == [CapabilityWarning], seen
        assert seen[0].lineno == 10, seen[0].lineno
        assert warnings.warn is before, warnings.warn
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# ---------------------------------------------------------------- the channel itself


def test_collect_holds_capability_warnings_back_and_nests() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with warning_channel.collect() as outer:
            warning_channel.warn_capability("one")
            with warning_channel.collect() as inner:
                warning_channel.warn_capability("two")
            warning_channel.warn_capability("three")
        assert seen == []
        warning_channel.warn_capability("after")  # no sink any more: a real warning
    assert outer == [("one", CapabilityWarning), ("three", CapabilityWarning)]
    assert inner == [("two", CapabilityWarning)]
    assert [(str(w.message), w.category) for w in seen] == [("after", CapabilityWarning)]
    _assert_standard_warn()
