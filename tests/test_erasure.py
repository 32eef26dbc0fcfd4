"""Erasure bookkeeping: ``Erased`` counts, ``ErasureReport``, the user digest, the audit
record, and ``forget()`` over a fake store (no real backend)."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest
from pydantic import ValidationError

from memory_core import requests as rq
from memory_core.erasure import (
    KINDS,
    Erased,
    ErasureReport,
    Forgetting,
    audit,
    forget,
    user_digest,
)

AUDIT = "memory_core.audit"


def _audit_records(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == AUDIT]


def test_erased_starts_with_zero_of_every_kind() -> None:
    erased = Erased()
    assert list(erased.counts) == list(KINDS)
    assert set(erased.counts.values()) == {0}
    assert erased.not_reached == []
    assert Erased().counts is not erased.counts  # no shared default


def test_erased_add_sums_per_kind_and_accepts_new_kinds() -> None:
    erased = Erased()
    erased.add("messages", 3)
    erased.add("messages", 4)
    erased.add("vectors", 2)
    assert erased.counts["messages"] == 7
    assert erased.counts["vectors"] == 2
    assert erased.counts["conversations"] == 0


def test_the_report_total_sums_every_kind() -> None:
    report = ErasureReport(
        backend="x",
        scope="user",
        counts={"conversations": 2, "messages": 9, "custom": 1},
        duration_seconds=0.5,
    )
    assert report.total == 12
    assert report.not_reached == []
    assert ErasureReport(backend="x", scope="tenant", counts={}, duration_seconds=0).total == 0


def test_the_report_is_frozen_and_its_scope_checked() -> None:
    report = ErasureReport(backend="x", scope="user", counts={}, duration_seconds=0)
    with pytest.raises(ValidationError):
        report.backend = "y"
    with pytest.raises(ValidationError):
        ErasureReport(backend="x", scope="everyone", counts={}, duration_seconds=0)  # type: ignore[arg-type]


def test_user_digest_is_the_sha256_prefix_and_stable() -> None:
    digest = user_digest("alice@example.com")
    assert digest == hashlib.sha256(b"alice@example.com").hexdigest()[:16]
    assert len(digest) == 16
    assert user_digest("alice@example.com") == digest
    assert user_digest("bob@example.com") != digest
    assert user_digest("é") == hashlib.sha256("é".encode()).hexdigest()[:16]


def test_audit_logs_one_json_record_without_the_user_in_clear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger=AUDIT):
        audit("forget_user", "alice@example.com", {"counts": {"messages": 3}, "scope": "user"})
    [record] = [r for r in caplog.records if r.name == AUDIT]
    assert record.levelno == logging.INFO
    assert "alice" not in record.getMessage()
    body = json.loads(record.getMessage())
    assert body == {
        "event": "forget_user",
        "user_sha256": user_digest("alice@example.com"),
        "counts": {"messages": 3},
        "scope": "user",
    }
    assert record.memory_core_audit == body  # type: ignore[attr-defined]


def test_audit_without_a_user_has_no_digest(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=AUDIT):
        audit("expire_conversations", None, {"scope": "all"})
    assert _audit_records(caplog) == [{"event": "expire_conversations", "scope": "all"}]


class FakeStore:
    """What ``forget`` uses of a store: a name, multi_tenant, and the hook."""

    name = "fake"

    def __init__(self, multi_tenant: bool, erased: Erased) -> None:
        self.multi_tenant = multi_tenant
        self.erased = erased
        self.requests: list[rq.ForgetUser] = []

    async def forget_user(self, req: rq.ForgetUser) -> Erased:
        self.requests.append(req)
        return self.erased


def _erased() -> Erased:
    erased = Erased(not_reached=["the service's own backups"])
    erased.add("conversations", 2)
    erased.add("messages", 5)
    erased.add("vectors", 1)
    return erased


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("multi_tenant", "tenant", "scope"), [(True, "alice", "tenant"), (False, None, "user")]
)
async def test_forget_scopes_the_request_and_reports_what_the_store_erased(
    caplog: pytest.LogCaptureFixture, multi_tenant: bool, tenant: str | None, scope: str
) -> None:
    store = FakeStore(multi_tenant, _erased())
    fake: Forgetting = store
    with caplog.at_level(logging.INFO, logger=AUDIT):
        report = await forget(fake, "alice", batch_size=50)
    [request] = store.requests
    assert request.scope == rq.Scope(user_identifier="alice", tenant=tenant)
    assert request.batch_size == 50
    assert (request.user_identifier, request.tenant) == ("alice", tenant)
    assert report.backend == "fake"
    assert report.scope == scope
    assert report.counts == store.erased.counts
    assert report.counts is not store.erased.counts  # a copy
    assert report.not_reached == ["the service's own backups"]
    assert report.total == 8
    assert report.duration_seconds >= 0
    [body] = _audit_records(caplog)
    assert body["event"] == "forget_user"
    assert body["user_sha256"] == user_digest("alice")
    assert body["scope"] == scope and body["backend"] == "fake"
    assert body["counts"] == report.counts
    assert body["not_reached"] == 1  # how many, never what
    assert "alice" not in json.dumps(body)
