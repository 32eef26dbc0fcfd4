"""``memory-core serve``: arguments, refusals and a real run in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from memory_core.cli import main

pytestmark = pytest.mark.nams

ROOT = Path(__file__).resolve().parents[2]


def test_help_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    assert "--backend-url" in capsys.readouterr().out
    assert main(["serve", "--port", "not-a-number"]) == 2
    assert "memory-core serve" in capsys.readouterr().err


def test_refuses_open_server_on_a_public_address(capsys: pytest.CaptureFixture[str]) -> None:
    env_keys = os.environ.pop("NAMS_SERVER_API_KEYS", None)
    try:
        assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 1
    finally:
        if env_keys is not None:
            os.environ["NAMS_SERVER_API_KEYS"] = env_keys
    err = capsys.readouterr().err
    assert "without API keys" in err and "Traceback" not in err


def test_bad_backend_url_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "--backend-url", "nosuchscheme://x", "--port", "0", "--api-key", "k"])
    assert code == 1
    err = capsys.readouterr().err
    assert "nosuchscheme" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("flag", [False, True])
def test_the_store_url_is_an_argument_as_in_every_command(
    capsys: pytest.CaptureFixture[str], flag: bool
) -> None:
    url_args = ["--backend-url", "nosuchscheme://x"] if flag else ["nosuchscheme://x"]
    assert main(["serve", *url_args, "--port", "0", "--api-key", "k"]) == 1
    assert "unknown backend scheme 'nosuchscheme'" in capsys.readouterr().err


def test_two_different_store_urls_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "memory://", "--backend-url", "sqlite:///x.db", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "URL or --backend-url" in err


def test_serves_requests_and_logs_one_line_each() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NAMS_SERVER_API_KEYS": ""}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memory_core.cli",
            "serve",
            "--port",
            "0",
            "--api-key",
            "cli-secret=team",
            "--fail-429",
            "1",
            "--retry-after",
            "3",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", banner)
        assert match, banner
        base = match.group(1)
        headers = {"Authorization": "Bearer cli-secret"}
        limited = httpx.get(base + "/conversations", headers=headers, timeout=30, trust_env=False)
        assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
        created = httpx.post(
            base + "/conversations", json={}, headers=headers, timeout=30, trust_env=False
        )
        assert created.status_code == 201
        assert created.json()["workspaceId"] == "team"
        assert httpx.get(base + "/conversations", timeout=30, trust_env=False).status_code == 401
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert process.returncode in (0, -15)
    lines = [line for line in err.splitlines() if "memory_core.server" in line]
    assert any("GET /v1/conversations 429" in line for line in lines)
    assert any("POST /v1/conversations 201" in line and "workspace=team" in line for line in lines)
    assert any("GET /v1/conversations 401" in line for line in lines)
    assert "cli-secret" not in err
