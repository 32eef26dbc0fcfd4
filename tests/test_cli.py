"""The memory-core command: exit codes, help, capabilities output."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize("scheme", ["neo4j", "bolt"])
def test_neo4j_with_nothing_listening_is_one_line(scheme: str) -> None:
    """The driver logs the failed routing at ERROR; without --debug that record must not
    reach stderr beside our own line (with --debug it may)."""
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run("demo", f"{scheme}://127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("memory-core: error: bolt backend at ")
    assert "unreachable" in result.stderr


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


# ---------------------------------------------------------------- commands that need an extra

# Run the command in a fresh interpreter where the extra's package cannot be imported, as
# in an install without the extra (every extra is installed here).
_WITHOUT = """
import sys

BLOCKED = set(sys.argv[1].split(","))


class Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Uninstalled())
from memory_core.cli import main

sys.exit(main(sys.argv[2:]))
"""

WITHOUT_EXTRA = [
    pytest.param("serve", "fastapi", "server", id="serve"),
    pytest.param("mcp", "mcp", "mcp", id="mcp"),
]


def run_without(blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, blocked, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(("command", "package", "extra"), WITHOUT_EXTRA)
def test_help_of_a_command_whose_extra_is_missing_names_the_extra(
    command: str, package: str, extra: str
) -> None:
    result = run_without(package, command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: memory-core {command}")
    assert f"pip install 'memory-core[{extra}]'" in result.stdout
    assert f"{package} is missing" in result.stdout


@pytest.mark.parametrize(("command", "package", "extra"), WITHOUT_EXTRA)
def test_running_a_command_whose_extra_is_missing_is_one_line_and_exit_1(
    command: str, package: str, extra: str
) -> None:
    result = run_without(package, command)
    assert result.returncode == 1
    assert result.stderr == (
        f"memory-core: error: 'memory-core {command}' needs the extra '{extra}' ({package} is "
        f"not installed): pip install 'memory-core[{extra}]'\n"
    )


def test_the_top_level_help_says_which_extra_each_command_needs() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command, extra in (("serve", "server"), ("mcp", "mcp")):
        line = next(x for x in result.stdout.splitlines() if x.strip().startswith(command))
        assert f"(extra: {extra})" in line


# ---------------------------------------------------------------- demo


def test_demo_leaves_the_store_as_it_found_it(tmp_path: Path) -> None:
    """The demo may run on the user's real default store: it must not touch a session it
    did not create (``demo-session`` included), nor leave its own behind."""
    from memory_core.sync import open_backend

    url = f"sqlite:///{tmp_path / 'real.db'}"
    with open_backend(url) as memory:
        memory.add_message("demo-session", "user", "the user's own words")
        memory.add_message("notes", "user", "keep me")
    for _ in range(2):
        result = run("demo", url)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("stored 3 messages in ")
    with open_backend(url) as memory:
        sessions = {s.session_id: s.message_count for s in memory.list_sessions()}
        assert sessions == {"demo-session": 1, "notes": 1}
        kept = memory.get_conversation("demo-session").messages
        assert [m.content for m in kept] == ["the user's own words"]


@pytest.mark.parametrize("command", ["demo", "capabilities"])
def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path, command: str) -> None:
    """``memory-core demo | head -1``: the reader is gone before the command writes. No
    error line, the exit status a tool ended by SIGPIPE has, and the demo still deletes
    its session."""
    from memory_core.sync import open_backend

    url = f"sqlite:///{tmp_path / 'piped.db'}"
    with subprocess.Popen(
        [sys.executable, "-m", "memory_core.cli", command, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # the reader leaves before the first line
        err = process.stderr.read().decode()
        code = process.wait(timeout=60)
    assert (code, err) == (141, "")
    with open_backend(url) as memory:
        assert memory.list_sessions() == []


# ---------------------------------------------------------------- ports


@pytest.mark.parametrize(
    ("command", "package"),
    [
        pytest.param(["serve", "--port"], "fastapi", id="serve"),
        pytest.param(["mcp", "memory://", "--http", "--port"], "mcp", id="mcp"),
    ],
)
def test_a_port_in_use_is_one_line_and_exit_1(command: list[str], package: str) -> None:
    pytest.importorskip(package)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(*command, str(port))
    assert result.returncode == 1, result.stderr
    expected = f"memory-core: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert result.stderr.splitlines() == [expected]


def test_serve_and_mcp_default_to_different_ports() -> None:
    pytest.importorskip("mcp")
    from memory_core.integrations.mcp_server import DEFAULT_PORT
    from memory_core.server.cli import DEFAULT_PORT as SERVE_PORT

    assert (SERVE_PORT, DEFAULT_PORT) == (8765, 8766)
    assert "default 8766" in run("mcp", "--help").stdout
