"""The adapter's pool: one connection reused for a backend's requests, closed with it,
and an idle connection dropped before the server closes it.

Found by the scale bench (issue 31): with both at 5 s (httpx's default keep-alive expiry
and the server's keep-alive timeout), a POST on a connection idle for about 5 s could be
written just as the server closed it: ``ReadError``, and a POST is never resent, so the
caller got a ``TransportError`` (once in about 10k conversation creations under load).
"""

from __future__ import annotations

import json

import pytest

from memory_core.backends.nams.transport import NamsTransport, RetryPolicy
from memory_core.server.connections import ConnectionLimits
from memory_core_dev.nams_server import API_KEY, NamsTestServer

pytestmark = pytest.mark.anyio


def unopened(
    url: str = "http://127.0.0.1:9/v1", api_key: str | None = None, workspace: str | None = None
) -> NamsTransport:
    """A transport to ``url`` (by default a closed port), its pool not opened yet."""
    return NamsTransport(
        url,
        api_key=api_key,
        workspace_id=workspace,
        timeout=5,
        connect_timeout=5,
        retry=RetryPolicy(),
    )


async def test_idle_connections_expire_before_the_servers_keep_alive_timeout() -> None:
    transport = unopened()
    await transport.open()
    try:
        assert transport._client is not None
        pool = transport._client._transport._pool  # type: ignore[attr-defined]
        # at least a second of margin: a loaded client may be that late
        assert pool._keepalive_expiry <= ConnectionLimits().keep_alive_timeout - 1
    finally:
        await transport.close()


async def test_a_backends_requests_one_after_another_share_one_connection(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace) as memory:
        mark = nams_server.mark()
        made = await memory.create_conversation("ignored")
        await memory.add_message(made.session_id, "user", "hi")
        await memory.get_conversation(made.session_id)
    sent = [r for r in nams_server.since(mark) if r.workspace == workspace]
    assert len(sent) == 4  # the create, the write, the header and the messages
    # one after the other, on one connection; the read's two requests go at once: one on
    # that connection, the other on a second one
    assert sent[0].client == sent[1].client
    assert len({r.client for r in sent}) == 2
    assert sent[0].client in {r.client for r in sent[2:]}


async def test_closing_closes_the_pool_and_a_transport_never_opened_closes_quietly() -> None:
    await unopened().close()
    transport = unopened()
    await transport.open()
    client = transport._client
    assert client is not None and not client.is_closed
    await transport.close()
    assert client.is_closed and transport._client is None


async def test_a_request_opens_the_pool_when_it_is_not_open(nams_server: NamsTestServer) -> None:
    transport = unopened(nams_server.url.removeprefix("nams+"), API_KEY, nams_server.workspace())
    try:
        body = await transport.send("GET", "/conversations", operation="t", params={"limit": 1})
        assert json.loads(body)["conversations"] == []
        assert transport._client is not None
    finally:
        await transport.close()
