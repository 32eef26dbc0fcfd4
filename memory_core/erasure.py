"""Erasure: what :meth:`memory_core.MemoryBackend.forget_user` reports and logs.

A store's ``forget_user`` hook returns :class:`Erased` (counts per kind of record, plus
what it could not reach); the public method adds the scope and the duration, logs one
audit record on the ``memory_core.audit`` logger and returns an :class:`ErasureReport`.
The record holds counts, the scope, the backend's name and the duration: never content,
never a user identifier in clear (its SHA-256 prefix names the run), never a secret.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from . import requests as rq

audit_log = logging.getLogger("memory_core.audit")

# Kinds every store counts (0 when it keeps no such record), in report order.
KINDS = ("conversations", "messages", "mentions", "entities", "idempotency_keys")


@dataclass
class Erased:
    """What a store's ``forget_user`` removed: ``counts`` per kind (see :data:`KINDS`;
    a store may add kinds of its own) and ``not_reached``: what the store keeps for the
    user that this library cannot delete (one plain sentence each)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    not_reached: list[str] = field(default_factory=list)

    def add(self, kind: str, count: int) -> None:
        """Count ``count`` more records of ``kind``."""
        self.counts[kind] = self.counts.get(kind, 0) + count


class ErasureReport(BaseModel):
    """The result of :meth:`memory_core.MemoryBackend.forget_user`.

    ``counts`` maps each kind of record (``conversations``, ``messages``, ``mentions``,
    ``entities``, ``idempotency_keys``, and any a backend adds) to how many this run
    deleted: a re-run after a complete one reports zeros. ``not_reached`` lists what the
    backend's service keeps for the user that the library cannot delete (empty when
    everything was reached). ``scope`` is ``"tenant"`` on a multi-tenant backend (every
    record of that tenant) and ``"user"`` otherwise (the conversations recorded for that
    user, and the entities only they referenced).
    """

    model_config = ConfigDict(frozen=True)

    backend: str
    scope: Literal["tenant", "user"]
    counts: dict[str, int]
    not_reached: list[str] = []
    duration_seconds: float

    @property
    def total(self) -> int:
        """Every record deleted, all kinds together."""
        return sum(self.counts.values())


def user_digest(user_identifier: str) -> str:
    """A short, stable name for a user in logs: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(user_identifier.encode("utf-8")).hexdigest()[:16]


def audit(operation: str, user_identifier: str | None, fields: dict[str, object]) -> None:
    """Log one structured record (a JSON object) of an erasure or expiry run at INFO on
    ``memory_core.audit``. ``fields`` hold counts, scope and durations only."""
    record: dict[str, object] = {"event": operation}
    if user_identifier is not None:
        record["user_sha256"] = user_digest(user_identifier)
    record.update(fields)
    audit_log.info(json.dumps(record, sort_keys=True), extra={"memory_core_audit": record})


class Forgetting(Protocol):
    """What an erasure uses of a :class:`~memory_core.interface.Store`, whose hook returns
    :class:`Erased` (named here, not imported: the two would import each other)."""

    @property
    def name(self) -> str: ...
    @property
    def multi_tenant(self) -> bool: ...
    async def forget_user(self, req: rq.ForgetUser) -> Erased: ...


async def forget(store: Forgetting, user_identifier: str, batch_size: int) -> ErasureReport:
    """Run ``store.forget_user`` for one checked user, time it, log the audit record."""
    tenant = user_identifier if store.multi_tenant else None
    scope: Literal["tenant", "user"] = "tenant" if tenant is not None else "user"
    request = rq.ForgetUser(
        scope=rq.Scope(user_identifier=user_identifier, tenant=tenant), batch_size=batch_size
    )
    started = time.perf_counter()
    erased = await store.forget_user(request)
    report = ErasureReport(
        backend=store.name,
        scope=scope,
        counts=dict(erased.counts),
        not_reached=list(erased.not_reached),
        duration_seconds=round(time.perf_counter() - started, 6),
    )
    audit(
        "forget_user",
        user_identifier,
        {
            "backend": report.backend,
            "scope": report.scope,
            "counts": report.counts,
            "not_reached": len(report.not_reached),
            "duration_seconds": report.duration_seconds,
        },
    )
    return report
