"""Spans and measurements, on the OpenTelemetry API only (the ``otel`` extra).

The one module of memory-core that imports ``opentelemetry``, and only once telemetry is
on (see :func:`memory_core.telemetry.resolve`); nothing of the SDK is imported. The
backends reach it through :mod:`.hooks`, the server through :mod:`memory_core.server.tracing`.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import context, metrics, propagate, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..errors import MemoryCoreError, NotSupportedError
from . import operations as ops
from .hooks import ACTIVE

if TYPE_CHECKING:
    from types import TracebackType

    from ..interface import Store

SCOPE = "memory_core"
IN_PROCESS = frozenset({"embedded"})
"""Store names whose memory spans are INTERNAL (the store runs in the caller's process)."""
LOOK_EVERY = 1.0
"""Seconds between two looks for a global provider while there is none (each look reads
the environment: too slow for every call)."""
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
KNOWN_METHODS = frozenset(
    {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "QUERY", "TRACE"}
)
"""HTTP methods a server span and metric record as sent (RFC 9110's, PATCH and QUERY, as
the HTTP semantic conventions list them); any other is recorded as ``_OTHER``."""
KNOWN_METHODS_ENV = "OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS"


def _api_default(provider: object) -> bool:
    """Whether ``provider`` is one of the API's own (the proxy or no-op one): no SDK is
    configured, so nothing would be recorded."""
    return type(provider).__module__.split(".")[:2] in (
        ["opentelemetry", "trace"],
        ["opentelemetry", "metrics"],
    )


def error_type(exc: BaseException) -> str:
    """``error.type``: a memory-core error's class name, else the exception's qualified
    class name (a driver's, for example ``neo4j.exceptions.ServiceUnavailable``)."""
    kind = type(exc)
    if isinstance(exc, MemoryCoreError) or kind.__module__ == "builtins":
        return kind.__name__
    return f"{kind.__module__}.{kind.__qualname__}"


def _fail(span: trace.Span, exc: BaseException) -> str:
    """Mark ``span`` failed by ``exc`` (status left unset for a NotSupportedError: a
    documented refusal, not a failure) and return the ``error.type``."""
    kind = error_type(exc)
    span.set_attribute("error.type", kind)
    if not isinstance(exc, NotSupportedError):
        span.set_status(Status(StatusCode.ERROR, kind))
    return kind


class Instruments:
    """The tracer and meter instruments of one :class:`~memory_core.telemetry.Telemetry`."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, version: str) -> None:
        self._providers = (tracer_provider, meter_provider)
        self._live = False
        self._next_look = 0.0
        self.tracer = trace.get_tracer(SCOPE, version, tracer_provider)
        meter = metrics.get_meter(SCOPE, version, meter_provider)
        histogram = meter.create_histogram
        self.db_duration = histogram(
            "db.client.operation.duration",
            unit="s",
            description="Duration of database client operations.",
            explicit_bucket_boundaries_advisory=list(_BUCKETS),
        )
        self.http_client_duration = histogram(
            "http.client.request.duration", unit="s", description="Duration of HTTP requests."
        )
        self.http_server_duration = histogram(
            "http.server.request.duration", unit="s", description="Duration of HTTP requests."
        )
        self._stores: weakref.WeakSet[Store] = weakref.WeakSet()
        meter.create_observable_up_down_counter(
            "db.client.connection.count",
            callbacks=[self._connection_count],
            unit="{connection}",
            description="Connections of a pool, by state (idle or used).",
        )
        meter.create_observable_up_down_counter(
            "db.client.connection.max",
            callbacks=[self._connection_max],
            unit="{connection}",
            description="The most connections a pool may open.",
        )

    def live(self) -> bool:
        """Whether an SDK records what this reports. With the API's own providers only
        (no SDK configured) every call goes straight through: spans and measurements
        would be dropped anyway. A global provider set later is seen within
        :data:`LOOK_EVERY` seconds (and it cannot be unset)."""
        if not self._live:
            now = time.monotonic()
            if now < self._next_look:
                return False
            self._next_look = now + LOOK_EVERY
            tracer_provider, meter_provider = self._providers
            self._live = not (
                _api_default(tracer_provider or trace.get_tracer_provider())
                and _api_default(meter_provider or metrics.get_meter_provider())
            )
        return self._live

    def watch(self, store: Store) -> None:
        """Report the pool of ``store`` (if it has one) in the pool gauges."""
        self._stores.add(store)

    def _pools(self) -> Iterator[tuple[str, Mapping[str, int]]]:
        for store in list(self._stores):
            yield from pools(store).items()

    def _connection_count(self, _options: CallbackOptions) -> Iterable[Observation]:
        for name, stats in self._pools():
            for state in ("idle", "used"):
                attributes = {
                    "db.client.connection.pool.name": name,
                    "db.client.connection.state": state,
                }
                yield Observation(stats[state], attributes)

    def _connection_max(self, _options: CallbackOptions) -> Iterable[Observation]:
        for name, stats in self._pools():
            yield Observation(stats["max"], {"db.client.connection.pool.name": name})

    async def run(
        self,
        owner: Any,
        name: str,
        method: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        capture: bool,
    ) -> Any:
        """Run the public ``method`` of ``owner`` (a MemoryBackend) in its memory span
        (the caller has checked :meth:`live`)."""
        store = owner.store
        operation = ops.OPERATIONS[name]
        arguments = ops.bind(method, args, kwargs)
        # Every attribute known now is given at creation: one pass of the SDK's checks.
        attributes = {
            "gen_ai.operation.name": operation,
            "memory_core.operation": name,
            "memory_core.backend": store.name,
            **ops.request_attributes(name, arguments, capture),
        }
        kind = SpanKind.INTERNAL if store.name in IN_PROCESS else SpanKind.CLIENT
        span = self.tracer.start_span(operation, kind=kind, attributes=attributes)
        recording = span.is_recording()
        active = Operation(self, name, ops.batch_size(name, arguments), capture)
        token = ACTIVE.set(active)
        attached = context.attach(trace.set_span_in_context(span)) if recording else None
        try:
            result = await method(owner, *args, **kwargs)
        except Exception as exc:
            _fail(span, exc)
            raise
        else:
            if recording:
                span.set_attributes(ops.result_attributes(name, result, capture))
            return result
        finally:
            if attached is not None:
                context.detach(attached)
            ACTIVE.reset(token)
            span.end()


class Operation:
    """The public operation running now: what the store's hooks attach their spans to."""

    def __init__(
        self, instruments: Instruments, name: str, batch: int | None, capture: bool
    ) -> None:
        self.instruments = instruments
        self.name = name
        self.batch = batch
        self.capture = capture

    def round_trip(
        self,
        system: str,
        namespace: str | None,
        server: tuple[str, int] | None,
        query: str | None,
    ) -> RoundTrip:
        return RoundTrip(self, system, namespace, server, query)

    def http_call(self, method: str, url: str, operation: str, attempt: int) -> HttpCall:
        return HttpCall(self.instruments, method, url, operation, attempt)


class RoundTrip:
    """A database client span (kind CLIENT) around one store round trip, and its duration
    in ``db.client.operation.duration``."""

    def __init__(
        self,
        operation: Operation,
        system: str,
        namespace: str | None,
        server: tuple[str, int] | None,
        query: str | None,
    ) -> None:
        attributes: dict[str, Any] = {
            "db.system.name": system,
            "db.operation.name": operation.name,
        }
        if namespace:
            attributes["db.namespace"] = namespace
        if server is not None:
            attributes["server.address"], attributes["server.port"] = server
        self.attributes = attributes  # also those of the measurement: no query text
        self.instruments = operation.instruments
        on_span = dict(attributes)
        if operation.batch is not None:
            on_span["db.operation.batch.size"] = operation.batch
        if operation.capture and query:
            on_span["db.query.text"] = query
        name = f"{operation.name} {namespace}" if namespace else operation.name
        self.span = self.instruments.tracer.start_span(
            name, kind=SpanKind.CLIENT, attributes=on_span
        )
        self._token: object = None
        if self.span.is_recording():
            self._token = context.attach(trace.set_span_in_context(self.span))
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, Exception):
            self.attributes["error.type"] = _fail(self.span, exc)
        self.instruments.db_duration.record(time.perf_counter() - self._started, self.attributes)
        if self._token is not None:
            context.detach(self._token)  # type: ignore[arg-type]
        self.span.end()


