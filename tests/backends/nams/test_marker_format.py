"""The session marker's format, which every client of a workspace must agree on (also
across versions of this library): ``v1:<ms>:<hex>``, the hex being HMAC-SHA256 of the
secret over the JSON array ``["memory-core/nams-session/v1", user or "", name, ms]``
(UTF-8, non-ASCII kept); and the index scope's fingerprint."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory_core.backends.nams import marker
from memory_core.backends.nams.marker import MARK_KEY, SessionSecret

AT = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms
CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def expected(secret: bytes, user: str | None, name: str, at: int = AT) -> str:
    canonical = json.dumps(
        ["memory-core/nams-session/v1", user or "", name, at], ensure_ascii=False
    )
    digest = hmac.new(secret, canonical.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"v1:{at}:{digest}"


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marker, "now_ms", lambda: AT)


@pytest.mark.parametrize(("user", "name"), [("ada", "s1"), (None, "s1"), ("zoë", "naïve 名前")])
def test_a_marker_is_the_documented_hmac(user: str | None, name: str) -> None:
    for secret in ("k-secret", b"k-secret"):
        made = SessionSecret(secret).mark(user, name)
        assert made == expected(b"k-secret", user, name)
        assert SessionSecret(secret).verifies({MARK_KEY: made}, user, name, CREATED)


def test_created_at_in_any_zone_or_none_is_compared_as_an_instant() -> None:
    secret = SessionSecret("k")
    made = {MARK_KEY: secret.mark("ada", "s")}
    plus_five = CREATED.astimezone(timezone(timedelta(hours=5)))
    assert secret.verifies(made, "ada", "s", plus_five)
    assert secret.verifies(made, "ada", "s", CREATED.replace(tzinfo=None))  # naive: UTC
    assert secret.verifies(made, "ada", "s", CREATED + timedelta(seconds=299))
    assert not secret.verifies(made, "ada", "s", CREATED + timedelta(seconds=301))
    assert not secret.verifies(made, "bob", "s", CREATED)


def test_the_fingerprint_is_an_hmac_of_a_fixed_label_and_hides_the_secret() -> None:
    label = b"memory-core/nams-session-index"
    want = hmac.new(b"k-secret", label, hashlib.sha256).hexdigest()[:32]
    assert (
        SessionSecret("k-secret").fingerprint() == want == SessionSecret(b"k-secret").fingerprint()
    )
    assert "k-secret" not in repr(SessionSecret("k-secret"))
