"""``memory-core export / import / copy``: progress lines, summary, exit codes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import open_backend
from memory_core.cli import main
from tests.paused_cli import start_paused
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


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def here(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``memory-core ARGS`` run in this process, in ``cwd`` (so that mutation testing sees
    the CLI's code run: a subprocess would not carry the mutant)."""

    def call(*args: str, cwd: Path) -> Ran:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return call


def _source(path: Path) -> str:
    url = f"sqlite:///{path}"

    async def fill() -> None:
        async with open_backend(url) as backend:
            await populate(backend)

    anyio.run(fill)
    return url


def test_export_import_copy_round_trip(tmp_path: Path, here: Any) -> None:
    source = _source(tmp_path / "src.db")
    exported = run("export", source, "memory.jsonl.gz", cwd=tmp_path)  # as users run it
    assert exported.returncode == 0, exported.stderr
    assert f"copied: 2 conversations, {MESSAGES} messages" in exported.stdout
    # Not a terminal: plain progress lines, no carriage returns.
    assert "\r" not in exported.stderr and "messages/s" in exported.stderr

    target = f"sqlite:///{tmp_path / 'dst.db'}"
    imported = here("import", "memory.jsonl.gz", target, "--json", "--quiet", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["copied"]["message"] == MESSAGES
    assert imported.stderr == ""

    again = here("copy", source, target, "--on-conflict", "skip", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"skipped: {MESSAGES} messages (already in the target)" in again.stdout

    fresh = here("copy", source, "memory://", "--on-conflict", "new-ids", cwd=tmp_path)
    assert "not carried:" in fresh.stdout and "message.id" in fresh.stdout


def test_a_bad_line_fails_with_its_number_unless_skip_bad(tmp_path: Path, here: Any) -> None:
    source = _source(tmp_path / "src.db")
    assert here("export", source, "memory.jsonl", "--quiet", cwd=tmp_path).returncode == 0
    lines = (tmp_path / "memory.jsonl").read_text(encoding="utf-8").splitlines()
    lines.insert(1, "{broken")
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    failed = here("import", "bad.jsonl", "memory://", cwd=tmp_path)
    assert failed.returncode == 1
    assert "line 2" in failed.stderr and "Traceback" not in failed.stderr
    skipped = here("import", "bad.jsonl", "memory://", "--skip-bad", cwd=tmp_path)
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


def test_copy_of_chosen_users_between_multi_tenant_stores(tmp_path: Path, here: Any) -> None:
    url = f"sqlite:///{tmp_path / 'tenants.db'}"

    async def fill() -> None:
        async with open_backend(url, multi_tenant=True) as backend:
            for user in ("alice", "bob", "carol"):
                await backend.add_message(
                    f"{user}-chat", "user", f"hi from {user}", user_identifier=user
                )

    anyio.run(fill)
    target = f"sqlite:///{tmp_path / 'two.db'}"
    result = here(
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


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``memory-core ARGS`` in this process: exit code, stdout, stderr."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["export", "copy"])
def test_a_source_file_that_does_not_exist_is_a_usage_error_and_is_not_created(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    target = "backup.jsonl" if command == "export" else "sqlite:///copy.db"
    code, out, err = _main(capsys, command, "sqlite:///memroy.db", target, "--quiet")
    assert code == 2
    assert err.count("\n") == 1 and "memroy.db" in err and "Traceback" not in err
    assert out == ""
    assert list(tmp_path.iterdir()) == []  # neither the source nor the target exists


def test_an_archive_that_does_not_exist_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _main(capsys, "import", "nothing.jsonl", "sqlite:///target.db")
    assert code == 2
    assert err.count("\n") == 1 and "nothing.jsonl" in err
    assert list(tmp_path.iterdir()) == []


def test_a_target_in_a_missing_folder_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source(tmp_path / "src.db")
    monkeypatch.chdir(tmp_path)
    code, _, err = _main(capsys, "copy", source, "sqlite:///nonexistent-dir/x.db", "--quiet")
    assert code == 1
    assert err.count("\n") == 1 and "nonexistent-dir" in err
    assert not (tmp_path / "nonexistent-dir").exists()


def test_help_says_where_checkpoints_live_and_the_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in ("copy", "import"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert ".memory-core-transfer-<hash>.checkpoint in the current directory" in text
        assert "--restart" in text and "130 interrupted" in text


def test_restart_ignores_and_removes_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source(tmp_path / "src.db")
    monkeypatch.chdir(tmp_path)
    checkpoint = tmp_path / "copy.checkpoint"
    # new-ids: written through the public API, so the checkpoint is used.
    args = ("copy", source, "sqlite:///public.db", "--on-conflict", "new-ids")
    args += ("--checkpoint", str(checkpoint), "--json", "--quiet")

    def copied(*extra: str) -> int:
        code, out, _ = _main(capsys, *args, *extra)
        assert code == 0
        return int(json.loads(out)["copied"].get("message", 0))

    assert copied() == MESSAGES
    assert copied() == 0  # the checkpoint: nothing is written twice
    first = checkpoint.read_text(encoding="utf-8").splitlines()
    assert first and all(json.loads(line)["base"] == 0 for line in first)
    # Ignored and deleted: new-ids appends everything again, noted in a fresh file.
    assert copied("--restart") == MESSAGES
    lines = checkpoint.read_text(encoding="utf-8").splitlines()
    assert lines and all(json.loads(line)["base"] > 0 for line in lines)


def _interrupt(args: list[str], cwd: Path) -> tuple[str, str]:
    """Run the command in a child, SIGINT it once it paused: (stdout, stderr)."""
    child = start_paused(args, cwd)
    try:
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err
    assert "Traceback" not in err
    return out, err


def _messages(summary: str) -> int:
    found = re.search(r"copied: .*?(\d+) messages", summary)
    assert found is not None, summary
    return int(found.group(1))


@pytest.mark.parametrize("command", ["copy", "import"])
def test_ctrl_c_says_what_was_done_and_how_to_resume(tmp_path: Path, command: str) -> None:
    source = _source(tmp_path / "src.db")
    target = f"sqlite:///{tmp_path / 'dst.db'}"
    if command == "import":
        assert run("export", source, "memory.jsonl", "--quiet", cwd=tmp_path).returncode == 0
        args = ["import", "memory.jsonl", target]
    else:
        args = ["copy", source, target]
    out, err = _interrupt(args, tmp_path)
    assert "memory-core: interrupted: run the same command again to resume" in err
    # the progress display (of the total where the source was counted: copy)
    assert re.search(r"^interrupted: \d+ (of \d+ )?messages", err, re.M)
    done = _messages(out)
    assert 0 < done < MESSAGES
    resumed = run(*args, "--quiet", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["copied"]["message"] == MESSAGES - done

    async def count() -> int:
        async with open_backend(target) as backend:
            total = 0
            for session in await backend.list_sessions():
                total += len((await backend.get_conversation(session.session_id)).messages)
            return total

    assert anyio.run(count) == MESSAGES


def test_ctrl_c_during_an_export_writes_no_archive(tmp_path: Path) -> None:
    source = _source(tmp_path / "src.db")
    out, err = _interrupt(["export", source, "memory.jsonl"], tmp_path)
    assert "memory-core: interrupted: the archive memory.jsonl was not written" in err
    assert "copied: " in out
    # Neither a cut-short archive nor the temporary file it was being written to.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.db"]
    again = run("export", source, "memory.jsonl", "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    lines = (tmp_path / "memory.jsonl").read_text(encoding="utf-8").splitlines()
    assert '"record":"end"' in lines[-1]