class HttpCall:
    """An HTTP client span (kind CLIENT) around one request, and its duration."""

    def __init__(
        self, instruments: Instruments, method: str, url: str, operation: str, attempt: int
    ) -> None:
        parts = urlsplit(url)
        self.instruments = instruments
        # No query string (it may carry search text) and no user info.
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        self.attributes: dict[str, Any] = {
            "http.request.method": method,
            "server.address": host,
            "server.port": port,
        }
        self.span = instruments.tracer.start_span(
            method,
            kind=SpanKind.CLIENT,
            attributes={
                **self.attributes,
                "url.full": f"{parts.scheme}://{host}:{port}{parts.path}",
                "memory_core.nams.operation": operation,
            },
        )
        if attempt:
            self.span.set_attribute("http.request.resend_count", attempt)
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(self.span))
        self.headers: Mapping[str, str] = carrier
        self._started = 0.0

    def status(self, code: int) -> None:
        """Record the response status (4xx and 5xx are errors of a client span)."""
        self.span.set_attribute("http.response.status_code", code)
        self.attributes["http.response.status_code"] = code
        if code >= 400:
            self.span.set_attribute("error.type", str(code))
            self.attributes["error.type"] = str(code)
            self.span.set_status(Status(StatusCode.ERROR))

    def __enter__(self) -> HttpCall:
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        if exc is not None and isinstance(exc, Exception):
            self.attributes["error.type"] = _fail(self.span, exc)
        self.instruments.http_client_duration.record(
            time.perf_counter() - self._started, self.attributes
        )
        self.span.end()


