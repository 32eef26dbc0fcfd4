"""Fault control: how the ``faults`` area drives the service a network backend talks to.

The area runs only where the test setup provides a :class:`FaultControl` (override the
``conformance_faults`` fixture of the suite class); elsewhere its scenarios are not
applicable. The knobs (:class:`FaultKnobs`) are those of the project's NAMS-compatible
server (``memory-core serve --test-admin``, route ``/_admin/faults``):
:class:`AdminFaults` drives them for the NAMS backend. A third-party network backend opts
in by implementing :class:`FaultControl` for its own service with the same knob meanings.
"""

from __future__ import annotations

import importlib
import os
import socket
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import httpx

from memory_core import nams_wire as wire

if TYPE_CHECKING:
    from typing_extensions import Unpack

COUNTED = ("rate_limit", "unavailable", "drop", "payload_too_large", "unauthorized", "pass_first")
"""The knobs that count requests down: :meth:`FaultControl.pending` reports these."""


class FaultKnobs(TypedDict, total=False):
    """Fault knobs. Each counted knob applies to the next N requests the service receives
    (any route), in this order: ``pass_first`` lets requests through untouched, then
    ``drop``, ``rate_limit``, ``unavailable``, ``payload_too_large``, ``unauthorized``;
    each request consumes one count of the first knob that fires."""

    rate_limit: int
    """Answer the next N with ``429`` (nothing is processed)."""
    retry_after: float
    """Seconds the ``429`` answers ask the client to wait (``Retry-After``)."""
    omit_retry_after: bool
    """The ``429`` answers carry no ``Retry-After``."""
    unavailable: int
    """Answer the next N with ``503`` (nothing is processed)."""
    unavailable_retry_after: float
    """``Retry-After`` of the ``503`` answers (default: none)."""
    payload_too_large: int
    """Answer the next N with ``413``, whose message names ``payload_limit`` in bytes."""
    payload_limit: int
    """The body limit in bytes the ``413`` answers name."""
    unauthorized: int
    """Answer the next N with ``401``, as to a rejected credential."""
    drop: int
    """Close the next N connections without an answer."""
    drop_mode: Literal["before", "after"]
    """Drop before the request is processed, or after it was (it is stored)."""
    latency: float
    """Seconds added to every answer, after the request was processed."""
    pass_first: int
    """Let the next N requests through before any other counted knob fires."""


class FaultControl(ABC):
    """Fault knobs of the service under a network backend, and the client settings the
    fault area needs. One instance serves one scenario at a time; the area resets it
    before and after each scenario."""

    @abstractmethod
    async def set(self, **knobs: Unpack[FaultKnobs]) -> None:
        """Turn the named knobs (others keep their value)."""

    @abstractmethod
    async def reset(self) -> None:
        """Every knob back to off."""

    @abstractmethod
    async def pending(self) -> dict[str, int]:
        """The counts left of each knob of :data:`COUNTED`."""

    @abstractmethod
    async def fired_at(self) -> list[float]:
        """When each fault fired since the last reset, oldest first, in seconds of one
        monotonic clock (the service's): the gaps are how long the client waited between
        attempts, whatever the requests that were answered cost."""

    @abstractmethod
    def client_options(
        self,
        *,
        max_retries: int | None = None,
        backoff: float | None = None,
        timeout: float | None = None,
        max_retry_after: float | None = None,
    ) -> dict[str, Any]:
        """``open_backend`` options giving the client these retry settings: extra attempts
        after the first, the backoff step and cap in seconds (when no ``Retry-After``
        came), the request timeout in seconds, and the longest ``Retry-After`` it waits
        for. ``None`` leaves a setting at the backend's default."""

    @abstractmethod
    def wrong_credential(self) -> dict[str, Any]:
        """``open_backend`` options carrying a credential the service rejects."""

    @abstractmethod
    def unreachable_url(self) -> str:
        """A backend URL where nothing accepts connections (refused, not timing out)."""

    async def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what the control holds (called once, after the last scenario)."""


class AdminFaults(FaultControl):
    """The knobs of a NAMS-compatible ``memory-core serve --test-admin`` server, turned
    through ``/_admin/faults``, for the NAMS backend.

    ``url`` is the backend URL (``nams+http://host:port/v1``) or the base URL; ``api_key``
    a key the server accepts (default: ``MEMORY_API_KEY``; sent to the admin routes only,
    never shown).
    """

    def __init__(self, url: str, *, api_key: str | None = None) -> None:
        api_key = api_key or os.environ.get("MEMORY_API_KEY") or None
        base = url.removeprefix("nams+")
        self._admin = base.rstrip("/").removesuffix(wire.API_PREFIX) + "/_admin/faults"
        self._headers = {wire.AUTHORIZATION: f"Bearer {api_key}"} if api_key else {}
        self._closed_port: socket.socket | None = None
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"<AdminFaults {self._admin}>"

    async def _request(self, method: str, body: dict[str, Any] | None = None) -> Any:
        if self._client is None:
            self._client = httpx.AsyncClient(trust_env=False, headers=self._headers)
        response = await self._client.request(method, self._admin, json=body)
        response.raise_for_status()
        return response.json() if response.content else None

    async def set(self, **knobs: Unpack[FaultKnobs]) -> None:
        await self._request("POST", dict(knobs))

    async def reset(self) -> None:
        await self._request("DELETE")

    async def pending(self) -> dict[str, int]:
        state = await self._request("GET")
        return {name: int(state[name]) for name in COUNTED}

    async def fired_at(self) -> list[float]:
        state = await self._request("GET")
        return [float(t) for t in state["fired_at"]]

    def client_options(
        self,
        *,
        max_retries: int | None = None,
        backoff: float | None = None,
        timeout: float | None = None,
        max_retry_after: float | None = None,
    ) -> dict[str, Any]:
        options: dict[str, Any] = {
            "max_retries": max_retries,
            "timeout": timeout,
            "max_retry_after": max_retry_after,
        }
        if backoff is not None:
            options.update(backoff=backoff, max_backoff=backoff)
        return {name: value for name, value in options.items() if value is not None}

    def wrong_credential(self) -> dict[str, Any]:
        return {"api_key": "cf-rejected-key-0f3c9a"}

    def unreachable_url(self) -> str:
        # A bound socket that never listens: connections to its port are refused, and no
        # other program can take the port while the control holds it.
        if self._closed_port is None:
            self._closed_port = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._closed_port.bind(("127.0.0.1", 0))
        port = self._closed_port.getsockname()[1]
        return f"nams+http://127.0.0.1:{port}{wire.API_PREFIX}"

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        if self._closed_port is not None:
            self._closed_port.close()
            self._closed_port = None


def load_fault_control(spec: str, backend_url: str) -> FaultControl:
    """The control ``MODULE:FACTORY`` makes for ``backend_url`` (``--fault-control``)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--fault-control {spec!r}: expected MODULE:FACTORY")
    factory = getattr(importlib.import_module(module_name), attr)
    control = factory(backend_url)
    if not isinstance(control, FaultControl):
        raise TypeError(f"--fault-control {spec}: {type(control).__name__} is not a FaultControl")
    return control
