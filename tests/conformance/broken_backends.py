"""Embedded (``memory://``) backends that each break one rule a scenario must catch.

Registered by :mod:`tests.conformance.test_suite_catches` under ``cf-broken-…`` schemes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memory_core import Conversation, Message
from memory_core import requests as rq
from memory_core.backends.embedded import EmbeddedStore


class _Memory(EmbeddedStore):
    """A private in-memory store whatever the URL says."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__("memory://", **options)


class IgnoresEmbedder(_Memory):
    """Claims vector search but searches text only."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await super().search_messages(replace(req, query_embedding=None))


class IgnoresSince(_Memory):
    """Claims server_side_since but drops ``since`` (the contract then trusts the store and
    filters nothing; a store without the flag cannot break this: the contract filters)."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        return await super().get_conversation(replace(req, since=None))


class KeepsEntities(_Memory):
    """Entities work but cannot be deleted (as on NAMS)."""

    capabilities = replace(EmbeddedStore.capabilities, delete_entity=False)
