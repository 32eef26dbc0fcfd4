"""An import into a multi-tenant Bolt graph where another writer left a conversation of
another tenant under the very id the import would give: the import never takes it over
(a multi-tenant id is derived from the tenant and session, so only a foreign writer can
have put it there); the conversation and its messages are skipped and counted."""

from __future__ import annotations

from collections.abc import Callable
from uuid import uuid4

import pytest

from memory_core import MemoryBackend
from memory_core.archive.hooks import FOREIGN_ID, NOT_CARRIED
from memory_core.backends.bolt.records import session_uuid
from memory_core.transfer import import_memory
from tests.reliability.archives import archive, conversation, message

from .helpers import Graph

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


async def test_an_id_another_tenant_holds_is_never_taken_with_its_messages(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    alice, bob, session, text = unique("alice"), unique("bob"), unique("s"), unique("text")
    own = str(session_uuid(alice, session))  # the id alice's session takes in this graph
    graph(
        "CREATE (:Conversation {id: $id, session_id: 'planted', user_identifier: $bob})",
        id=own,
        bob=bob,
    )
    lines = archive(conversation(own, session, alice), message(str(uuid4()), own, text))
    report = await import_memory(tenant_bolt, lines)
    assert dict(report.skipped) == {("conversation", FOREIGN_ID): 1, ("message", NOT_CARRIED): 1}
    assert not report.copied["conversation"] and not report.copied["message"]
    [held] = graph(
        "MATCH (c:Conversation {id: $id}) "
        "RETURN c.user_identifier AS user, c.session_id AS session, "
        "COUNT { (c)-[:HAS_MESSAGE]->() } AS messages",
        id=own,
    )
    assert held == {"user": bob, "session": "planted", "messages": 0}
    assert not graph("MATCH (m:Message {content: $text}) RETURN m.id AS id", text=text)
