"""HTTP for the NAMS adapter: one keep-alive pool, retries, and status → error mapping.

Retry rules (the reference retried any POST on any network error, which can store a
message twice):

* a request that certainly never reached the server (connect error, connect timeout,
  pool timeout) is retried whatever its method;
* ``429`` and ``503`` are retried whatever the method: the service answered that it did
  not process the request. ``Retry-After`` (seconds or an HTTP date) is honoured; one
  above ``max_retry_after`` is not waited for: the error is raised at once;
* ``GET`` and ``DELETE`` (idempotent) are also retried after read errors, timeouts,
  dropped connections, ``502`` and ``504``;
* a ``POST`` that may have reached the server is never sent again: the caller gets a
  :class:`~memory_core.errors.TransportError` and decides. A ``POST`` answered with a 5xx
  other than ``503`` (``500``, ``502``, ``504``: the service, or a proxy, may have stored
  it before failing) raises one with ``maybe_applied=True``.

Waits use jittered exponential backoff (full jitter, capped by ``max_backoff``) when the
server gives no ``Retry-After``; with one, the wait is that value plus up to 10 %.

Proxies: with ``trust_env`` the proxy variables (``HTTPS_PROXY``, ``NO_PROXY`` …) apply,
except to a loopback base URL, which is always reached directly (as Go's HTTP client
does): a proxy cannot reach the caller's own loopback interface, and a forgotten
``NO_PROXY`` must not send local traffic off the machine.
"""

from __future__ import annotations

import ipaddress
import json as jsonlib
import logging
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, TypedDict

import anyio
import httpx

from memory_core.store import (
    VERSION,
    AuthenticationError,
    ConfigurationError,
    InvalidRequestError,
    NotSupportedError,
    RateLimitedError,
    TransportError,
    http_call,
)
from memory_core.store import nams_wire as wire

if TYPE_CHECKING:
    from typing_extensions import Unpack


class RequestParts(TypedDict, total=False):
    """What a request carries besides its method and route (all optional)."""

    params: dict[str, Any] | None
    """Query parameters."""
    json: Any
    """A body to send as JSON."""
    content: bytes | None
    """A body that is already JSON (sent as ``application/json``), instead of ``json``."""


log = logging.getLogger("memory_core.backends.nams")
ENV_API_KEY = "MEMORY_API_KEY"
ENV_WORKSPACE = "MEMORY_WORKSPACE_ID"

USER_AGENT = f"memory-core-nams/{VERSION}"
"""Sent as ``User-Agent`` on every request."""

IDEMPOTENT = frozenset({"GET", "HEAD", "DELETE", "PUT", "OPTIONS"})
# Never sent: safe to retry for any method.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRY_ALWAYS = frozenset({429, 503})
_RETRY_IDEMPOTENT = frozenset({502, 504})
_JSON_BODY = {"Content-Type": "application/json"}
# The argument a 400 error code names (the error says which argument was wrong).
_ARGUMENT_OF_CODE: dict[str, str] = {
    wire.ErrorCode.INVALID_LIMIT: "limit",
    wire.ErrorCode.INVALID_CURSOR: "cursor",
}


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry.

    ``max_retries`` extra attempts after the first; ``backoff`` the first backoff step in
    seconds (doubled per attempt, capped by ``max_backoff``); ``max_retry_after`` the
    longest ``Retry-After`` the client is willing to wait for.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None:
            return retry_after * (1.0 + random.uniform(0.0, 0.1))
        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return random.uniform(0.0, ceiling)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ``::1``, and
    ``::ffff:127.x.y.z``, with or without a zone index such as ``::1%lo``); ``host``
    may carry IPv6 brackets."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


KEEPALIVE_EXPIRY = 3.0
"""Seconds an idle pooled connection is kept: below the keep-alive timeout of common
servers (uvicorn's and ``memory-core serve``'s 5 s), so the client drops it first. At the
same value a request could be written as the server closed the connection, and a POST
that may have arrived is never resent."""


