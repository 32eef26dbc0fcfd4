"""What a new user hit first, fixed: the server checks the key before anything else,
has no CDN-backed ``/docs`` page, and ``memory-core serve`` fails in one line; the
adapter's authentication errors name the setting to fill in."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import AuthenticationError
from memory_core_dev.nams_server import API_KEY, NamsTestServer

pytestmark = pytest.mark.nams

ROOT = Path(__file__).resolve().parents[3]


def test_wrong_key_is_401_before_the_body_is_parsed(
    nams_server: NamsTestServer, workspace: str
) -> None:
    with nams_server.client(workspace, key="wrong-key") as c:
        bad_json = c.post(
            "/conversations", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        assert bad_json.status_code == 401
        assert bad_json.json()["error"]["code"] == "unauthorized"
        bad_body = c.post("/conversations/x/messages", json={"role": 7})
        assert bad_body.status_code == 401
        assert c.get("/conversations", params={"limit": 999}).status_code == 401
        assert c.get("/no/such/route").status_code == 401
    with nams_server.client(workspace) as c:  # with the right key the body is looked at
        bad_json = c.post(
            "/conversations", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        assert bad_json.status_code == 400
    [record] = [r for r in nams_server.records(workspace) if r.status == 400]
    assert record.path == "/v1/conversations"


def test_no_cdn_docs_page_and_openapi_is_served(nams_server: NamsTestServer) -> None:
    with nams_server.client() as c:
        base = str(c.base_url).rstrip("/").removesuffix("/v1")
        assert c.get(base + "/docs").status_code == 404
        spec = c.get(base + "/openapi.json")
        assert spec.status_code == 200 and "/v1/conversations" in spec.json()["paths"]


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NAMS_SERVER_API_KEYS": ""}
    return subprocess.run(
        [sys.executable, "-m", "memory_core.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("url", ["nosuch://", "bolt://127.0.0.1:1"])
def test_serve_on_a_bad_store_prints_one_line(url: str) -> None:
    done = _serve("serve", "--backend-url", url, "--port", "0")
    assert done.returncode == 1
    assert done.stdout == ""  # no "NAMS API on ..." banner for a server that never ran
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memory-core: error:"), done.stderr
    debug = _serve("--debug", "serve", "--backend-url", url, "--port", "0")
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    also = _serve("serve", "--debug", "--backend-url", url, "--port", "0")
    assert also.returncode == 1 and "Traceback" in also.stderr


@pytest.mark.anyio
async def test_authentication_errors_name_the_setting(
    nams_server: NamsTestServer, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AuthenticationError) as refused:
        async with nams_server.backend(workspace, api_key="not-a-key"):
            pass
    assert "MEMORY_API_KEY" in str(refused.value) and "api_key=" in str(refused.value)
    assert "not-a-key" not in str(refused.value)
    monkeypatch.delenv("MEMORY_API_KEY", raising=False)
    with pytest.raises(AuthenticationError) as missing:
        async with nams_server.backend(workspace, api_key=None):
            pass
    assert "no API key was given" in str(missing.value)
    assert "MEMORY_API_KEY" in str(missing.value)


def test_version_and_health_check(
    nams_server: NamsTestServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory_core import __version__
    from memory_core.cli import main

    with pytest.raises(SystemExit) as version:
        main(["--version"])
    assert version.value.code == 0
    assert capsys.readouterr().out.strip() == f"memory-core {__version__}"
    assert main(["capabilities", "memory://", "--check"]) == 0
    assert "ok: embedded" in capsys.readouterr().out
    monkeypatch.setenv("MEMORY_API_KEY", "wrong-key")
    assert main(["capabilities", nams_server.url, "--check"]) == 1
    err = capsys.readouterr().err
    assert "AuthenticationError" in err and "wrong-key" not in err
    monkeypatch.setenv("MEMORY_API_KEY", API_KEY)
    assert main(["capabilities", nams_server.url, "--check", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["backend"] == "nams"
    # An unreachable store: exit 1, one line.
    assert main(["capabilities", "nams+http://127.0.0.1:1/v1", "--check"]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.anyio
async def test_a_server_that_is_down_is_named_by_host_and_port() -> None:
    """A NAMS service that is not running: the error says where it looked, without the
    API key (credentials never go in the URL: refused when the backend is opened)."""
    from memory_core import TransportError, open_backend

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"nams+http://127.0.0.1:{port}/v1"
    memory = open_backend(url, api_key="key-secret", trust_env=False, max_retries=1, backoff=0.01)
    with pytest.raises(TransportError) as info:
        await memory.list_conversations()
    text = str(info.value)
    assert f"127.0.0.1:{port}" in text and "ConnectError" in text
    assert "key-secret" not in text
