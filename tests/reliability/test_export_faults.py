"""An export never damages the archive it replaces (issue 25, item 7).

Re-exporting over a good archive used to truncate it first: a full disk left 1 MiB of
it, a killed export 2.6 MB. Now the archive is written beside the target and renamed
over it once complete and on disk. An export that fails half-way (the source raising, a
full disk: a child process with ``RLIMIT_FSIZE``) or is killed (SIGKILL at a pause point)
leaves the previous archive byte for byte, and a failure leaves no temporary file.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import TransportError, open_backend
from memory_core.transfer import export, export_memory
from tests.paused_cli import child as _run_child
from tests.paused_cli import start_paused
from tests.transfer.sample import MESSAGES, populate

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


async def _store(path: Path, copies: int = 1) -> str:
    url = f"sqlite:///{path}"
    async with open_backend(url) as backend:
        for i in range(copies):
            await populate(backend, tag=f"t{i}-")
    return url


@pytest.mark.parametrize("name", ["memory.jsonl", "memory.jsonl.gz"])
async def test_an_export_failing_half_way_leaves_the_old_archive(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = await _store(tmp_path / "src.db")
    target = tmp_path / "out" / name
    target.parent.mkdir()
    async with open_backend(url) as backend:
        await export_memory(backend, target)
        before = target.read_bytes()
        records = export.iter_records

        async def failing(*args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
            count = 0
            async for record in records(*args, **kwargs):
                yield record
                count += 1
                if count == MESSAGES:
                    raise TransportError("the source went away")

        monkeypatch.setattr(export, "iter_records", failing)
        with pytest.raises(TransportError):
            await export_memory(backend, target)
        assert target.read_bytes() == before
        assert [p.name for p in target.parent.iterdir()] == [name]  # no temporary file
        fresh = tmp_path / "out" / f"new-{name}"
        with pytest.raises(TransportError):
            await export_memory(backend, fresh)
        assert not fresh.exists()


async def test_a_re_export_replaces_the_archive_and_keeps_its_mode(tmp_path: Path) -> None:
    url = await _store(tmp_path / "src.db")
    target = tmp_path / "out" / "memory.jsonl"
    target.parent.mkdir()
    target.write_text("an older archive\n", encoding="utf-8")
    target.chmod(0o640)
    async with open_backend(url) as backend:
        report = await export_memory(backend, target)
    assert report.copied["message"] == MESSAGES
    assert target.read_text(encoding="utf-8").count('"record":"message"') == MESSAGES
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["memory.jsonl"]


FULL_DISK = """
import resource, signal, sys
from memory_core.cli import main

limit = int(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.exit(main(sys.argv[2:]))
"""


def _child(script: str, *args: str, cwd: Path) -> subprocess.Popen[str]:
    return _run_child(script, *args, cwd=cwd)


def test_a_full_disk_leaves_the_old_archive_and_no_temporary_file(tmp_path: Path) -> None:
    url = anyio.run(_store, tmp_path / "src.db", 4)
    child = _child(FULL_DISK, str(10**9), "export", url, "memory.jsonl", "--quiet", cwd=tmp_path)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    before = (tmp_path / "memory.jsonl").read_bytes()
    # Room for half of the archive: the new one cannot be written whole.
    limit = str(len(before) // 2)
    child = _child(FULL_DISK, limit, "export", url, "memory.jsonl", "--quiet", cwd=tmp_path)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 1, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("memory-core: error: ") and "memory.jsonl" in err
    assert (tmp_path / "memory.jsonl").read_bytes() == before
    assert not list(tmp_path.glob(".memory.jsonl.*"))


def test_a_killed_export_leaves_the_old_archive(tmp_path: Path) -> None:
    """SIGKILL while the export is half-way (the child stops after 8 records and says
    PAUSED): nothing can clean up, and the old archive is still whole."""
    url = anyio.run(_store, tmp_path / "src.db", 4)
    done = subprocess.run(
        [sys.executable, "-m", "memory_core.cli", "export", url, "memory.jsonl", "--quiet"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    before = (tmp_path / "memory.jsonl").read_bytes()
    child = start_paused(["export", url, "memory.jsonl"], tmp_path)
    try:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    assert (tmp_path / "memory.jsonl").read_bytes() == before
    # What it was writing is beside it, under a name no reader takes for the archive.
    assert [p.name.endswith(".partial") for p in tmp_path.glob(".memory.jsonl.*")] == [True]
