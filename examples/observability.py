"""Print the spans of a few memory calls to the console (OpenTelemetry SDK).

    pip install "memory-core[otel]" opentelemetry-sdk
    python examples/observability.py [URL]      # default memory://

The library needs only opentelemetry-api; the application chooses the SDK and where the
spans go. Here a console exporter prints one line per span, children indented.
"""

from __future__ import annotations

import asyncio
import sys

try:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
except ImportError:
    sys.exit(
        "this example prints spans with the OpenTelemetry SDK, which is not installed: "
        'pip install "memory-core[otel]" opentelemetry-sdk'
    )

from memory_core import open_backend
from memory_core.telemetry import Telemetry

SHOWN = (
    "gen_ai.operation.name",
    "gen_ai.memory.store.id",
    "gen_ai.memory.record.count",
    "db.system.name",
    "http.request.method",
    "http.response.status_code",
)


def one_line(span: ReadableSpan) -> str:
    """The span's name, kind and main attributes; a child is indented under its parent."""
    attributes = span.attributes or {}
    shown = " ".join(f"{key}={attributes[key]}" for key in SHOWN if key in attributes)
    indent = "  " if span.parent is not None else ""
    return f"{indent}{span.name} [{span.kind.name}] {shown}\n"


async def main(url: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(formatter=one_line)))
    # Your own provider here; with none, the global one (set by your SDK setup) is used.
    async with open_backend(url, telemetry=Telemetry(tracer_provider=provider)) as memory:
        conversation = await memory.create_conversation("observability-demo")
        try:
            await memory.add_message(conversation.id, "user", "I work at Acme Corp.")
            await memory.search_messages("Acme", session_id=conversation.id)
            await memory.get_conversation(conversation.id)
        finally:  # a demo: leave the store as it was (a re-run starts afresh)
            await memory.clear_session(conversation.id)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "memory://"))
