"""Seeding: how the suite writes what the backend under test can read but not write.

A backend may read relationships (``entity_graph``) without writing them
(``relationships`` False): NAMS reads its entity graph but has no route that writes a
relationship. To check those reads, a test setup may provide a :class:`Seed` (override
the ``conformance_seed`` fixture of the suite class) that writes relationships into the
store behind the backend by another way; :meth:`Harness.link
<memory_core.conformance.harness.Harness.link>` uses it when the backend cannot write
them itself. Without one, scenarios that need such writes are not applicable.

:class:`AdminSeed` writes through the test-admin route ``POST /_admin/relationships`` of
the project's NAMS-compatible server (``memory-core serve --test-admin``): a route of test
servers only, never of the hosted service nor of memory-core's public API.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

import httpx

from memory_core import Relationship
from memory_core import nams_wire as wire


class Seed(ABC):
    """Writes into the store behind the backend under test, bypassing it."""

    @abstractmethod
    async def link(self, source_id: str, target_id: str, type: str, **options: Any) -> Relationship:
        """Add the relationship ``source_id`` ``type`` ``target_id`` (``options``:
        ``properties``, ``confidence``) where the backend under test reads it."""

    @abstractmethod
    async def close(self) -> None:
        """Release what the seed holds."""


class AdminSeed(Seed):
    """``POST /_admin/relationships`` of a NAMS-compatible test server, in the workspace
    the backend under test uses.

    ``url`` is the backend URL (``nams+http://host:port/v1``) or the base URL; ``api_key``
    a key the server accepts (default: ``MEMORY_API_KEY``; never shown).
    """

    def __init__(self, url: str, *, api_key: str | None = None, workspace: str | None) -> None:
        api_key = api_key or os.environ.get("MEMORY_API_KEY") or None
        base = url.removeprefix("nams+")
        self._route = base.rstrip("/").removesuffix(wire.API_PREFIX) + "/_admin/relationships"
        self._headers = {wire.AUTHORIZATION: f"Bearer {api_key}"} if api_key else {}
        if workspace:
            self._headers[wire.WORKSPACE_HEADER] = workspace
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"<AdminSeed {self._route}>"

    async def link(self, source_id: str, target_id: str, type: str, **options: Any) -> Relationship:
        if self._client is None:
            self._client = httpx.AsyncClient(trust_env=False, headers=self._headers)
        body = wire.RelationshipSeedIn(
            source_id=source_id, target_id=target_id, type=type, **options
        ).to_wire(omit_none=True)
        response = await self._client.post(self._route, json=body)
        response.raise_for_status()
        edge = wire.GraphEdge.model_validate_json(response.content)
        made = Relationship(
            id=edge.id,
            source_id=edge.source,
            target_id=edge.target,
            type=edge.type,
            properties=edge.properties or {},
            confidence=1.0 if edge.confidence is None else edge.confidence,
            valid_from=edge.valid_from,
            valid_until=edge.valid_until,
        )
        return (
            made
            if edge.created_at is None
            else made.model_copy(update={"created_at": edge.created_at})
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