def direct_mounts(base_url: str) -> dict[str, None]:
    """httpx mounts that reach a loopback ``base_url`` without any proxy (else none)."""
    host = httpx.URL(base_url).host
    if not is_loopback(host):
        return {}
    return {f"all://[{host}]" if ":" in host else f"all://{host}": None}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date), else ``None``."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


class NamsTransport:
    """An ``httpx.AsyncClient`` (HTTP/1.1 keep-alive, one pool) plus retry and error rules.

    ``backend`` names the backend in errors. The API key is sent as a bearer token and
    never appears in a repr, a log line or an error message.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        workspace_id: str | None,
        timeout: float,
        connect_timeout: float,
        retry: RetryPolicy,
        http_transport: httpx.AsyncBaseTransport | None = None,
        trust_env: bool = True,
        backend: str = "nams",
    ) -> None:
        self.base_url = base_url
        self.workspace_id = workspace_id
        self.retry = retry
        self.backend = backend
        self._api_key = api_key
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self._http_transport = http_transport
        self._trust_env = trust_env
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"<NamsTransport {self.base_url}>"

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if self._api_key:
            headers[wire.AUTHORIZATION] = f"Bearer {self._api_key}"
        if self.workspace_id:
            headers[wire.WORKSPACE_HEADER] = self.workspace_id
        return headers

    async def open(self) -> None:
        """Create the connection pool (no request is made)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._headers(),
                timeout=self._timeout,
                http1=True,
                http2=False,
                limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY),
                follow_redirects=False,
                trust_env=self._trust_env,
                transport=self._http_transport,
                mounts=direct_mounts(self.base_url),
            )

    async def close(self) -> None:
        """Close every pooled connection."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def send(
        self, method: str, route: str, *, operation: str, **parts: Unpack[RequestParts]
    ) -> bytes:
        """Send one request (retrying where safe) and return its raw body (``b""`` for a
        204), for the caller to validate or :func:`decode`.

        ``route`` is already percent-encoded (see :func:`wire.path`). ``operation`` is the
        contract method, used in errors. ``parts`` (see :class:`RequestParts`) are the query
        parameters and the body.
        """
        params, json, content = parts.get("params"), parts.get("json"), parts.get("content")
        if self._client is None:
            await self.open()
        assert self._client is not None
        headers = _JSON_BODY if content is not None else None
        attempt = 0
        while True:
            try:
                url = self.base_url.rstrip("/") + route
                with http_call(method, url, operation=operation, attempt=attempt) as call:
                    response = await self._client.request(
                        method,
                        route,
                        params=params,
                        json=json,
                        content=content,
                        headers={**(headers or {}), **call.headers},
                    )
                    call.status(response.status_code)
            except httpx.HTTPError as exc:
                if self._may_retry_error(method, exc, attempt):
                    await self._pause(method, route, attempt, type(exc).__name__, None)
                    attempt += 1
                    continue
                raise self._network_error(method, route, exc) from None
            status = response.status_code
            if status < 300:
                return b"" if status == 204 else response.content
            retry_after = parse_retry_after(response.headers.get(wire.RETRY_AFTER))
            if self._may_retry_status(method, status, attempt, retry_after):
                await self._pause(method, route, attempt, str(status), retry_after)
                attempt += 1
                continue
            raise self._status_error(method, route, operation, response, retry_after)

    # ------------------------------------------------------------------ retry rules

    def _may_retry_error(self, method: str, exc: httpx.HTTPError, attempt: int) -> bool:
        if attempt >= self.retry.max_retries:
            return False
        if isinstance(exc, _NOT_SENT):
            return True
        return method in IDEMPOTENT and isinstance(exc, httpx.TransportError)

    def _may_retry_status(
        self, method: str, status: int, attempt: int, retry_after: float | None
    ) -> bool:
        if attempt >= self.retry.max_retries:
            return False
        if retry_after is not None and retry_after > self.retry.max_retry_after:
            return False
        if status in _RETRY_ALWAYS:
            return True
        return status in _RETRY_IDEMPOTENT and method in IDEMPOTENT

    async def _pause(
        self, method: str, route: str, attempt: int, reason: str, retry_after: float | None
    ) -> None:
        wait = self.retry.delay(attempt, retry_after)
        log.info(
            "nams %s %s: %s, retry %d/%d in %.2fs",
            method,
            route,
            reason,
            attempt + 1,
            self.retry.max_retries,
            wait,
        )
        await anyio.sleep(wait)

    # ------------------------------------------------------------------ errors

    def _network_error(self, method: str, route: str, exc: httpx.HTTPError) -> TransportError:
        kind = type(exc).__name__
        where = self._server()
        if method not in IDEMPOTENT and not isinstance(exc, _NOT_SENT):
            return TransportError(
                f"{self.backend}: {method} {route} to {where} failed after it may have "
                f"reached the server ({kind}); it was not resent. Check whether it was "
                "stored before retrying.",
                maybe_applied=True,
            )
        return TransportError(f"{self.backend}: {method} {route} to {where} failed ({kind}: {exc})")

    def _server(self) -> str:
        """``host:port`` of the base URL (never its user info: no credential)."""
        url = httpx.URL(self.base_url)
        port = url.port or (443 if url.scheme == "https" else 80)
        host = f"[{url.host}]" if ":" in url.host else url.host
        return f"{host}:{port}"

    def _status_error(
        self,
        method: str,
        route: str,
        operation: str,
        response: httpx.Response,
        retry_after: float | None,
    ) -> Exception:
        status = response.status_code
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        code, message, details = wire.parse_error(body)
        text = f"{self.backend}: {method} {route} → {status}"
        if code:
            text += f" {code}"
        if message:
            text += f": {message}"
        kind = wire.error_for_status(status)
        if kind is AuthenticationError:
            return AuthenticationError(f"{text} ({self._credential_hint(status)})")
        if issubclass(kind, InvalidRequestError):  # ConflictError (409) too
            return kind(
                text,
                argument=_ARGUMENT_OF_CODE.get(code or ""),
                details={"status": status, "code": code, "details": details},
            )
        if kind is NotSupportedError:
            return NotSupportedError(
                self.backend,
                operation,
                f"the server does not support {method} {route} (HTTP {status})",
                "check backend.capabilities; this service version lacks the endpoint",
            )
        if kind is RateLimitedError:
            return RateLimitedError(text, retry_after=retry_after)
        if method not in IDEMPOTENT and status >= 500 and status not in _RETRY_ALWAYS:
            return TransportError(
                f"{text}; it was not resent: it may have been stored. Check before retrying.",
                maybe_applied=True,
            )
        return kind(text)

    def _credential_hint(self, status: int) -> str:
        """What to fill in after a 401 or 403."""
        if status == 401:
            given = "the API key was refused" if self._api_key else "no API key was given"
            return f"{given}: set {ENV_API_KEY} or pass api_key=... with a key this service accepts"
        return (
            f"the API key may not act in this workspace: check {ENV_WORKSPACE} / "
            f"workspace_id=, or use a key for it via {ENV_API_KEY} / api_key="
        )


def decode(body: bytes, method: str, route: str) -> Any:
    """A response body as JSON (``None`` when empty); a non-JSON body is a
    ``TransportError``."""
    if not body:
        return None
    try:
        return jsonlib.loads(body)
    except ValueError:
        raise TransportError(f"nams: {method} {route} answered with a non-JSON body") from None


def check_positive(value: Any, name: str, *, integer: bool = False) -> Any:
    """An option that must be a positive number (or a non-negative int for counts)."""
    if integer:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigurationError(f"nams backend: {name} must be an int >= 0")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(f"nams backend: {name} must be a positive number")
    return float(value)
