"""Running the app under uvicorn: in the foreground (the CLI) or in a background thread
(tests, notebooks).

The server uses :class:`AbortableH11Protocol`, uvicorn's h11 protocol plus one ASGI
extension, ``scope["extensions"][ABORT_EXTENSION]``: a callable that closes the TCP
connection at once, with no response. The dropped-connection fault needs it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from memory_core.errors import ConfigurationError, MemoryCoreError

from .faults import ABORT_EXTENSION, Message, Receive, Scope, Send


class AbortableH11Protocol(H11Protocol):
    """uvicorn's h11 protocol that lets the app drop its connection."""

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


def make_server(app: Any, *, log_level: str = "warning") -> uvicorn.Server:
    """A uvicorn server for ``app`` with the abortable protocol and no access log (the
    app logs each request itself)."""
    config = uvicorn.Config(
        app,
        http=AbortableH11Protocol,
        lifespan="on",
        access_log=False,
        log_config=None,
        log_level=log_level,
        timeout_graceful_shutdown=5,
    )
    return uvicorn.Server(config)


class BackgroundServer:
    """Serves an app on ``127.0.0.1`` (by default) from a daemon thread.

    ``start()`` returns once the server accepts connections (or raises the start-up
    error); ``stop()`` shuts it down. ``base_url`` is ``http://host:port/v1``.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self._sock = bind(host, port)
        self.port: int = self._sock.getsockname()[1]
        self._server = make_server(app)
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
