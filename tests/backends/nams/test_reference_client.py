"""The reference library's own NAMS client (neo4j-agent-memory 0.8.0) against the server,
side by side with portable names: both see the same conversations."""

from __future__ import annotations

import pytest

from memory_core.backends.nams.sessions import SESSION_KEY
from memory_core_dev.nams_server import API_KEY, NamsTestServer

reference = pytest.importorskip("neo4j_agent_memory.nams")
settings = pytest.importorskip("neo4j_agent_memory.config.settings")

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_reference_client_and_portable_names_share_conversations(
    nams_server: NamsTestServer, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    config = settings.NamsConfig(
        endpoint=nams_server.base_url, api_key=API_KEY, workspace_id=workspace
    )
    async with reference.NamsBackend.from_config(config) as client:
        memory = client.short_term
        made = await memory.create_conversation("ignored")
        cid = str(made.id)
        await memory.add_message(cid, "user", "from the reference client")
        async with nams_server.backend(workspace, session_names="portable") as ours:
            # A server id names its conversation in portable mode too.
            read = await ours.get_conversation(cid)
            assert [m.content for m in read.messages] == ["from the reference client"]
            await ours.add_message("by-name", "user", "from memory-core")
            [named] = [c for c in await ours.list_conversations() if c.session_id == "by-name"]
        listed = await memory.list_conversations()
        [raw] = [c for c in listed if c.metadata.get(SESSION_KEY) == "by-name"]
        theirs = await memory.get_conversation(str(raw.id))
        assert [m.content for m in theirs.messages] == ["from memory-core"]
        assert named.id != raw.id  # ours is the portable id; the server id stays usable
        await memory.clear_session(cid)
        await memory.clear_session(str(raw.id))
