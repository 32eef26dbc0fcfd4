"""Session markers: proof that a conversation carrying a portable session name was made
by a client holding the session secret.

With a secret (option ``session_secret``, else :data:`ENV_SESSION_SECRET`), every
conversation the adapter creates for a name also carries, under :data:`MARK_KEY`,
``"v1:<ms>:<hex>"``: the creating client's clock in Unix milliseconds and
HMAC-SHA256(secret, canonical(user, name, ms)). A conversation counts as named only
when its marker verifies and the service's ``createdAt`` lies within :data:`WINDOW`
seconds of ``ms``. Whoever holds the workspace key but not the secret cannot make a
conversation a lookup chooses.

The hosted contract cannot update metadata, so the service's id cannot go into the
marker; the time window stands in for it. What stays possible:

* A marker copied into a new conversation of the same user within :data:`WINDOW` of
  the original's creation verifies. The copy is newer, so it is never chosen while the
  original exists (the oldest wins); once the original is deleted (by its owner's
  ``clear_session``, or by anyone holding the workspace key) the copy is chosen. A copy
  made later never verifies.
* The workspace is not bound: a marker copied into another workspace that uses the
  same secret verifies there under the same condition. Use a secret per workspace.
* The creating client's clock must be within :data:`WINDOW` of the service's: a
  conversation the service stamps outside it is withdrawn and the write fails.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from memory_core.store import ConfigurationError

MARK_KEY = "memory_core_session_mac"
"""The conversation-metadata key that holds the marker of the session name."""
ENV_SESSION_SECRET = "MEMORY_SESSION_SECRET"
"""The environment variable read when ``session_secret`` is not passed."""
WINDOW = 300.0
"""Seconds a marker's time may differ from the conversation's ``createdAt``."""
_VERSION = "v1"
_DOMAIN = "memory-core/nams-session/v1"


def now_ms() -> int:
    """This machine's clock in Unix milliseconds (the time a new marker carries)."""
    return time.time_ns() // 1_000_000


class SessionSecret:
    """The secret that marks and verifies session names; never shown (``repr`` hides
    it, pickling refuses, and no error or log message includes it)."""

    __slots__ = ("_key",)

    def __init__(self, secret: str | bytes) -> None:
        self._key = secret.encode() if isinstance(secret, str) else bytes(secret)

    def __repr__(self) -> str:
        return "SessionSecret(***)"

    def __reduce__(self) -> Any:
        raise TypeError("a SessionSecret is not pickled (it would write the secret out)")

    def _digest(self, user: str | None, name: str, at: int) -> str:
        message = json.dumps([_DOMAIN, user or "", name, at], ensure_ascii=False)
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()

    def mark(self, user: str | None, name: str) -> str:
        """A new marker of session ``name`` of ``user``, stamped with the clock now."""
        at = now_ms()
        return f"{_VERSION}:{at}:{self._digest(user, name, at)}"

    def verifies(
        self,
        metadata: Mapping[str, Any],
        user: str | None,
        name: str,
        created: datetime | None,
    ) -> bool:
        """True when ``metadata`` carries a marker of ``name`` of ``user`` stamped within
        :data:`WINDOW` of ``created`` (the conversation's ``createdAt``)."""
        given = metadata.get(MARK_KEY)
        if not isinstance(given, str) or created is None:
            return False
        version, _, rest = given.partition(":")
        stamp, _, digest = rest.partition(":")
        if version != _VERSION or not (stamp.isascii() and stamp.isdigit() and len(stamp) < 16):
            return False
        at = int(stamp)
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        if abs(created.timestamp() - at / 1000) > WINDOW:
            return False
        return hmac.compare_digest(digest.encode(), self._digest(user, name, at).encode())

    def fingerprint(self) -> str:
        """A value derived from the secret that tells secrets apart without revealing
        one (it scopes the rows of the session index file)."""
        digest = hmac.new(self._key, b"memory-core/nams-session-index", hashlib.sha256)
        return digest.hexdigest()[:32]


def load_secret(value: object, *, portable: bool) -> SessionSecret | None:
    """The ``session_secret`` option (else :data:`ENV_SESSION_SECRET`, read only in
    portable mode) as a :class:`SessionSecret`; ``None`` when neither is set."""
    if value is None:
        value = os.environ.get(ENV_SESSION_SECRET) if portable else None
        if not value:
            return None
    elif not portable:
        raise ConfigurationError("nams backend: session_secret needs session_names='portable'")
    if not isinstance(value, str | bytes) or not value.strip():
        raise ConfigurationError(
            f"nams backend: session_secret must be a non-empty string (or set {ENV_SESSION_SECRET})"
        )
    return SessionSecret(value)