def known_methods(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The methods recorded as sent: :data:`KNOWN_METHODS`, or the comma-separated list
    of ``OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS`` (case-sensitive; it replaces the
    default list, as the conventions say) when that is set."""
    value = environ.get(KNOWN_METHODS_ENV)
    if value is None:
        return KNOWN_METHODS
    return frozenset(m.strip() for m in value.split(",") if m.strip())


class ServerRequest:
    """An HTTP server span (kind SERVER) for one request, continuing the caller's trace
    from its ``traceparent`` header; no header value is recorded.

    A method not in ``known`` is recorded as ``_OTHER`` (the span's name says ``HTTP``,
    and ``http.request.method_original`` on the span keeps what was sent): every made-up
    method would otherwise be a metric series and a span name of its own."""

    def __init__(
        self, instruments: Instruments, scope: Mapping[str, Any], known: frozenset[str]
    ) -> None:
        self.instruments = instruments
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        parent = propagate.extract(headers)
        sent = str(scope["method"])
        self.method = sent if sent in known else "_OTHER"
        self.name = sent if sent in known else "HTTP"
        self.attributes: dict[str, Any] = {
            "http.request.method": self.method,
            "url.scheme": str(scope.get("scheme", "http")),
        }
        server = scope.get("server")
        self.span = instruments.tracer.start_span(
            self.name,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                **self.attributes,
                **({} if sent in known else {"http.request.method_original": sent}),
                "url.path": str(scope["path"]),
                **({"server.address": server[0], "server.port": server[1]} if server else {}),
            },
        )
        self._token = context.attach(trace.set_span_in_context(self.span, parent))
        self._started = time.perf_counter()

    def finish(self, scope: Mapping[str, Any], status: int | None) -> None:
        """End the span: the route template, the workspace and the status (a 5xx, or no
        answer at all, is an error of a server span; a 4xx is the client's)."""
        try:
            route = getattr(scope.get("route"), "path", None)
            if isinstance(route, str):
                self.attributes["http.route"] = route
                self.span.update_name(f"{self.name} {route}")
            workspace = (scope.get("state") or {}).get("workspace")
            if isinstance(workspace, str):
                self.span.set_attribute("memory_core.workspace", workspace)
            if status is not None:
                self.attributes["http.response.status_code"] = status
            if status is None or status >= 500:
                self.attributes["error.type"] = "_OTHER" if status is None else str(status)
                self.span.set_status(Status(StatusCode.ERROR))
            self.span.set_attributes(self.attributes)
            self.instruments.http_server_duration.record(
                time.perf_counter() - self._started, self.attributes
            )
        finally:
            context.detach(self._token)
            self.span.end()


def pools(store: Store) -> Mapping[str, Mapping[str, int]]:
    """``{"idle", "used", "max"}`` connections of each of the store's pools by name
    (:meth:`~memory_core.interface.Store.pools`); none when the store has no pool, is not
    open, or the numbers cannot be read."""
    try:
        return store.pools()
    except Exception:  # a gauge must never break the exporter's collection
        return {}
