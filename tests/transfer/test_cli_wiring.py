"""The transfer commands' wiring, run in this process: every option reaches the call it
names, the progress display sees every report, Ctrl-C prints what was done and how to
resume, and default checkpoints are named as the help says. (Found missing by mutation
testing of memory_core/transfer: the subprocess tests of test_cli.py check the same
behaviour as users run it, but a mutant is not carried into a child process.)"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import open_backend
from memory_core.archive.report import counted
from memory_core.cli import main
from memory_core.settings import redact_url
from memory_core.transfer import TransferReport, cli
from memory_core.transfer.progress import Progress
from tests.transfer.sample import MESSAGES, populate


class _Seen:
    """What the display was called with; ``stop_at``: raise Ctrl-C at that call."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.calls: list[int] = []
        self.stop_at = stop_at


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> _Seen:
    """The commands' progress display, recording each report it is given."""
    record = _Seen()

    class Watched(Progress):
        def __call__(self, report: TransferReport) -> None:
            record.calls.append(report.messages_done)
            super().__call__(report)
            if record.stop_at is not None and len(record.calls) == record.stop_at:
                raise KeyboardInterrupt

    monkeypatch.setattr(cli, "Progress", Watched)
    return record


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Any:
    """``memory-core ARGS`` in this process, in ``tmp_path``: (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return call


def _filled(path: Path, *, users: tuple[str, ...] = ()) -> str:
    """An embedded store at ``path`` holding the sample (per user when ``users``)."""
    url = f"sqlite:///{path}"

    async def fill() -> None:
        async with open_backend(url, multi_tenant=bool(users)) as backend:
            for user in users or (None,):
                await populate(backend, user, tag=f"{user}-" if user else "")

    anyio.run(fill)
    return url


def _sessions(url: str, user: str | None = None) -> list[str]:
    async def names() -> list[str]:
        async with open_backend(url, multi_tenant=user is not None) as backend:
            return sorted(s.session_id for s in await backend.list_sessions(user_identifier=user))

    return anyio.run(names)


def _digest(source: str, target: str) -> str:
    return hashlib.sha256(f"{source}\x00{target}".encode()).hexdigest()[:16]


def test_every_command_feeds_the_display_every_report(
    tmp_path: Path, run: Any, seen: _Seen
) -> None:
    source = _filled(tmp_path / "src.db")
    assert run("export", source, "a.jsonl")[0] == 0
    exported = len(seen.calls)
    assert run("import", "a.jsonl", f"sqlite:///{tmp_path / 'i.db'}")[0] == 0
    imported = len(seen.calls) - exported
    assert run("copy", source, f"sqlite:///{tmp_path / 'c.db'}")[0] == 0
    copied = len(seen.calls) - exported - imported
    assert exported > 0 and imported > 0 and copied > 0
    assert seen.calls[-1] == MESSAGES  # the last report of the copy counts everything


def test_quiet_keeps_the_display_silent(tmp_path: Path, run: Any, seen: _Seen) -> None:
    source = _filled(tmp_path / "src.db")
    code, out, err = run("copy", source, f"sqlite:///{tmp_path / 'c.db'}", "--quiet")
    assert code == 0 and seen.calls == [] and err == ""
    assert f"{MESSAGES} messages" in out
    code, _, err = run("copy", source, f"sqlite:///{tmp_path / 'd.db'}")
    assert code == 0 and err.startswith("done: ")


def test_json_summary_is_indented_by_two(tmp_path: Path, run: Any) -> None:
    source = _filled(tmp_path / "src.db")
    code, out, _ = run("copy", source, f"sqlite:///{tmp_path / 'c.db'}", "--json", "--quiet")
    assert code == 0
    body = json.loads(out)
    assert out == json.dumps(body, indent=2) + "\n"
    assert "interrupted" not in body and body["copied"]["message"] == MESSAGES


def test_export_scope_options_reach_the_export(tmp_path: Path, run: Any) -> None:
    source = f"sqlite:///{tmp_path / 'src.db'}"

    async def fill() -> None:  # both users have sessions chat-1 and chat-2
        async with open_backend(source, multi_tenant=True) as backend:
            for user in ("ann", "bob"):
                await populate(backend, user)

    anyio.run(fill)
    code, _, err = run(
        "export", source, "a.jsonl", "--multi-tenant", "--users", "ann", "--session-prefix",
        "chat-1", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text("utf-8").splitlines()]
    chosen = [
        (r["session_id"], r["user_identifier"]) for r in records if r["record"] == "conversation"
    ]
    assert chosen == [("chat-1", "ann")]


def test_copy_session_prefix_reaches_the_copy(tmp_path: Path, run: Any) -> None:
    source = _filled(tmp_path / "src.db")
    target = f"sqlite:///{tmp_path / 'c.db'}"
    code, _, err = run("copy", source, target, "--session-prefix", "chat-2", "--quiet")
    assert code == 0, err
    assert _sessions(target) == ["chat-2"]


def test_import_multi_tenant_writes_each_user_under_their_name(tmp_path: Path, run: Any) -> None:
    source = _filled(tmp_path / "src.db", users=("ann", "bob"))
    assert run("export", source, "a.jsonl", "--multi-tenant", "--quiet")[0] == 0
    target = f"sqlite:///{tmp_path / 'mt.db'}"
    code, _, err = run("import", "a.jsonl", target, "--multi-tenant", "--quiet")
    assert code == 0, err
    assert _sessions(target, "ann") == ["ann-chat-1", "ann-chat-2"]
    assert _sessions(target, "bob") == ["bob-chat-1", "bob-chat-2"]


def test_a_bad_on_conflict_is_a_usage_error(tmp_path: Path, run: Any) -> None:
    (tmp_path / "a.jsonl").write_text("", encoding="utf-8")  # exists: the option decides
    code, _, err = run("import", "a.jsonl", "memory://", "--on-conflict", "merge")
    assert code == 2 and "invalid choice: 'merge'" in err


def test_a_network_source_opens_without_the_embedded_create_option(run: Any) -> None:
    code, _, err = run("copy", "bolt://127.0.0.1:1", "memory://", "--quiet")
    assert code == 1 and "unreachable" in err  # connecting failed, not opening


def test_default_checkpoints_are_named_from_source_and_target(tmp_path: Path, run: Any) -> None:
    """Written through the public API (new-ids): the checkpoint is
    ``.memory-core-transfer-<hash>.checkpoint`` in the current directory."""
    source = _filled(tmp_path / "src.db")
    target = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("copy", source, target, "--on-conflict", "new-ids", "--quiet")[0] == 0
    name = f".memory-core-transfer-{_digest(redact_url(source), redact_url(target))}.checkpoint"
    assert (tmp_path / name).is_file()
    assert run("export", source, "a.jsonl", "--quiet")[0] == 0
    imported = f"sqlite:///{tmp_path / 'i.db'}"
    assert run("import", "a.jsonl", imported, "--on-conflict", "new-ids", "--quiet")[0] == 0
    archive = str((tmp_path / "a.jsonl").resolve())
    name = f".memory-core-transfer-{_digest(archive, redact_url(imported))}.checkpoint"
    assert (tmp_path / name).is_file()


def test_a_target_with_a_bulk_hook_needs_no_checkpoint(tmp_path: Path, run: Any) -> None:
    source = _filled(tmp_path / "src.db")
    assert run("copy", source, f"sqlite:///{tmp_path / 'c.db'}", "--quiet")[0] == 0
    assert run("export", source, "a.jsonl", "--quiet")[0] == 0
    assert run("import", "a.jsonl", f"sqlite:///{tmp_path / 'i.db'}", "--quiet")[0] == 0
    assert not list(tmp_path.glob("*.checkpoint"))


def test_restart_without_a_checkpoint_file_just_starts(tmp_path: Path, run: Any) -> None:
    source = _filled(tmp_path / "src.db")
    target = f"sqlite:///{tmp_path / 'c.db'}"
    code, out, err = run("copy", source, target, "--on-conflict", "new-ids", "--restart")
    assert code == 0, err
    assert f"{MESSAGES} messages" in out


def _interrupted(run: Any, seen: _Seen, *args: str) -> tuple[dict[str, Any], str]:
    """Ctrl-C at the display's second report: the JSON summary and stderr."""
    seen.stop_at = 2
    code, out, err = run(*args, "--json")
    assert code == cli.INTERRUPTED, err
    body = json.loads(out)
    assert out == json.dumps(body, indent=2) + "\n"
    assert body["interrupted"] is True
    assert err.rstrip("\n").endswith(f"memory-core: interrupted: {body['resume']}")
    # the display's last line; export and copy count the source first, import cannot
    done_so_far = seen.calls[-1]
    last = (
        counted(done_so_far, "message")
        if args[0] == "import"
        else f"{done_so_far:,} of {MESSAGES:,} messages"
    )
    assert f"\ninterrupted: {last}," in "\n" + err
    skipped = sum(item["count"] for item in body["skipped"] if item["kind"] == "message")
    done = body["copied"].get("message", 0) + skipped
    assert done == seen.calls[-1] > 0  # the report the display last saw, not an empty one
    return body, err


