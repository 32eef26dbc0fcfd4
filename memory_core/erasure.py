"""Erasure: what :meth:`memory_core.MemoryBackend.forget_user` reports and logs.

A store's ``forget_user`` hook returns :class:`Erased` (counts per kind of record, plus
what it could not reach); the public method adds the scope and the duration, logs one
audit record on the ``memory_core.audit`` logger and returns an :class:`ErasureReport`.
The record holds counts, the scope, the backend's name and the duration: never content,
never a user identifier in clear, never a secret. It names the user by an HMAC-SHA256
keyed with ``MEMORY_CORE_AUDIT_KEY`` (a plain hash of a user id is reversed by hashing a
list of likely ids); without that key it does not name the user.

A hook call erases what the user has when it starts and says whether the user still has
records when it ends (:attr:`Erased.remaining`: the user's writers added them meanwhile).
:func:`forget` calls the hook again while that is so, :data:`PASSES` calls at most, so
an erasure returns even while those writers keep writing.

A dry run (:func:`preview`) deletes nothing: it counts the user's records with the
store's ``stats`` hook (see :mod:`memory_core.stats`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from . import requests as rq
from .stats import StoreStats

audit_log = logging.getLogger("memory_core.audit")

# Kinds every store counts (0 when it keeps no such record), in report order.
KINDS = (
    "conversations",
    "messages",
    "mentions",
    "entities",
    "idempotency_keys",
    "preferences",
    "facts",
    "relationships",
    "traces",
    "steps",
    "tool_calls",
)
PASSES = 3
"""Most calls of a store's ``forget_user`` hook in one erasure (see the module docstring)."""
AUDIT_KEY_ENV = "MEMORY_CORE_AUDIT_KEY"


@dataclass
class Erased:
    """What a store's ``forget_user`` removed: ``counts`` per kind (see :data:`KINDS`;
    a store may add kinds of its own) and ``not_reached``: what the store keeps for the
    user that this library cannot delete (one plain sentence each)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    not_reached: list[str] = field(default_factory=list)
    remaining: bool = False
    """Records of the user were still there when the hook ended (written while it ran):
    the hook is called again (see :data:`PASSES`)."""

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
    user, and the entities only they referenced). ``writes_continued`` is true when the
    user's records kept appearing while the erasure ran and some were still there at its
    end: stop the user's writers and call ``forget_user`` again. ``dry_run`` is true for
    ``forget_user(dry_run=True)``: nothing was deleted, and ``counts`` says what would go
    (``conversations``, ``messages`` and ``entities``, each where the backend can count
    it; mentions and idempotency keys go with their messages and are not counted).
    """

    model_config = ConfigDict(frozen=True)

    backend: str
    scope: Literal["tenant", "user"]
    counts: dict[str, int]
    not_reached: list[str] = []
    duration_seconds: float
    writes_continued: bool = False
    dry_run: bool = False

    @property
    def total(self) -> int:
        """Every record deleted, all kinds together."""
        return sum(self.counts.values())


def audit_key() -> bytes | None:
    """The key of the user names in audit records: ``MEMORY_CORE_AUDIT_KEY`` as UTF-8, or
    None when it is unset or empty. Read on each record, never kept or logged."""
    value = os.environ.get(AUDIT_KEY_ENV)
    return value.encode("utf-8") if value else None


def user_digest(user_identifier: str, key: bytes) -> str:
    """A stable name for a user in logs that only the key's holder can recompute: the
    first 32 hex digits of the HMAC-SHA256 of the identifier under ``key``."""
    return hmac.new(key, user_identifier.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def audit(operation: str, user_identifier: str | None, fields: dict[str, object]) -> None:
    """Log one structured record (a JSON object) of an erasure or expiry run at INFO on
    ``memory_core.audit``. ``fields`` hold counts, scope and durations only. The user is
    named by ``user_hmac`` when :func:`audit_key` has a key, else not at all."""
    record: dict[str, object] = {"event": operation}
    key = audit_key()
    if user_identifier is not None and key is not None:
        record["user_hmac"] = user_digest(user_identifier, key)
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
    async def stats(self, req: rq.Stats) -> StoreStats: ...


async def forget(store: Forgetting, user_identifier: str, batch_size: int) -> ErasureReport:
    """Run ``store.forget_user`` for one checked user, time it, log the audit record."""
    tenant = user_identifier if store.multi_tenant else None
    scope: Literal["tenant", "user"] = "tenant" if tenant is not None else "user"
    request = rq.ForgetUser(
        scope=rq.Scope(user_identifier=user_identifier, tenant=tenant), batch_size=batch_size
    )
    started = time.perf_counter()
    erased = await _passes(store, request)
    report = ErasureReport(
        backend=store.name,
        scope=scope,
        counts=dict(erased.counts),
        not_reached=list(erased.not_reached),
        duration_seconds=round(time.perf_counter() - started, 6),
        writes_continued=erased.remaining,
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
            "writes_continued": report.writes_continued,
        },
    )
    return report


async def preview(store: Forgetting, user_identifier: str) -> ErasureReport:
    """What :func:`forget` would delete for one checked user, counted by the store's
    ``stats`` hook: nothing is deleted. The audit record says ``dry_run``."""
    scope: Literal["tenant", "user"] = "tenant" if store.multi_tenant else "user"
    started = time.perf_counter()
    found = await store.stats(rq.Stats(user=user_identifier))
    row = found.users[0] if found.users else None
    counts = {
        kind: value
        for kind, value in (
            ("conversations", row.conversations if row else 0),
            ("messages", row.messages if row else 0),
            ("entities", row.entities if row else 0),
        )
        if value is not None
    }
    report = ErasureReport(
        backend=store.name,
        scope=scope,
        counts=counts,
        duration_seconds=round(time.perf_counter() - started, 6),
        dry_run=True,
    )
    audit(
        "forget_user",
        user_identifier,
        {
            "backend": report.backend,
            "scope": report.scope,
            "counts": report.counts,
            "duration_seconds": report.duration_seconds,
            "dry_run": True,
        },
    )
    return report


async def _passes(store: Forgetting, request: rq.ForgetUser) -> Erased:
    """The store's hook, called again while the user's writers left records behind
    (:data:`PASSES` calls at most); the counts of every call summed."""
    total = Erased(counts={})
    for _ in range(PASSES):
        erased = await store.forget_user(request)
        for kind, count in erased.counts.items():
            total.add(kind, count)
        total.not_reached += [n for n in erased.not_reached if n not in total.not_reached]
        total.remaining = erased.remaining
        if not erased.remaining:
            break
    return total
