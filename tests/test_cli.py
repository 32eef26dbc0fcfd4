"""The memory-core command: exit codes, help, capabilities output."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memory_core.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unknown_scheme_is_one_line_and_exit_1() -> None:
    result = run("capabilities", "nosuch://x")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "unknown backend scheme 'nosuch'" in result.stderr
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback() -> None:
    result = run("--debug", "capabilities", "nosuch://x")
    assert result.returncode == 1
    assert "Traceback" in result.stderr


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert main(["capabilities", "--bogus"]) == 2
    assert main([]) == 2


@pytest.mark.parametrize("command", [[], ["capabilities"], ["demo"]])
def test_help_everywhere(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.returncode == 0
    assert "usage: memory-core" in result.stdout


def test_capabilities_table_is_truthful_for_memory() -> None:
    from memory_core import store_class

    result = run("capabilities", "memory://")
    assert result.returncode == 0, result.stderr
    caps = store_class("memory").capabilities
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[3:]}
    for flag in caps.flag_names():
        assert rows[flag] == ("yes" if caps.supports(flag) else "no"), flag


def test_capabilities_json() -> None:
    result = run("capabilities", "memory://", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["backend"] == "embedded"
    assert data["flags"]["delete_message"] is True


def test_capabilities_never_prints_a_password() -> None:
    result = run("capabilities", "bolt://neo:hunter2@127.0.0.1:1/?x=1", "--json")
    assert "hunter2" not in result.stdout + result.stderr
