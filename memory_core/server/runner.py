"""Running the app under uvicorn: in the foreground (the CLI) or in a background thread
(tests, notebooks).

The server uses :class:`AbortableH11Protocol`, uvicorn's h11 protocol with the
connection limits of :mod:`.connections` (header, body and keep-alive deadlines, a
connection cap) plus one ASGI extension, ``scope["extensions"][ABORT_EXTENSION]``: a
callable that closes the TCP connection at once, with no response. The
dropped-connection fault needs it.
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from typing import Any

import uvicorn

from memory_core.errors import ConfigurationError, MemoryCoreError

from .connections import ConnectionLimits, GuardedH11Protocol
from .faults import ABORT_EXTENSION, Message, Receive, Scope, Send


class AbortableH11Protocol(GuardedH11Protocol):
    """The server's h11 protocol (connection limits included) that also lets the app drop
    its connection."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        inner = self.app

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            scope.setdefault("extensions", {})[ABORT_EXTENSION] = self._abort
            await inner(scope, receive, send)

        self.app = app

    def _abort(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0`` picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose
    # listener says so, and without it every response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    except OverflowError:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: ports are 0-65535") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


class _Config(uvicorn.Config):
    """uvicorn's config carrying the connection limits the protocol reads."""

    def __init__(self, app: Any, connection_limits: ConnectionLimits, **options: Any) -> None:
        super().__init__(app, **options)
        self.connection_limits = connection_limits


def make_server(
    app: Any, *, log_level: str = "warning", connections: ConnectionLimits | None = None
) -> uvicorn.Server:
    """A uvicorn server for ``app`` with the abortable protocol, the connection limits
    ``connections`` (default: :meth:`ConnectionLimits.from_env`, the cap fitted to the
    file limit) and no access log (the app logs each request itself)."""
    limits = (connections or ConnectionLimits.from_env()).fitted()
    config = _Config(
        app,
        limits,
        http=AbortableH11Protocol,
        ws="none",  # the API has no WebSocket route: an upgrade is an ordinary request
        lifespan="on",
        access_log=False,
        log_config=None,
        log_level=log_level,
        timeout_graceful_shutdown=5,
        # uvicorn's own idle timer, a backstop behind the protocol's: a second later, as
        # at the same time uvicorn's (armed first) would fire first.
        timeout_keep_alive=math.ceil(limits.keep_alive_timeout) + 1,
    )
    return uvicorn.Server(config)


class BackgroundServer:
    """Serves an app on ``127.0.0.1`` (by default) from a daemon thread.

    ``start()`` returns once the server accepts connections (or raises the start-up
    error); ``stop()`` shuts it down. ``base_url`` is ``http://host:port/v1``.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        connections: ConnectionLimits | None = None,
    ) -> None:
        self.app = app
        self.host = host
        self._sock = bind(host, port)
        self.port: int = self._sock.getsockname()[1]
        self._server = make_server(app, connections=connections)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._sock]))
        except BaseException as exc:  # reported by start()
            self._error = exc

    def start(self, timeout: float = 60.0) -> BackgroundServer:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name="nams-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                startup = getattr(self.app.state, "startup_error", None)
                if isinstance(startup, MemoryCoreError):
                    raise startup
                raise RuntimeError(f"the NAMS server did not start ({self._error!r})")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["AbortableH11Protocol", "BackgroundServer", "Message", "bind", "make_server"]
