"""Portability: one scripted application through the public API, run on the backend under
test and on the embedded reference (a private ``memory://``), compared step by step.

A step may differ from the reference only when the backend said why, in that run:

* the step raised :class:`~memory_core.NotSupportedError` (on either side: a flag is
  False there);
* the step emitted a :class:`~memory_core.CapabilityWarning` (a dropped argument or a
  clamped limit), or it relies on an argument that was reported dropped earlier (the
  warning is issued once per backend object);
* the step relies on a capability flag (``flag:<name>``) that is False on this backend
  (e.g. reading a cleared session where conversations are not created on write);
* the difference is a feature the backend declares and the reference lacks (observation
  and reflection sections of ``get_context`` when ``observations``/``reflections`` are
  True).

Anything else that differs is a silent difference, and the scenario fails naming the step
and both observations. Observations never contain ids or timestamps (they differ by design).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memory_core import (
    CapabilityWarning,
    MemoryBackend,
    MemoryCoreError,
    NotSupportedError,
    open_backend,
    with_memory,
)

from ..checks import word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

REFERENCE_URL = "memory://"
_ARGUMENT = re.compile(r"argument '(\w+)'")
_CLAMP = re.compile(r"limit=\d+ clamped")
_SCORE = re.compile(r" \(score \d\.\d\d\)$")
# A relevant line's time: each run writes its own messages, a minute apart at times.
_WHEN = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d(?=[,\]])")


@dataclass
class Outcome:
    """What one step observed on one backend."""

    value: Any = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def not_supported(self) -> bool:
        return self.error == NotSupportedError.__name__


@dataclass
class Run:
    """The outcomes of every step on one backend, and the arguments reported dropped."""

    backend: MemoryBackend
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    relied: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)

    async def step(
        self, name: str, call: Callable[[], Awaitable[Any]], relies_on: Iterable[str] = ()
    ) -> Any:
        """Run one step, recording its value (or error type) and its warnings."""
        outcome = Outcome()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outcome.value = await call()
            except MemoryCoreError as exc:
                outcome.error = type(exc).__name__
        for w in caught:
            if issubclass(w.category, CapabilityWarning):
                text = str(w.message)
                outcome.warnings.append(text)
                self.dropped.update(_ARGUMENT.findall(text))
                if _CLAMP.search(text):
                    self.dropped.add("limit")
        self.outcomes[name] = outcome
        self.relied[name] = tuple(relies_on)
        return outcome.value


def _pairs(messages: Iterable[Any]) -> list[tuple[str, str]]:
    return [(m.role.value, m.content) for m in messages]


def _context_sections(text: str, caps: Any) -> dict[str, list[str]]:
    """``get_context`` text as sections of lines, scores stripped (their scale is shared,
    their digits are not) and relevant lines' times too (each run writes at its own
    time); sections of declared server-side features left out."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:]
            sections[current] = []
        elif line.strip():
            sections.setdefault(current, []).append(_WHEN.sub("[", _SCORE.sub("", line)))
    if caps.observations:
        sections.pop("Observations", None)
    if caps.reflections:
        sections.pop("Reflections", None)
    return sections


async def _echo(user_message: str, _ctx: Any) -> str:
    return f"echo: {user_message}"


async def application(run: Run, handles: dict[str, str], topic: str) -> None:
    """The scripted application. ``handles`` maps the app's sessions (``main``,
    ``extras``, ``turns``) to what this backend takes as ``session_id``."""
    memory = run.backend
    main, extras, turns = handles["main"], handles["extras"], handles["turns"]
    lines = [
        ("user", f"My {topic} parcel has not arrived"),
        ("assistant", "Sorry to hear that. Which order?"),
        ("user", "Order 1234, sent last Monday"),
        ("assistant", "It left the warehouse on Tuesday"),
        ("user", "Thanks, I will wait"),
    ]

    async def write() -> Any:
        one = [await memory.add_message(main, role, text) for role, text in lines[:2]]
        batch = await memory.add_messages_batch(
            main, [{"role": role, "content": text} for role, text in lines[2:]]
        )
        return _pairs([*one, *batch])

    await run.step("write", write)
    await run.step("read all", lambda: _read(memory, main, None))
    await run.step("read newest 3", lambda: _read(memory, main, 3))
    await run.step("read beyond any cap", lambda: _read(memory, main, 500))
    await run.step("search", lambda: _search(memory, main, topic))
    await run.step("context", lambda: _context(memory, main, topic))
    await run.step("listed", lambda: _listed(memory, main))

    async def extras_step() -> Any:
        first = await memory.add_message(
            extras, "user", "with extras", metadata={"channel": "email"}, idempotency_key="k1"
        )
        await memory.add_message(extras, "user", "with extras", idempotency_key="k1")
        read = await memory.get_conversation(extras)
        return {"metadata": first.metadata, "stored": _pairs(read.messages)}

    await run.step("metadata and idempotency", extras_step, ("metadata", "idempotency_key"))

    async def turn() -> Any:
        chat = with_memory(_echo, backend=memory, conversation_id=turns, platform="portability")
        result = await chat(f"What about the {topic} parcel?", turn_id="turn-1")
        again = await chat(f"What about the {topic} parcel?", turn_id="turn-1")
        read = await memory.get_conversation(turns)
        return {
            "reply": result.text,
            "replayed": again.replayed,
            "stored": _pairs(read.messages),
        }

    await run.step("turn through with_memory", turn)
    await run.step("list_sessions", lambda: _count(memory.list_sessions(limit=1000)))
    await run.step("summary", lambda: _summary(memory, main))
    await run.step("observations", lambda: _count(memory.get_observations(main)))
    await run.step("clear", lambda: memory.clear_session(main))
    await run.step(
        "read after clear",
        lambda: _read(memory, main, None),
        ("flag:auto_create_conversation",),
    )
    await run.step("clear again", lambda: memory.clear_session(main))