def test_ctrl_c_during_a_hooked_copy_says_resume_skips_by_id(
    tmp_path: Path, run: Any, seen: _Seen
) -> None:
    source = _filled(tmp_path / "src.db")
    body, _ = _interrupted(run, seen, "copy", source, f"sqlite:///{tmp_path / 'c.db'}")
    assert body["resume"] == (
        "run the same command again to resume: what the target already holds is "
        "skipped (matched by id)"
    )


def test_ctrl_c_during_a_checkpointed_copy_names_the_checkpoint(
    tmp_path: Path, run: Any, seen: _Seen
) -> None:
    source = _filled(tmp_path / "src.db")
    target = f"sqlite:///{tmp_path / 'c.db'}"
    body, _ = _interrupted(run, seen, "copy", source, target, "--on-conflict", "new-ids")
    name = f".memory-core-transfer-{_digest(redact_url(source), redact_url(target))}.checkpoint"
    assert body["resume"] == f"run the same command again to resume from the checkpoint {name}"


def test_ctrl_c_during_a_checkpointed_import_names_the_checkpoint(
    tmp_path: Path, run: Any, seen: _Seen
) -> None:
    source = _filled(tmp_path / "src.db")
    assert run("export", source, "a.jsonl", "--quiet")[0] == 0
    target = f"sqlite:///{tmp_path / 'i.db'}"
    body, _ = _interrupted(run, seen, "import", "a.jsonl", target, "--on-conflict", "new-ids")
    archive = str((tmp_path / "a.jsonl").resolve())
    name = f".memory-core-transfer-{_digest(archive, redact_url(target))}.checkpoint"
    assert body["resume"] == f"run the same command again to resume from the checkpoint {name}"


