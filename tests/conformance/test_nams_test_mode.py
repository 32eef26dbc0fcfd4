"""The NAMS-compatible server's test mode: extraction stays pending for a while and
observations/reflections have content, so the nams.* scenarios check something real."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from memory_core import ConfigurationError
from memory_core.server import create_app
from memory_core.server.cli import build_parser
from memory_core.summary import extractive_summary
from memory_core_dev.nams_server import NamsTestServer

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

DELAY = 0.5


@pytest.fixture(scope="module")
def server() -> Iterator[NamsTestServer]:
    options = {"summarizer": extractive_summary, "observation_window": 2}
    with NamsTestServer("memory://", extraction_delay=DELAY, **options) as running:
        yield running


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_extraction_is_pending_then_completes(server: NamsTestServer) -> None:
    async with server.backend(NamsTestServer.workspace("tm")) as backend:
        conversation = await backend.create_conversation(session_id="ignored")
        handle = str(conversation.id)
        await backend.bulk_add_messages(
            handle,
            [{"role": "user", "content": f"Lisbon fact number {n}."} for n in range(4)],
        )
        status = await backend.get_extraction_status(handle)
        assert status.summary == {"pending": 4} and not status.is_complete
        assert await backend.get_observations(handle) == []
        assert await backend.wait_for_extraction(handle, timeout=0.05, poll_interval=0.01) is False
        start = anyio.current_time()
        assert await backend.wait_for_extraction(handle, timeout=10, poll_interval=0.05) is True
        assert anyio.current_time() - start < 5
        status = await backend.get_extraction_status(handle)
        assert status.summary == {"completed": 4} and status.is_complete
        observations = await backend.get_observations(handle)
        assert len(observations) == 2
        assert all("Lisbon fact" in o["content"] for o in observations)
        [reflection] = await backend.get_reflections(handle)
        assert "Lisbon fact" in reflection["content"]
        await backend.clear_session(handle)


def test_the_knob_on_the_command_line_and_its_validation() -> None:
    args = build_parser().parse_args(["--test-extraction-delay", "1.5"])
    assert args.test_extraction_delay == 1.5
    assert build_parser().parse_args([]).test_extraction_delay == 0.0
    for bad in (-1, True, "1"):
        with pytest.raises(ConfigurationError, match="extraction_delay"):
            create_app("memory://", api_keys=[], extraction_delay=bad)
