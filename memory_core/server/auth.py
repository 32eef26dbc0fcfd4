"""API keys and workspaces.

Keys are given as ``KEY`` or ``KEY=WORKSPACE`` (``--api-key``, repeatable, or the
comma-separated ``NAMS_SERVER_API_KEYS``). A request must carry ``Authorization: Bearer
KEY``; a missing or unknown key is ``401``. A key bound to a workspace always works in that
workspace: an ``X-Workspace-Id`` naming another one is ``403``. An unbound key works in the
workspace ``X-Workspace-Id`` names, or in ``default`` without the header.

:class:`AuthMiddleware` checks the key of every ``/v1`` and ``/_admin`` request before
anything else of the request is looked at (route, body): a wrong key with a malformed body
is ``401``, not ``400``.

With no key configured at all the server runs open (any or no bearer token is accepted) —
allowed only on a loopback host, see :func:`check_open_server`.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import JSONResponse

from memory_core.errors import ConfigurationError

from .. import nams_wire as wire
from .errors import ApiError

ENV_KEYS = "NAMS_SERVER_API_KEYS"
DEFAULT_WORKSPACE = "default"
_WORKSPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def valid_workspace(value: str) -> bool:
    """1-128 characters: letters, digits, ``.``, ``_``, ``:``, ``-`` (not first)."""
    return bool(_WORKSPACE.match(value))


@dataclass(frozen=True)
class ApiKeys:
    """The accepted keys, each optionally bound to one workspace. Never shows a key."""

    bindings: Mapping[str, str | None] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"ApiKeys({len(self.bindings)} keys)"

    @classmethod
    def parse(cls, specs: Iterable[str]) -> ApiKeys:
        """Keys from ``KEY`` / ``KEY=WORKSPACE`` strings (blank entries are skipped)."""
        bindings: dict[str, str | None] = {}
        for raw in specs:
            spec = raw.strip()
            if not spec:
                continue
            key, sep, workspace = spec.partition("=")
            key, workspace = key.strip(), workspace.strip()
            if not key or (sep and not valid_workspace(workspace)):
                raise ConfigurationError(
                    "an API key spec must be KEY or KEY=WORKSPACE (workspace: letters, "
                    "digits, . _ : -)"
                )
            bindings[key] = workspace or None
        return cls(bindings)

    @classmethod
    def from_env(cls, extra: Iterable[str] = ()) -> ApiKeys:
        """``extra`` specs plus those in ``NAMS_SERVER_API_KEYS`` (comma-separated)."""
        env = os.environ.get(ENV_KEYS, "")
        return cls.parse([*extra, *env.split(",")])

    @property
    def enabled(self) -> bool:
        """False when no key is configured (an open server)."""
        return bool(self.bindings)

    def lookup(self, presented: str) -> tuple[bool, str | None]:
        """``(known, bound workspace)``; compares every key in constant time."""
        found, bound = False, None
        for key, workspace in self.bindings.items():
            if hmac.compare_digest(key.encode(), presented.encode()):
                found, bound = True, workspace
        return found, bound


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def unauthorized(message: str) -> ApiError:
    return ApiError(
        401, wire.ErrorCode.UNAUTHORIZED, message, headers={"WWW-Authenticate": "Bearer"}
    )


def resolve_workspace(keys: ApiKeys, authorization: str | None, requested: str | None) -> str:
    """The workspace a request acts in, or an :class:`ApiError` (401, 403 or 400)."""
    bound: str | None = None
    if keys.enabled:
        token = bearer_token(authorization)
        if token is None:
            raise unauthorized("missing bearer token")
        known, bound = keys.lookup(token)
        if not known:
            raise unauthorized("invalid API key")
    if requested is not None:
        requested = requested.strip()
        if not valid_workspace(requested):
            raise ApiError(
                400,
                wire.ErrorCode.INVALID_REQUEST,
                f"{wire.WORKSPACE_HEADER} must be 1-128 letters, digits, '.', '_', ':' or '-'",
            )
        if bound is not None and requested != bound:
            raise ApiError(
                403, wire.ErrorCode.FORBIDDEN, "this API key cannot access that workspace"
            )
        return requested
    return bound or DEFAULT_WORKSPACE


def check_open_server(keys: ApiKeys, host: str) -> None:
    """Refuse to serve without API keys on anything but a loopback address."""
    if keys.enabled:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigurationError(
            f"refusing to serve on {host} without API keys: pass --api-key or set {ENV_KEYS}"
        )


_PROTECTED = (wire.API_PREFIX, "/_admin")


class AuthMiddleware:
    """Authenticates API requests first; notes the workspace for the request log."""

    def __init__(self, app: Any, keys: ApiKeys) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not any(path == p or path.startswith(p + "/") for p in _PROTECTED):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            workspace = resolve_workspace(
                self.keys, headers.get("authorization"), headers.get(wire.WORKSPACE_HEADER.lower())
            )
        except ApiError as exc:
            response = JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["workspace"] = workspace
        await self.app(scope, receive, send)
