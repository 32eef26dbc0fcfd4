"""Erasure bookkeeping: ``Erased`` counts, ``ErasureReport``, the user digest, the audit
record, and ``forget()`` over a fake store (no real backend)."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

import pytest
from pydantic import ValidationError

from memory_core import requests as rq
from memory_core.erasure import (
    AUDIT_KEY_ENV,
    KINDS,
    PASSES,
    Erased,
    ErasureReport,
    Forgetting,
    audit,
    audit_key,
    forget,
    user_digest,
)

AUDIT = "memory_core.audit"
KEY = "a-secret-audit-key-0123456789"


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> bytes:
    """An audit key in the environment, as an operator sets it."""
    monkeypatch.setenv(AUDIT_KEY_ENV, KEY)
    return KEY.encode()


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


def test_user_digest_is_the_keyed_hmac_prefix_and_stable() -> None:
    key = KEY.encode()
    digest = user_digest("alice@example.com", key)
    mac = hmac.new(key, b"alice@example.com", hashlib.sha256).hexdigest()
    assert digest == mac[:32]
    assert user_digest("alice@example.com", key) == digest
    assert user_digest("bob@example.com", key) != digest
    assert user_digest("alice@example.com", b"another key") != digest
    assert user_digest("é", key) == hmac.new(key, "é".encode(), hashlib.sha256).hexdigest()[:32]


def test_the_plain_sha256_of_a_user_is_nowhere_in_the_record(
    caplog: pytest.LogCaptureFixture, keyed: bytes
) -> None:
    """An unsalted hash was reversed by hashing a list of likely user ids."""
    with caplog.at_level(logging.INFO, logger=AUDIT):
        audit("forget_user", "alice@example.com", {"scope": "user"})
    text = caplog.records[-1].getMessage()
    assert hashlib.sha256(b"alice@example.com").hexdigest()[:16] not in text
    assert "user_sha256" not in text and KEY not in text


def test_the_audit_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AUDIT_KEY_ENV, raising=False)
    assert audit_key() is None
    monkeypatch.setenv(AUDIT_KEY_ENV, "")
    assert audit_key() is None
    monkeypatch.setenv(AUDIT_KEY_ENV, "clé")
    assert audit_key() == "clé".encode()


def test_audit_logs_one_json_record_without_the_user_in_clear(
    caplog: pytest.LogCaptureFixture, keyed: bytes
) -> None:
    with caplog.at_level(logging.INFO, logger=AUDIT):
        audit("forget_user", "alice@example.com", {"counts": {"messages": 3}, "scope": "user"})
    [record] = [r for r in caplog.records if r.name == AUDIT]
    assert record.levelno == logging.INFO
    assert "alice" not in record.getMessage()
    body = json.loads(record.getMessage())
    assert body == {
        "event": "forget_user",
        "user_hmac": user_digest("alice@example.com", keyed),
        "counts": {"messages": 3},
        "scope": "user",
    }
    assert record.memory_core_audit == body  # type: ignore[attr-defined]


def test_without_a_key_the_record_does_not_name_the_user(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(AUDIT_KEY_ENV, raising=False)
    with caplog.at_level(logging.INFO, logger=AUDIT):
        audit("forget_user", "alice@example.com", {"scope": "user"})
    assert _audit_records(caplog) == [{"event": "forget_user", "scope": "user"}]


def test_audit_without_a_user_has_no_digest(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=AUDIT):
        audit("expire_conversations", None, {"scope": "all"})
    assert _audit_records(caplog) == [{"event": "expire_conversations", "scope": "all"}]


class FakeStore:
    """What ``forget`` uses of a store: a name, multi_tenant, and the hook."""

    name = "fake"

    def __init__(self, multi_tenant: bool, *erased: Erased) -> None:
        self.multi_tenant = multi_tenant
        self.erased = erased[0]
        self.answers = list(erased)
        self.requests: list[rq.ForgetUser] = []

    async def forget_user(self, req: rq.ForgetUser) -> Erased:
        self.requests.append(req)
        return self.answers[min(len(self.requests), len(self.answers)) - 1]


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
    caplog: pytest.LogCaptureFixture,
    keyed: bytes,
    multi_tenant: bool,
    tenant: str | None,
    scope: str,
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
    assert body["user_hmac"] == user_digest("alice", keyed)
    assert report.writes_continued is False and body["writes_continued"] is False
    assert body["scope"] == scope and body["backend"] == "fake"
    assert body["counts"] == report.counts
    assert body["not_reached"] == 1  # how many, never what
    assert "alice" not in json.dumps(body)


def _left_behind(messages: int) -> Erased:
    """What a hook returns when the user's writers added records while it ran."""
    erased = Erased(not_reached=["backups"], remaining=True)
    erased.add("messages", messages)
    return erased


@pytest.mark.anyio
async def test_the_hook_runs_again_while_writes_left_records_then_the_report_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FakeStore(False, _left_behind(5), _left_behind(2), _left_behind(1), Erased())
    with caplog.at_level(logging.INFO, logger=AUDIT):
        report = await forget(store, "alice", batch_size=50)
    assert len(store.requests) == PASSES == 3
    assert report.writes_continued is True
    assert report.counts["messages"] == 8 and report.not_reached == ["backups"]
    [body] = _audit_records(caplog)
    assert body["writes_continued"] is True and body["counts"]["messages"] == 8


@pytest.mark.anyio
async def test_a_pass_that_leaves_nothing_ends_the_erasure() -> None:
    done = Erased()
    done.add("messages", 1)
    store = FakeStore(True, _left_behind(4), done)
    report = await forget(store, "alice", batch_size=50)
    assert len(store.requests) == 2
    assert report.writes_continued is False and report.counts["messages"] == 5
