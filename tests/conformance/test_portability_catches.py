"""The portability area fails on a backend that differs from the embedded reference
without saying so, and passes where the difference is declared and announced."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memory_core import Conversation, Message, register_backend
from memory_core import requests as rq
from memory_core.backends.embedded import EmbeddedStore
from memory_core.conformance.report import FAILED, PASSED, RunReport
from memory_core.conformance.runner import run


class _Memory(EmbeddedStore):
    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__("memory://", **options)


class IgnoresLimit(_Memory):
    """Returns the whole conversation whatever ``limit`` says, without a warning."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        return await super().get_conversation(replace(req, limit=1000))


class LosesMetadata(_Memory):
    """Claims message_metadata but stores none, without a warning."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(replace(req, metadata={}))


class NoMetadataDeclared(_Memory):
    """Declares message_metadata False: the contract drops it with a warning (honest)."""

    capabilities = replace(EmbeddedStore.capabilities, message_metadata=False)


for _scheme, _cls in (
    ("cf-port-limit", IgnoresLimit),
    ("cf-port-metadata", LosesMetadata),
    ("cf-port-declared", NoMetadataDeclared),
):
    register_backend(_scheme, f"{__name__}:{_cls.__name__}")


def _outcomes(report: RunReport) -> dict[str, tuple[str, str]]:
    return {r.id: (r.outcome, r.message) for r in report.results}


def test_silent_differences_fail_and_name_the_step() -> None:
    [limit] = run(["cf-port-limit://"], keyword="portability")
    outcome, message = _outcomes(limit)["portability.scripted_app"]
    assert outcome == FAILED and "read newest 3" in message, limit.to_text()
    assert _outcomes(limit)["portability.readme_snippet"][0] == PASSED
    [metadata] = run(["cf-port-metadata://"], keyword="portability")
    outcome, message = _outcomes(metadata)["portability.scripted_app"]
    assert outcome == FAILED and "metadata and idempotency" in message, metadata.to_text()


def test_declared_and_announced_differences_pass() -> None:
    [declared] = run(["cf-port-declared://"], keyword="portability")
    assert {o for o, _ in _outcomes(declared).values()} == {PASSED}, declared.to_text()
