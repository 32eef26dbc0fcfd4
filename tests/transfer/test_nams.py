"""embedded → NAMS (the NAMS-compatible server over real HTTP) → export: what NAMS can
hold comes back; what it cannot is counted per field; nothing is silent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memory_core import open_backend
from memory_core.transfer import TransferReport, copy_memory
from memory_core_dev.nams_server import NamsTestServer
from tests.transfer.sample import export_lines, of_kind, populate

pytestmark = pytest.mark.anyio

LONG = 250  # more than NAMS's 200-message read cap


def _not_carried(report: TransferReport) -> Counter[str]:
    found: Counter[str] = Counter()
    for (name, _), n in report.not_carried.items():
        found[name] += n
    return found


async def test_embedded_to_nams_and_back_within_the_reported_limits(
    nams_server: NamsTestServer, tmp_path: Path
) -> None:
    async with (
        open_backend("memory://") as source,
        nams_server.backend(NamsTestServer.workspace()) as nams,
    ):
        await populate(source)
        await source.add_messages_batch(
            "long", [{"role": "user", "content": f"n{i}"} for i in range(LONG)]
        )
        first = await export_lines(source)
        messages = of_kind(first, "message")
        report = await copy_memory(source, nams, checkpoint=tmp_path / "nams.checkpoint")
        assert report.copied["message"] == len(messages)
        assert report.copied["conversation"] == 3
        lost = _not_carried(report)
        assert lost["message.metadata"] == sum(1 for m in messages if m["metadata"])
        assert lost["message.idempotency_key"] == sum(1 for m in messages if m["idempotency_key"])
        assert lost["message.created_at"] == len(messages)
        assert lost["message.id"] == len(messages)
        assert lost["mention"] == len(of_kind(first, "mention"))
        assert lost["conversation.id"] == 3
        summary = report.summary()
        assert "not carried" in summary and "message.metadata" in summary

        out = await export_lines(nams)
        exported = {c["session_id"]: c for c in of_kind(out, "conversation")}
        original = {c["session_id"]: c for c in of_kind(first, "conversation")}
        # Session names, titles and conversation metadata come back (kept in metadata).
        assert set(exported) == set(original)
        for name, conversation in original.items():
            assert exported[name]["title"] == conversation["title"]
            assert exported[name]["metadata"] == conversation["metadata"]
        # Messages: role and content in order; only the newest 200 of "long".
        for name in original:
            want = [
                (m["role"], m["content"])
                for m in messages
                if m["conversation_id"] == original[name]["id"]
            ]
            got = [
                (m["role"], m["content"])
                for m in of_kind(out, "message")
                if m["conversation_id"] == exported[name]["id"]
            ]
            assert got == want[-200:]
        assert exported["long"]["truncated"] is True
        end = of_kind(out, "end")[0]
        assert [t["exported"] for t in end["truncated"]] == [200]

        # And back into an embedded store: the session names are the original ones.
        async with open_backend("memory://") as home:
            returned = await copy_memory(nams, home)
            assert [t["exported"] for t in returned.truncated] == [200]
            for name in original:
                conversation = await home.get_conversation(name)
                assert conversation.title == original[name]["title"]
                want = [
                    m["content"] for m in messages if m["conversation_id"] == original[name]["id"]
                ]
                assert [m.content for m in conversation.messages] == want[-200:]


class _Stop(Exception):
    pass


@pytest.mark.parametrize("size", [150, LONG])
async def test_an_interrupted_copy_into_nams_resumes_from_its_checkpoint(
    nams_server: NamsTestServer, tmp_path: Path, size: int
) -> None:
    checkpoint = tmp_path / "nams.checkpoint"
    async with (
        open_backend("memory://") as source,
        nams_server.backend(NamsTestServer.workspace()) as nams,
    ):
        await source.add_messages_batch(
            "a", [{"role": "user", "content": f"a{i}"} for i in range(size)]
        )
        await source.add_messages_batch(
            "b", [{"role": "assistant", "content": f"b{i}"} for i in range(120)]
        )

        def stop_after(limit: int) -> Any:
            def tick(report: TransferReport) -> None:
                # Raised after the batch reached the server, before the checkpoint line.
                if report.copied["message"] >= limit:
                    raise _Stop

            return tick

        with pytest.raises(_Stop):
            await copy_memory(source, nams, checkpoint=checkpoint, on_progress=stop_after(100))
        with pytest.raises(_Stop):
            await copy_memory(source, nams, checkpoint=checkpoint, on_progress=stop_after(size))
        report = await copy_memory(source, nams, checkpoint=checkpoint)
        assert report.skipped[("message", "already in the target (found on resume)")] > 0
        out = await export_lines(nams)
        contents = sorted(m["content"] for m in of_kind(out, "message"))
        expected = sorted([f"a{i}" for i in range(size)][-200:] + [f"b{i}" for i in range(120)])
        assert contents == expected
        assert len(of_kind(out, "conversation")) == 2
        again = await copy_memory(source, nams, checkpoint=checkpoint)
        assert again.copied["message"] == 0
