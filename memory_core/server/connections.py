"""The server's connection limits: how long a client may take to send a request, how long
an idle connection is kept, and how many connections may be open at once.

uvicorn's h11 protocol only times out a connection that is idle *after* a response, and
any byte received cancels that timer: a connection that never sends anything, or that
trickles its request head or body a byte at a time, is held for ever, and enough of them
use up the process's file descriptors (then legitimate connections are not accepted).
:class:`GuardedH11Protocol` gives every connection one deadline at a time, and bytes
received never move it:

* ``header_timeout``: a new connection must have sent a whole request head (request
  line and headers) this long after it connected; after a response, this long after the
  first byte of the next request. Past it the connection is closed.
* ``keep_alive_timeout``: after a response, the next request must start within this
  long, else the connection is closed.
* ``body_timeout``: once the head is in, the whole body must be in within this long.
  Past it the server answers ``408`` with the error envelope (code ``request_timeout``)
  and closes the connection; if the app has already answered, it only closes.
* ``max_connections``: when a connection arrives with this many open, the one that has
  waited longest for a request head (idle after a response, silent, or trickling its
  head) is closed to make room: a legitimate client sends its head as it connects, so
  idle connections cannot keep it out. When every open connection is busy (a body
  arriving, a request being answered), the new one is answered ``503``
  (``service_unavailable``, ``Retry-After: 1``) at once and closed; nothing it sends is
  read. The cap is lowered to fit the process's file limit (``RLIMIT_NOFILE``, less
  :data:`RESERVED_FILES` for the store, the logs and the listening socket), so the cap
  is reached before ``accept()`` fails.

The time the app takes to answer is not limited here. Every limit can be set with a
``memory-core serve`` flag or an environment variable (:data:`ENV`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from memory_core.errors import ConfigurationError

from .. import nams_wire as wire
from .limits import values_from_env

log = logging.getLogger("memory_core.server")

RESERVED_FILES = 100
"""File descriptors kept out of the connection cap for everything else the process opens."""

TIMED_OUT = "timed_out"
"""Set to True in ``scope["state"]`` of a request answered ``408`` by the protocol."""


def _kind(name: str) -> type[int] | type[float]:
    """How a connection setting is read: the cap is a count, the rest seconds."""
    return int if name == "max_connections" else float


@dataclass(frozen=True)
class ConnectionLimits:
    """Timeouts in seconds (> 0) and the connection cap (an int >= 1) of one server."""

    header_timeout: float = 10.0
    body_timeout: float = 60.0
    keep_alive_timeout: float = 5.0
    max_connections: int = 1000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "max_connections":
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ConfigurationError("max_connections must be an int >= 1")
            elif (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 < value < math.inf
            ):
                raise ConfigurationError(f"{f.name} must be a number of seconds > 0")

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, **given: float | None
    ) -> ConnectionLimits:
        """Limits from ``given`` values (``None``: not given), else :data:`ENV`, else
        the defaults."""
        return cls(**values_from_env(ENV, given, env, _kind))

    def fitted(self) -> ConnectionLimits:
        """These limits with ``max_connections`` lowered, if need be, to the process's
        file limit less :data:`RESERVED_FILES` (logged when it is)."""
        files = _file_limit()
        if files is None or self.max_connections <= files - RESERVED_FILES:
            return self
        cap = max(1, files - RESERVED_FILES)
        log.warning(
            "max_connections %d lowered to %d: the process may open %d files",
            self.max_connections,
            cap,
            files,
        )
        return replace(self, max_connections=cap)


ENV: dict[str, str] = {
    "header_timeout": "NAMS_SERVER_HEADER_TIMEOUT",
    "body_timeout": "NAMS_SERVER_BODY_TIMEOUT",
    "keep_alive_timeout": "NAMS_SERVER_KEEP_ALIVE_TIMEOUT",
    "max_connections": "NAMS_SERVER_MAX_CONNECTIONS",
}


def _file_limit() -> int | None:
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _json_error(code: str, message: str) -> bytes:
    return json.dumps(wire.error_body(code, message)).encode()


_IDLE, _HEAD, _BODY = "idle", "head", "body"
_WARN_EVERY = 10.0  # seconds between two "connection refused" log lines

# Per server, its connections waiting for a request head (idle or head phase), the
# longest-waiting first: the one to close when the cap is reached is found in O(1).
_Waiting = OrderedDict["GuardedH11Protocol", None]
_WAITING: weakref.WeakKeyDictionary[ServerState, _Waiting] = weakref.WeakKeyDictionary()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the cap of :class:`ConnectionLimits`
    (read from ``config.connection_limits``, see :func:`.runner.make_server`)."""

    _last_warning = 0.0
    _refusals = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limits = getattr(self.config, "connection_limits", None)
        self.limits = limits if isinstance(limits, ConnectionLimits) else ConnectionLimits()
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False
        self._waiting = _WAITING.setdefault(self.server_state, OrderedDict())

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections and not self._make_room():
            self._refuse()
        else:
            self._enter(_HEAD)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered 503 already: what the client sends is dropped
        super().data_received(data)
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._enter(None)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    # ------------------------------------------------------------------ deadlines

    def _follow(self) -> None:
        """The deadline for where the client now is in its request (see the module)."""
        if self.transport.is_closing():
            self._enter(None)
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._phase != _HEAD:
                started = bool(self.conn.trailing_data[0])
                self._enter(_HEAD if started else _IDLE, keep=True)
        elif state is h11.SEND_BODY:
            self._enter(_BODY, keep=True)
        else:  # the request is in (the app has it), or the connection is ending
            self._enter(None)

    def _enter(self, phase: str | None, keep: bool = False) -> None:
        """Start ``phase`` with a fresh deadline (``keep``: unless already in it)."""
        if keep and phase == self._phase:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = phase
        if phase in (_IDLE, _HEAD):
            self._waiting[self] = None
            self._waiting.move_to_end(self)
        else:
            self._waiting.pop(self, None)
        if phase is None:
            return
        seconds = {
            _IDLE: self.limits.keep_alive_timeout,
            _HEAD: self.limits.header_timeout,
            _BODY: self.limits.body_timeout,
        }[phase]
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _expired(self) -> None:
        self._deadline = None
        phase, cycle = self._phase, self.cycle
        self._enter(None)
        if self.transport.is_closing():
            return
        if phase == _BODY and cycle is not None and not cycle.response_started:
            self._answer_408()
        else:
            log.debug("closing a connection: %s deadline passed", phase)
            self.transport.close()

    def _answer_408(self) -> None:
        """Answer the request whose body is late ``408`` and close; the app, still
        waiting for the body, sees the client gone and its answer is dropped."""
        cycle = self.cycle
        seconds = self.limits.body_timeout
        body = _json_error(
            wire.ErrorCode.REQUEST_TIMEOUT, f"the request body was not sent within {seconds:g} s"
        )
        self.scope["state"][TIMED_OUT] = True
        cycle.disconnected = True
        try:
            head = h11.Response(
                status_code=408,
                reason=b"Request Timeout",
                headers=[
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            )
            output = self.conn.send(head) or b""
            output += self.conn.send(h11.Data(data=body)) or b""
            output += self.conn.send(h11.EndOfMessage()) or b""
            self.transport.write(output)
        except h11.LocalProtocolError:  # the state machine cannot answer now: just close
            pass
        cycle.message_event.set()
        self.transport.close()

    # ------------------------------------------------------------------ the cap

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for a request head; False when
        every other connection is busy."""
        for other in self._waiting:
            if other is not self and not other.transport.is_closing():
                log.debug("connection cap reached: closing the longest-waiting connection")
                other._enter(None)
                other.transport.close()
                return True
        return False

    def _refuse(self) -> None:
        """Answer a connection over the cap ``503`` without reading it, then close it once
        the client has read the answer and closed (or after a second at most: closing
        with unread input would reset the connection and could lose the answer)."""
        self._refused = True
        cls = type(self)
        cls._refusals += 1
        now = time.monotonic()
        if now - cls._last_warning >= _WARN_EVERY:
            cls._last_warning = now
            log.warning(
                "connection cap %d reached: answered 503 (%d so far)",
                self.limits.max_connections,
                cls._refusals,
            )
        body = _json_error(
            wire.ErrorCode.UNAVAILABLE, "the server has too many open connections; retry later"
        )
        head = (
            b"HTTP/1.1 503 Service Unavailable\r\n"
            b"content-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"retry-after: 1\r\n"
            b"connection: close\r\n\r\n"
        )
        self.transport.write(head + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._deadline = self.loop.call_later(
            min(1.0, self.limits.header_timeout), self.transport.close
        )


__all__ = ["ENV", "RESERVED_FILES", "TIMED_OUT", "ConnectionLimits", "GuardedH11Protocol"]
