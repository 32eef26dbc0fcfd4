"""``memory-core export / import / copy``: progress lines, summary, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio

from memory_core import open_backend
from tests.transfer.sample import MESSAGES, populate


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "memory_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def _source(path: Path) -> str:
    url = f"sqlite:///{path}"

    async def fill() -> None:
        async with open_backend(url) as backend:
            await populate(backend)

    anyio.run(fill)
    return url


def test_export_import_copy_round_trip(tmp_path: Path) -> None:
    source = _source(tmp_path / "src.db")
    exported = run("export", source, "memory.jsonl.gz", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert f"copied: 2 conversations, {MESSAGES} messages" in exported.stdout
    # Not a terminal: plain progress lines, no carriage returns.
    assert "\r" not in exported.stderr and "messages/s" in exported.stderr

    target = f"sqlite:///{tmp_path / 'dst.db'}"
    imported = run("import", "memory.jsonl.gz", target, "--json", "--quiet", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["copied"]["message"] == MESSAGES
    assert imported.stderr == ""

    again = run("copy", source, target, "--on-conflict", "skip", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"skipped: {MESSAGES} messages (already in the target)" in again.stdout

    fresh = run("copy", source, "memory://", "--on-conflict", "new-ids", cwd=tmp_path)
    assert "not carried:" in fresh.stdout and "message.id" in fresh.stdout


def test_a_bad_line_fails_with_its_number_unless_skip_bad(tmp_path: Path) -> None:
    source = _source(tmp_path / "src.db")
    assert run("export", source, "memory.jsonl", cwd=tmp_path).returncode == 0
    lines = (tmp_path / "memory.jsonl").read_text(encoding="utf-8").splitlines()
    lines.insert(1, "{broken")
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    failed = run("import", "bad.jsonl", "memory://", cwd=tmp_path)
    assert failed.returncode == 1
    assert "line 2" in failed.stderr and "Traceback" not in failed.stderr
    skipped = run("import", "bad.jsonl", "memory://", "--skip-bad", cwd=tmp_path)
    assert skipped.returncode == 0
    assert "bad lines skipped: 1" in skipped.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = run("import", "x.jsonl", "memory://", "--on-conflict", "merge", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_the_terminal_display_is_one_updating_line_with_a_bar() -> None:
    import io

    from memory_core.transfer import TransferReport
    from memory_core.transfer.progress import Progress

    screen = io.StringIO()
    progress = Progress(screen, tty=True)
    report = TransferReport()
    report.copy("message", 10)
    progress.last = 0.0
    progress(report)
    progress.done(report)
    text = screen.getvalue()
    assert text.startswith("\r[") and "#" in text
    assert text.endswith("\n") and text.count("\n") == 1
    assert "10 messages" in text


def test_copy_of_chosen_users_between_multi_tenant_stores(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tenants.db'}"

    async def fill() -> None:
        async with open_backend(url, multi_tenant=True) as backend:
            for user in ("alice", "bob", "carol"):
                await backend.add_message(
                    f"{user}-chat", "user", f"hi from {user}", user_identifier=user
                )

    anyio.run(fill)
    target = f"sqlite:///{tmp_path / 'two.db'}"
    result = run(
        "copy",
        url,
        target,
        "--users",
        "alice,bob",
        "--src-multi-tenant",
        "--dst-multi-tenant",
        "--quiet",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "copied: 2 conversations, 2 messages" in result.stdout

    async def check() -> None:
        async with open_backend(target, multi_tenant=True) as backend:
            alice = await backend.get_conversation("alice-chat", user_identifier="alice")
            assert [m.content for m in alice.messages] == ["hi from alice"]
            assert await backend.list_sessions(user_identifier="carol") == []
            assert await backend.list_sessions(user_identifier="bob") != []

    anyio.run(check)