def test_ctrl_c_during_an_export_says_the_archive_was_not_written(
    tmp_path: Path, run: Any, seen: _Seen
) -> None:
    source = _filled(tmp_path / "src.db")
    body, _ = _interrupted(run, seen, "export", source, "a.jsonl")
    assert body["resume"] == (
        "the archive a.jsonl was not written (a previous one is left as it was); "
        "run the same command again to write it"
    )
    assert not (tmp_path / "a.jsonl").exists()


def test_ctrl_c_without_json_prints_the_plain_summary(
    tmp_path: Path, run: Any, seen: _Seen
) -> None:
    source = _filled(tmp_path / "src.db")
    seen.stop_at = 2
    code, out, err = run("copy", source, f"sqlite:///{tmp_path / 'c.db'}")
    assert code == cli.INTERRUPTED
    assert out.startswith("copied: ") and counted(seen.calls[-1], "message") in out
    assert "memory-core: interrupted: run the same command again to resume" in err


def test_the_checkpoint_help_names_every_built_in_store_that_resumes_by_id() -> None:
    """``--checkpoint``'s help says which targets need no checkpoint: every built-in store
    with bulk-transfer hooks, and no other."""
    import importlib
    import re

    from memory_core.interface import Store
    from memory_core.registry import built_in
    from memory_core.transfer.cli import CHECKPOINT_HELP

    named = re.search(r"\(([^()]*) targets need none", CHECKPOINT_HELP)
    assert named is not None
    said = named.group(1).lower()
    for spec in built_in().values():
        module, _, name = spec.path.partition(":")
        store = getattr(importlib.import_module(module), name)
        hooks = store.bulk_transfer is not Store.bulk_transfer
        assert (store.name in said) == hooks, (store.name, said)
