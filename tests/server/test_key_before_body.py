"""The server checks the API key before it looks at anything else of a request: a wrong
or missing key with a malformed body is 401, not 400 or 422."""

from __future__ import annotations

import httpx
import pytest

from memory_core_dev.nams_server import NamsTestServer

UNKNOWN = "00000000-0000-4000-8000-000000000000"
MALFORMED = [b"{not json", b'{"metadata": 5}', b"\xff\xfe", b"[" * 5000]


@pytest.mark.parametrize("body", MALFORMED, ids=["not json", "wrong type", "not utf-8", "deep"])
@pytest.mark.parametrize("auth", [{}, {"Authorization": "Bearer wrong-key"}], ids=["none", "wrong"])
def test_a_bad_key_with_a_malformed_body_is_401(
    nams_server: NamsTestServer, body: bytes, auth: dict[str, str]
) -> None:
    json_type = {"Content-Type": "application/json"}
    with httpx.Client(base_url=nams_server.base_url, trust_env=False) as http:
        for path in ("/conversations", "/entities", f"/conversations/{UNKNOWN}/messages"):
            response = http.post(path, content=body, headers={**json_type, **auth})
            assert response.status_code == 401, (path, response.text)
            assert response.json()["error"]["code"] == "unauthorized"
        # the same body with the right key is refused as a bad request
        keyed = http.post(
            "/conversations", content=body, headers={**json_type, **nams_server.headers()}
        )
    assert keyed.status_code == 400, keyed.text