async def _read(memory: MemoryBackend, handle: str, limit: int | None) -> Any:
    return _pairs((await memory.get_conversation(handle, limit=limit)).messages)


async def _search(memory: MemoryBackend, handle: str, topic: str) -> Any:
    hits = await memory.search_messages(f"{topic} parcel", session_id=handle, limit=3)
    return [m.content for m in hits]


async def _context(memory: MemoryBackend, handle: str, topic: str) -> Any:
    text = await memory.get_context(topic, session_id=handle, max_messages=3, max_hits=2)
    return _context_sections(text, memory.capabilities)


async def _listed(memory: MemoryBackend, handle: str) -> Any:
    conversation = await memory.get_conversation(handle)
    listed = await memory.list_conversations(limit=1000)
    return conversation.id in {c.id for c in listed}


async def _summary(memory: MemoryBackend, handle: str) -> Any:
    summary = await memory.get_conversation_summary(handle)
    return summary.message_count


async def _count(items: Awaitable[list[Any]]) -> Any:
    return type(await items).__name__


async def readme_snippet(run: Run, session: str) -> None:
    """The calls of the "Using it" page's first snippet (docs/using.md), in its order."""
    memory = run.backend
    s1 = session

    async def snippet() -> Any:
        await memory.add_message(
            s1,
            "user",
            "Order ORD-1234 is late",
            metadata={"channel": "email"},
            idempotency_key="msg-1",
        )
        recent = await memory.get_conversation(s1, limit=20)
        hits = await memory.search_messages("late order", session_id=s1, threshold=0.5)
        context = await memory.get_context("late order", session_id=s1)
        deleted = None
        if memory.capabilities.delete_message:
            deleted = await memory.delete_message(recent.messages[0].id)
        return {
            "recent": _pairs(recent.messages),
            "hits": [m.content for m in hits],
            "context": _context_sections(context, memory.capabilities),
            "deleted": deleted,
        }

    await run.step("readme: write, read, search, context, delete", snippet, ("threshold",))
    await run.step("readme: observations", lambda: _count(memory.get_observations(s1)))


def unexplained(reference: Run, target: Run) -> list[str]:
    """Every step whose observation differs from the reference without a reason."""
    problems = []
    for name, want in reference.outcomes.items():
        got = target.outcomes.get(name)
        if got is None:
            problems.append(f"{name}: not run on the backend under test")
            continue
        if (got.value, got.error) == (want.value, want.error):
            continue
        if got.not_supported or want.not_supported or got.warnings:
            continue
        relied = target.relied.get(name, ())
        if set(relied) & target.dropped:
            continue
        caps = target.backend.capabilities
        if any(r.startswith("flag:") and not caps.supports(r[5:]) for r in relied):
            continue
        problems.append(
            f"{name}: reference {want.error or want.value!r}, this backend "
            f"{got.error or got.value!r} — and no NotSupportedError or CapabilityWarning said so"
        )
    return problems


class PortabilitySuite(SuiteBase):
    """Scenarios of area ``portability``."""

    @scenario(
        "portability.scripted_app",
        "a scripted app (write, read newest-N, search, context, list, clear, a with_memory "
        "turn) observes what the embedded reference observes, or is told why not",
    )
    async def test_portability_scripted_app(self, harness: Harness) -> None:
        topic = word()
        names = {role: harness.unique(role) for role in ("main", "extras", "turns")}
        target = Run(harness.backend)
        handles = {role: await harness.new_session(name=name) for role, name in names.items()}
        await application(target, handles, topic)
        async with open_backend(REFERENCE_URL) as embedded:
            reference = Run(embedded)
            await application(reference, names, topic)
        self._compare(reference, target)

    @scenario(
        "portability.readme_snippet",
        "the 'Using it' page's calls observe what the embedded reference observes, or "
        "are told why not",
    )
    async def test_portability_readme_snippet(self, harness: Harness) -> None:
        name = harness.unique("readme")
        target = Run(harness.backend)
        await readme_snippet(target, await harness.new_session(name=name))
        async with open_backend(REFERENCE_URL) as embedded:
            reference = Run(embedded)
            await readme_snippet(reference, name)
        self._compare(reference, target)

    @staticmethod
    def _compare(reference: Run, target: Run) -> None:
        failed = [n for n, o in reference.outcomes.items() if o.error and not o.not_supported]
        assert not failed, f"the reference itself failed in: {failed}"
        problems = unexplained(reference, target)
        assert not problems, "silent differences from the embedded reference:\n" + "\n".join(
            problems
        )
