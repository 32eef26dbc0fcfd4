"""The NAMS-compatible server's reasoning routes over a real socket: steps of a
conversation, tool calls of a step, and the conversation's trace read back; the
reference library's NAMS reasoning client against them; a backing store without
``traces`` answers ``501 not_supported``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from memory_core import register_backend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.sync import open_backend
from memory_core_dev.nams_server import API_KEY, NamsTestServer, start_nams_server

pytestmark = pytest.mark.nams


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def http(nams_server: NamsTestServer, workspace: str) -> Iterator[httpx.Client]:
    with nams_server.client(workspace) as c:
        yield c


def conversation(http: httpx.Client) -> str:
    response = http.post("/conversations", json={})
    assert response.status_code == 201, response.text
    return cast(str, response.json()["id"])


def step(http: httpx.Client, conversation_id: str, **texts: Any) -> dict[str, Any]:
    response = http.post("/reasoning/steps", json={"conversationId": conversation_id, **texts})
    assert response.status_code == 201, response.text
    return cast(dict[str, Any], response.json())


def tool_call(http: httpx.Client, step_id: str, **fields: Any) -> dict[str, Any]:
    body = {"toolName": "search", "stepId": step_id, **fields}
    response = http.post("/reasoning/tool-calls", json=body)
    assert response.status_code == 201, response.text
    return cast(dict[str, Any], response.json())


def trace(http: httpx.Client, conversation_id: str) -> dict[str, Any]:
    response = http.get(f"/reasoning/trace/{conversation_id}")
    assert response.status_code == 200, response.text
    return cast(dict[str, Any], response.json())


def error_code(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text[:500]
    return cast(str, response.json()["error"]["code"])


def test_steps_and_tool_calls_read_back_in_order(http: httpx.Client) -> None:
    cid = conversation(http)
    assert trace(http, cid) == {"conversationId": cid, "steps": [], "toolCalls": []}
    first = step(http, cid, reasoning="find flights", actionTaken="search", result="3 found")
    second = step(http, cid, reasoning="pick one", actionTaken=" ")  # the reference's blank
    assert (first["stepNumber"], second["stepNumber"]) == (1, 2)
    assert (first["conversationId"], first["reasoning"], first["result"]) == (
        cid,
        "find flights",
        "3 found",
    )
    assert "actionTaken" not in second and "createdAt" in second
    arguments = {"from": "OSL", "to": "Zürich 🦊", "n": [1, None, True]}
    failed = tool_call(
        http,
        first["id"],
        input=json.dumps(arguments),
        output="timeout after 5s",
        status="timeout",
        durationMs=5000,
        error="upstream slow",
    )
    raw = tool_call(http, first["id"], toolName="shell", input="ls -la", output='{"ok": 1}')
    later = tool_call(http, second["id"], toolName="pick", input={"k": 1})
    assert (failed["stepId"], failed["status"], failed["durationMs"]) == (
        first["id"],
        "timeout",
        5000,
    )
    assert (raw["input"], raw["status"], raw["output"]) == ("ls -la", "success", '{"ok": 1}')
    read = trace(http, cid)
    assert [(s["id"], s["stepNumber"]) for s in read["steps"]] == [
        (first["id"], 1),
        (second["id"], 2),
    ]
    assert read["steps"][0] == first and read["steps"][1] == second
    assert [c["id"] for c in read["toolCalls"]] == [failed["id"], raw["id"], later["id"]]
    stored = read["toolCalls"][0]
    assert json.loads(stored["input"]) == arguments and stored["error"] == "upstream slow"
    assert (stored["toolName"], stored["output"]) == ("search", "timeout after 5s")
    assert read["toolCalls"][1] == raw
    assert json.loads(read["toolCalls"][2]["input"]) == {"k": 1}


def test_unknown_ids_and_other_workspaces_are_404(
    nams_server: NamsTestServer, http: httpx.Client
) -> None:
    cid = conversation(http)
    first = step(http, cid, reasoning="mine")
    for unknown in (str(uuid.uuid4()), "not-a-uuid"):
        posted = http.post("/reasoning/steps", json={"conversationId": unknown, "reasoning": "x"})
        assert error_code(posted, 404) == "not_found"
        assert error_code(http.get(f"/reasoning/trace/{unknown}"), 404) == "not_found"
    call = http.post("/reasoning/tool-calls", json={"toolName": "t", "stepId": "no-such-step"})
    assert error_code(call, 404) == "not_found"
    with nams_server.client(nams_server.workspace()) as other:
        posted = other.post("/reasoning/steps", json={"conversationId": cid, "reasoning": "x"})
        assert error_code(posted, 404) == "not_found"
        assert error_code(other.get(f"/reasoning/trace/{cid}"), 404) == "not_found"
        theirs = other.post("/reasoning/tool-calls", json={"toolName": "t", "stepId": first["id"]})
        assert error_code(theirs, 404) == "not_found"
    read = trace(http, cid)
    assert [s["id"] for s in read["steps"]] == [first["id"]] and read["toolCalls"] == []


DEEP = '{"a":' * 100 + "1" + "}" * 100  # a JSON object deeper than metadata may be
ID = "<the id>"  # replaced by the conversation's id (steps) or the step's (tool calls)
OVER = "<over the limit>"  # replaced by a text one character over the content limit


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/reasoning/steps", {"conversationId": ID, "reasoning": " ", "actionTaken": ""}),
        ("/reasoning/steps", {"conversationId": ID}),
        ("/reasoning/steps", {"conversationId": ID, "reasoning": 5}),
        ("/reasoning/steps", {"reasoning": "no conversation"}),
        ("/reasoning/steps", {"conversationId": ID, "reasoning": "ok", "result": OVER}),
        ("/reasoning/tool-calls", {"toolName": "t"}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": None}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": "", "input": "{}"}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": ID, "status": "exploded"}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": ID, "durationMs": -1}),
        ("/reasoning/tool-calls", {"toolName": "", "stepId": ID}),
        ("/reasoning/tool-calls", {"stepId": ID}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": ID, "input": DEEP}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": ID, "error": OVER}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": ID, "output": OVER}),
        ("/reasoning/tool-calls", {"toolName": "t", "stepId": ID, "input": OVER}),
    ],
)
def test_bad_bodies_are_400_and_write_nothing(
    nams_server: NamsTestServer, http: httpx.Client, route: str, body: dict[str, Any]
) -> None:
    cid = conversation(http)
    first = step(http, cid, reasoning="kept")
    before = trace(http, cid)
    over = "x" * (nams_server.app.state.limits.max_content_chars + 1)
    value = cid if route.endswith("steps") else first["id"]
    swap = {ID: value, OVER: over}
    sent = {
        key: swap.get(given, given) if isinstance(given, str) else given
        for key, given in body.items()
    }
    assert error_code(http.post(route, json=sent), 400) == "invalid_request"
    assert trace(http, cid) == before


def test_concurrent_first_steps_number_without_gap_or_repeat(http: httpx.Client) -> None:
    """One trace holds the conversation's steps even when its first steps race: the
    numbers the writes answer are 1..n, each once."""
    cid = conversation(http)

    def post(i: int) -> int:
        return cast(int, step(http, cid, reasoning=f"step {i}")["stepNumber"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        numbers = list(pool.map(post, range(16)))
    assert sorted(numbers) == list(range(1, 17))
    read = trace(http, cid)
    assert [s["stepNumber"] for s in read["steps"]] == list(range(1, 17))
    assert sorted(s["reasoning"] for s in read["steps"]) == sorted(f"step {i}" for i in range(16))


def test_an_input_that_is_no_json_object_reads_back_as_sent(http: httpx.Client) -> None:
    first = step(http, conversation(http), actionTaken="run")
    for sent in ("ls -la", "[1, 2]", "5", '"quoted"', "", "[" * 5000 + "]" * 5000):
        made = tool_call(http, first["id"], input=sent)
        assert made["input"] == sent


def test_deleting_a_conversation_deletes_its_steps_and_tool_calls_from_the_store(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'backing.db'}"
    workspace = NamsTestServer.workspace()
    tenant = f"nams:{workspace}"
    with start_nams_server(url) as server, server.client(workspace) as http:
        gone, kept = conversation(http), conversation(http)
        for cid in (gone, kept):
            tool_call(http, step(http, cid, reasoning=f"think {cid}")["id"], status="success")
        with open_backend(url, multi_tenant=True) as store:
            assert len(store.list_traces(user_identifier=tenant)) == 2
            assert http.delete(f"/conversations/{gone}").is_success
            [left] = store.list_traces(user_identifier=tenant)
            full = store.get_trace(left.id, user_identifier=tenant)
            assert full is not None and [s.thought for s in full.steps] == [f"think {kept}"]
            [stats] = store.tool_stats(user_identifier=tenant)
            assert stats.total_calls == 1
        assert error_code(http.get(f"/reasoning/trace/{gone}"), 404) == "not_found"
        assert [s["reasoning"] for s in trace(http, kept)["steps"]] == [f"think {kept}"]


class NoTraces(EmbeddedStore):
    """The embedded store claiming no reasoning flag."""

    capabilities = replace(
        EmbeddedStore.capabilities,
        traces=False,
        tool_stats=False,
        similar_traces=False,
        trace_links=False,
    )

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__("memory://", **options)


def test_a_store_without_traces_answers_501() -> None:
    register_backend("notraces", f"{__name__}:{NoTraces.__qualname__}")
    with start_nams_server("notraces://") as server, server.client(server.workspace()) as http:
        cid = conversation(http)
        for response in (
            http.post("/reasoning/steps", json={"conversationId": cid, "reasoning": "x"}),
            http.post("/reasoning/tool-calls", json={"toolName": "t", "stepId": "s"}),
            http.get(f"/reasoning/trace/{cid}"),
        ):
            assert error_code(response, 501) == "not_supported"


@pytest.mark.anyio
async def test_the_reference_client_records_and_reads_a_trace(
    nams_server: NamsTestServer, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = pytest.importorskip("neo4j_agent_memory.nams")
    settings = pytest.importorskip("neo4j_agent_memory.config.settings")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    config = settings.NamsConfig(
        endpoint=nams_server.base_url, api_key=API_KEY, workspace_id=workspace
    )
    async with reference.NamsBackend.from_config(config) as client:
        made = await client.short_term.create_conversation("ignored")
        cid = str(made.id)
        memory = client.reasoning
        started = await memory.start_trace(cid, "book a flight")
        one = await memory.add_step(started.id, thought="look", action="search", observation="3")
        await memory.add_step(started.id, thought="choose")
        call = await memory.record_tool_call(
            one.id, "flights", {"to": "OSL"}, result={"hits": 3}, status="failure", duration_ms=7
        )
        read = await memory.get_trace_with_steps(started.id)
        assert [(s.thought, s.action, s.observation) for s in read.steps] == [
            ("look", "search", "3"),
            ("choose", None, None),
        ]
        [stored] = read.steps[0].tool_calls
        assert (stored.id, stored.tool_name, stored.arguments) == (
            call.id,
            "flights",
            {"to": "OSL"},
        )
        assert (stored.result, stored.duration_ms) == ({"hits": 3}, 7)
        assert str(getattr(stored.status, "value", stored.status)) == "failure"
        [session] = await memory.get_session_traces(cid)
        assert [s.id for s in session.steps] == [s.id for s in read.steps]
