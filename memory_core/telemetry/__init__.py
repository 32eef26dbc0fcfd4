"""OpenTelemetry traces, metrics and log correlation (the ``otel`` extra).

Every :class:`~memory_core.MemoryBackend` is instrumented when ``opentelemetry-api`` is
installed (``pip install "memory-core[otel]"``): it reports to the global tracer and
meter providers, which record nothing until an SDK is configured. Pass
``telemetry=Telemetry(tracer_provider=..., meter_provider=...)`` to ``open_backend`` for
providers of your own, or ``telemetry=False`` to switch it off. Without the extra,
nothing here imports OpenTelemetry and a backend runs exactly as without this package.
See ``docs/observability.md`` for every span, attribute and metric.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigurationError
from ..version import VERSION
from .hooks import http_call, round_trip
from .logs import correlate
from .operations import OPERATIONS

if TYPE_CHECKING:
    from .runtime import Instruments

__all__ = ["CAPTURE_ENV", "Telemetry", "available", "http_call", "instrument", "round_trip"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to ``true`` to capture message content and query text (off by default)."""

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


@functools.cache
def available() -> bool:
    """Whether ``opentelemetry-api`` is installed."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except (ImportError, ValueError):  # no opentelemetry package, or one blocked out
        return False


def _require_api() -> None:
    if not available():
        raise ConfigurationError(
            'telemetry needs opentelemetry-api: pip install "memory-core[otel]"'
        )


def _capture_from_env() -> bool:
    return os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"


class Telemetry:
    """Where a backend's spans and measurements go, and whether content is captured.

    ``tracer_provider`` / ``meter_provider``: OpenTelemetry providers (default: the global
    ones, looked up on each span, so an SDK configured later is used). ``capture_content``:
    record message content (``gen_ai.memory.records``), query text
    (``gen_ai.memory.query.text``) and statements (``db.query.text``); default: the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` environment variable is ``true``.
    """

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        capture_content: bool | None = None,
    ) -> None:
        _require_api()
        if capture_content is not None and not isinstance(capture_content, bool):
            raise ConfigurationError("capture_content must be a bool or None")
        from .runtime import Instruments

        self.capture_content = _capture_from_env() if capture_content is None else capture_content
        self.instruments: Instruments = Instruments(tracer_provider, meter_provider, VERSION)

    def __repr__(self) -> str:
        return f"<Telemetry capture_content={self.capture_content}>"


@functools.cache
def _default() -> Telemetry:
    return Telemetry()


def resolve(option: Telemetry | bool | None) -> Telemetry | None:
    """The telemetry a backend uses for its ``telemetry`` option: ``None`` (default) →
    the global providers when the ``otel`` extra is installed, else off; ``False`` → off;
    ``True`` → the global providers (a ``ConfigurationError`` without the extra)."""
    if isinstance(option, Telemetry):
        return option
    if option is None:
        return _default() if available() else None
    if option is False:
        return None
    if option is True:
        _require_api()
        return _default()
    raise ConfigurationError(
        f"telemetry must be a memory_core.telemetry.Telemetry, True, False or None, "
        f"got {type(option).__name__}"
    )


def instrument(name: str) -> Callable[[F], F]:
    """Wrap the public method ``name`` of MemoryBackend in its memory span (see
    :data:`~memory_core.telemetry.operations.OPERATIONS`); with telemetry off the call
    goes straight through."""
    if name not in OPERATIONS:
        raise ValueError(f"{name} has no memory operation")

    def wrap(method: F) -> F:
        @functools.wraps(method)
        async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
            telemetry: Telemetry | None = self._telemetry
            if telemetry is None or not telemetry.instruments.live():
                return await method(self, *args, **kwargs)
            return await telemetry.instruments.run(
                self, name, method, args, kwargs, telemetry.capture_content
            )

        return traced  # type: ignore[return-value]

    return wrap


# Log records of memory-core carry the active span's ids (see .logs); cheap without a span.
correlate()
