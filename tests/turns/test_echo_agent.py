"""``examples/echo_agent.py`` runs as a program and shows what memory holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "echo_agent.py"


def _run(*args: str, url: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_BACKEND_URL"}
    if url is not None:
        env["MEMORY_BACKEND_URL"] = url
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def test_echo_agent_on_memory_url_prints_memory_after_each_turn() -> None:
    out = _run("memory://")
    lines = out.splitlines()
    assert lines[0] == "backend: memory://  conversation: echo-demo"
    assert [line for line in lines if line.startswith("turn ")] == [
        "turn 1 (stored): Hello! I work at Acme Corp.",
        "turn 2 (stored): Can you check order ORD-1234 for Acme Corp?",
        "turn 3 (stored): ok",
    ]
    assert [line.strip() for line in lines if "memory holds" in line] == [
        "memory holds 2 message(s):",
        "memory holds 4 message(s):",
        "memory holds 6 message(s):",
    ]
    final = [line.strip() for line in lines[-6:]]
    assert final[0] == "user: Hello! I work at Acme Corp.  [mentions: Acme Corp]"
    assert final[2] == (
        "user: Can you check order ORD-1234 for Acme Corp?  [mentions: ORD-1234, Acme Corp]"
    )
    assert final[4] == "user: ok"
    assert final[5] == "assistant: You said 'ok'. I recall: nothing."
    assert "not recorded" not in out


def test_echo_agent_defaults_to_memory_and_replays_on_a_persistent_store(
    tmp_path: Path,
) -> None:
    assert _run().startswith("backend: memory://")
    url = f"sqlite:///{tmp_path / 'echo.db'}"
    first = _run(url=url)
    second = _run(url=url)
    assert "turn 1 (stored)" in first
    assert [line for line in second.splitlines() if line.startswith("turn ")] == [
        "turn 1 (replayed): Hello! I work at Acme Corp.",
        "turn 2 (replayed): Can you check order ORD-1234 for Acme Corp?",
        "turn 3 (replayed): ok",
    ]
    assert second.count("memory holds 6 message(s):") == 3
