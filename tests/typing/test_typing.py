"""``mypy --strict`` on check_sync_types.py: the blocking facade's methods have real types
(not ``Any``). Also checks that the check can fail, and that it calls every method."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.sync import sync_method_names

ROOT = Path(__file__).resolve().parents[2]
CHECK = Path(__file__).with_name("check_sync_types.py")


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for this module's runs (the second run reuses the first's analysis of
    memory-core and its dependencies); not the project's .mypy_cache."""
    return tmp_path_factory.mktemp("mypy-cache")


def run_mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """``mypy --strict path`` from the repository root (where it finds memory_core).
    Errors of imported modules are not reported here (``mypy memory_core`` checks them):
    only those of ``path``."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--no-error-summary",
            "--cache-dir",
            str(cache),
            str(path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_facade_types_check_under_mypy_strict(mypy_cache: Path) -> None:
    done = run_mypy(CHECK, mypy_cache)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_fails_on_a_wrong_type_or_on_any(mypy_cache: Path, tmp_path: Path) -> None:
    """The same kind of file with wrong expectations is rejected: a wrong result type,
    and a facade whose methods are ``Any`` (what ``__getattr__`` gave type checkers)."""
    probe = tmp_path / "probe_wrong_types.py"
    probe.write_text(
        "from typing import Any, assert_type\n"
        "from memory_core import Message\n"
        "from memory_core.sync import SyncMemoryBackend\n"
        "\n"
        "\n"
        "class Untyped:\n"
        "    def __getattr__(self, name: str) -> Any: ...\n"
        "\n"
        "\n"
        "def check(memory: SyncMemoryBackend, untyped: Untyped) -> None:\n"
        '    assert_type(memory.get_context("q"), int)\n'
        '    assert_type(untyped.add_message("s", "user", "x"), Message)\n'
    )
    done = run_mypy(probe, mypy_cache)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 2, done.stdout
    assert ':11: error: Expression is of type "str", not "int"' in errors[0]
    assert ':12: error: Expression is of type "Any", not "Message"' in errors[1]


def test_the_check_calls_every_blocking_method() -> None:
    tree = ast.parse(CHECK.read_text())
    called = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "memory"
    }
    assert set(sync_method_names()) - called == set()
