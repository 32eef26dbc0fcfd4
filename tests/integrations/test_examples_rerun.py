"""An example run twice against one persistent store prints the same thing both times
and leaves the store as it found it (it deletes the session it wrote)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import open_backend
from tests.integrations.test_examples import NEEDS, ROOT, _run

# What differs from run to run however the store holds: ids and times the store issues.
_ISSUED = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d\d-\d\dT[\d:.+-]+"
)


def _shown(output: str) -> str:
    return _ISSUED.sub("…", output)


def _conversations(url: str) -> int:
    async def count() -> int:
        async with open_backend(url) as memory:
            return len(await memory.list_conversations(limit=1000))

    return anyio.run(count)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_framework_example_run_twice_prints_the_same_and_leaves_nothing(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    first = _run(name, url, {}, monkeypatch, capfd)
    assert NEEDS[name][1] in first
    assert _conversations(url) == 0
    again = _run(name, url, {}, monkeypatch, capfd)
    assert _shown(again) == _shown(first)  # the second run does not see the first's data
    assert _conversations(url) == 0


def test_the_observability_example_run_twice_leaves_nothing(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "observability.py"), url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert _conversations(url) == 0
