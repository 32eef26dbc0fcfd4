"""The adapter's pool drops an idle connection before the server closes it.

Found by the scale bench (issue 31): with both at 5 s (httpx's default keep-alive expiry
and the server's keep-alive timeout), a POST on a connection idle for about 5 s could be
written just as the server closed it: ``ReadError``, and a POST is never resent, so the
caller got a ``TransportError`` (once in about 10k conversation creations under load).
"""

from __future__ import annotations

import pytest

from memory_core.backends.nams.transport import NamsTransport, RetryPolicy
from memory_core.server.connections import ConnectionLimits

pytestmark = pytest.mark.anyio


async def test_idle_connections_expire_before_the_servers_keep_alive_timeout() -> None:
    transport = NamsTransport(
        "http://127.0.0.1:9/v1",
        api_key=None,
        workspace_id=None,
        timeout=5,
        connect_timeout=5,
        retry=RetryPolicy(),
    )
    await transport.open()
    try:
        assert transport._client is not None
        pool = transport._client._transport._pool  # type: ignore[attr-defined]
        # at least a second of margin: a loaded client may be that late
        assert pool._keepalive_expiry <= ConnectionLimits().keep_alive_timeout - 1
    finally:
        await transport.close()
