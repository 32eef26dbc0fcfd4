"""Embedded (``memory://``) backends that each break one rule a scenario must catch.

Registered by :mod:`tests.conformance.test_suite_catches` under ``cf-broken-…`` schemes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, ClassVar

from backends.embedded import EmbeddedBackend
from memory_core import Capabilities, Conversation, Message
from memory_core import requests as rq


class _Memory(EmbeddedBackend):
    """A private in-memory store whatever the URL says."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__("memory://", **options)


class IgnoresEmbedder(_Memory):
    """Claims vector search but searches text only."""

    async def _search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await super()._search_messages(replace(req, query_embedding=None))


class IgnoresSince(_Memory):
    """server_side_since is False, and ``since`` is dropped instead of filtering the page."""

    capabilities: ClassVar[Capabilities] = replace(
        EmbeddedBackend.capabilities, server_side_since=False
    )

    async def get_conversation(
        self,
        session_id: str | None = None,
        *,
        conversation_id: Any = None,
        limit: int | None = None,
        since: datetime | None = None,
        user_identifier: str | None = None,
    ) -> Conversation:
        return await super().get_conversation(
            session_id,
            conversation_id=conversation_id,
            limit=limit,
            user_identifier=user_identifier,
        )


class KeepsEntities(_Memory):
    """Entities work but cannot be deleted (as on NAMS)."""

    capabilities: ClassVar[Capabilities] = replace(
        EmbeddedBackend.capabilities, delete_entity=False
    )
