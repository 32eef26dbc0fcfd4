"""The NAMS-compatible server's entity routes over a real socket: read one entity with its
relationships inline, update one, merge one into another, delete one, search by words,
and the entity graph; a backing store without the flag a route needs answers
``501 not_supported``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, cast

import httpx
import pytest

from memory_core import DEFAULT_LIMITS, register_backend
from memory_core import nams_wire as wire
from memory_core.backends.embedded import EmbeddedStore
from memory_core_dev.nams_server import NamsTestServer, start_nams_server
from tests.conformance.catalogue import register

pytestmark = pytest.mark.nams


@pytest.fixture
def http(nams_server: NamsTestServer, workspace: str) -> Iterator[httpx.Client]:
    with nams_server.client(workspace) as c:
        yield c


@pytest.fixture
def admin(nams_server: NamsTestServer, workspace: str) -> Iterator[httpx.Client]:
    """A client of the test-admin routes, in the same workspace."""
    base = nams_server.base_url.removesuffix(wire.API_PREFIX)
    with httpx.Client(base_url=base, headers=nams_server.headers(workspace), trust_env=False) as c:
        yield c


def entity(http: httpx.Client, name: str, kind: str = "person", **more: Any) -> dict[str, Any]:
    response = http.post("/entities", json={"name": name, "type": kind, **more})
    assert response.status_code == 201, response.text
    return cast(dict[str, Any], response.json())


def link(admin: httpx.Client, source: str, target: str, kind: str, **more: Any) -> dict[str, Any]:
    body = {"sourceId": source, "targetId": target, "type": kind, **more}
    response = admin.post("/_admin/relationships", json=body)
    assert response.status_code == 200, response.text
    return cast(dict[str, Any], response.json())


def error_code(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text[:500]
    return cast(str, response.json()["error"]["code"])


def test_get_entity_inlines_outgoing_relationships(http: httpx.Client, admin: httpx.Client) -> None:
    ada = entity(http, "Ada", description="pioneer")
    acme = entity(http, "Acme", "organization")
    bob = entity(http, "Bob")
    works = link(admin, ada["id"], acme["id"], "works_at", properties={"since": 2020})
    link(admin, bob["id"], ada["id"], "KNOWS")  # incoming: not inlined
    response = http.get(f"/entities/{ada['id']}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["id"], body["name"], body["type"], body["description"]) == (
        ada["id"],
        "Ada",
        "person",
        "pioneer",
    )
    [ref] = body["relationships"]
    assert ref["relType"] == "WORKS_AT" and ref["targetId"] == acme["id"]
    assert (ref["targetName"], ref["targetType"]) == ("Acme", "organization")
    assert ref["id"] == works["id"] and ref["properties"] == {"since": 2020}
    assert http.get(f"/entities/{acme['id']}").json()["relationships"] == []
    assert error_code(http.get("/entities/no-such-entity"), 404) == "not_found"


def test_entities_stay_in_their_workspace(nams_server: NamsTestServer, http: httpx.Client) -> None:
    ada = entity(http, "Ada")
    with nams_server.client(nams_server.workspace()) as other:
        assert error_code(other.get(f"/entities/{ada['id']}"), 404) == "not_found"
        assert error_code(other.delete(f"/entities/{ada['id']}"), 404) == "not_found"
        graph = other.get("/entities/graph", params={"entityId": ada["id"]})
        assert error_code(graph, 404) == "not_found"
    assert http.get(f"/entities/{ada['id']}").status_code == 200


def test_delete_entity(http: httpx.Client, admin: httpx.Client) -> None:
    ada, bob = entity(http, "Ada"), entity(http, "Bob")
    link(admin, ada["id"], bob["id"], "KNOWS")
    response = http.delete(f"/entities/{bob['id']}")
    assert response.status_code == 204 and response.content == b""
    assert error_code(http.get(f"/entities/{bob['id']}"), 404) == "not_found"
    assert error_code(http.delete(f"/entities/{bob['id']}"), 404) == "not_found"
    assert http.get(f"/entities/{ada['id']}").json()["relationships"] == []


def test_search_exact_names_first_then_words_with_scores(http: httpx.Client) -> None:
    labs = entity(http, "Quartz Labs", "organization", description="glass makers")
    quartz = entity(http, "Quartz", "concept")
    worker = entity(http, "Cy", description="works at quartz labs")
    entity(http, "Unrelated")
    response = http.post("/entities/search", json={"query": "quartz"})
    assert response.status_code == 200, response.text
    body = response.json()
    ids = [e["id"] for e in body["entities"]]
    assert ids[0] == quartz["id"] and set(ids) == {quartz["id"], labs["id"], worker["id"]}
    assert body["searchType"] == "text"
    assert all(0 < e["score"] <= 1 for e in body["entities"][1:])
    typed = http.post("/entities/search", json={"query": "quartz", "type": "person"}).json()
    assert [e["id"] for e in typed["entities"]] == [worker["id"]]
    one = http.post("/entities/search", json={"query": "quartz", "limit": 1}).json()
    assert [e["id"] for e in one["entities"]] == [quartz["id"]]
    empty = http.post("/entities/search", json={"query": "nothing"}).json()
    assert empty["entities"] == []


def test_graph_around_an_entity(http: httpx.Client, admin: httpx.Client) -> None:
    a, b, c, d = (entity(http, name)["id"] for name in ("A", "B", "C", "D"))
    ab = link(admin, a, b, "KNOWS")
    bc = link(admin, b, c, "KNOWS")
    cd = link(admin, c, d, "KNOWS")
    one = http.get("/entities/graph", params={"entityId": a}).json()
    assert {n["id"] for n in one["nodes"]} == {a, b}
    assert [(e["id"], e["source"], e["target"], e["type"]) for e in one["edges"]] == [
        (ab["id"], a, b, "KNOWS")
    ]
    two = http.get("/entities/graph", params={"entityId": a, "depth": 2}).json()
    assert {n["id"] for n in two["nodes"]} == {a, b, c}
    assert [e["id"] for e in two["edges"]] == [ab["id"], bc["id"]]
    three = http.get("/entities/graph", params={"entityId": b, "depth": 3}).json()
    assert [e["id"] for e in three["edges"]] == [ab["id"], bc["id"], cd["id"]]
    assert {n["type"] for n in three["nodes"]} == {"person"}


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({}, 400, "invalid_request"),
        ({"depth": 0}, 400, "invalid_request"),
        ({"depth": 4}, 400, "invalid_request"),
        ({"depth": "deep"}, 400, "invalid_request"),
        ({"entityId": "no-such-entity"}, 404, "not_found"),
    ],
)
def test_graph_bad_requests(
    http: httpx.Client, params: dict[str, Any], status: int, code: str
) -> None:
    start = entity(http, "Start")["id"]
    asked = {"entityId": start, **params} if params and "entityId" not in params else params
    assert error_code(http.get("/entities/graph", params=asked), status) == code


def test_seed_route_is_test_admin_only() -> None:
    with start_nams_server(admin=False) as server, server.client(server.workspace()) as http:
        base = server.base_url.removesuffix(wire.API_PREFIX)
        body = {"sourceId": "a", "targetId": "b", "type": "KNOWS"}
        answer = http.post(f"{base}/_admin/relationships", json=body)
        assert answer.status_code == 404


def test_a_store_without_the_flag_answers_501() -> None:
    register()  # toy:// keeps conversations only: no entities, no graph
    with start_nams_server("toy://") as server, server.client(server.workspace()) as http:
        for response in (
            http.get("/entities/graph", params={"entityId": "x"}),
            http.get("/entities/x"),
            http.delete("/entities/x"),
            http.post("/entities/search", json={"query": "x"}),
            http.put("/entities/x", json={"description": "d"}),
            http.post("/entities/x/merge", json={"targetId": "y"}),
        ):
            assert error_code(response, 501) == "not_supported"


class NoEntityUpdates(EmbeddedStore):
    """The embedded store claiming neither ``entity_updates`` nor ``entity_merge``."""

    capabilities = replace(EmbeddedStore.capabilities, entity_updates=False, entity_merge=False)

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__("memory://", **options)


def test_a_store_with_entities_but_without_updates() -> None:
    """Reads still work (by ``find_entities``, no aliases); updates and merges are 501."""
    register_backend("noupdates", f"{__name__}:{NoEntityUpdates.__qualname__}")
    with start_nams_server("noupdates://") as server, server.client(server.workspace()) as http:
        ada, bob = entity(http, "Ada"), entity(http, "Bob")
        got = http.get(f"/entities/{ada['id']}")
        assert got.status_code == 200 and got.json()["name"] == "Ada"
        put = http.put(f"/entities/{ada['id']}", json={"description": "d"})
        assert error_code(put, 501) == "not_supported"
        merge = http.post(f"/entities/{ada['id']}/merge", json={"targetId": bob["id"]})
        assert error_code(merge, 501) == "not_supported"
        assert http.get(f"/entities/{ada['id']}").json().get("description") is None


# ---------------------------------------------------------------------- update and merge


def test_put_entity_changes_what_the_body_gives(http: httpx.Client) -> None:
    ada = entity(http, "Ada", description="first")
    assert (ada["aliases"], ada["attributes"]) == ([], {})
    [hit] = http.post("/entities/search", json={"query": "Ada"}).json()["entities"]
    assert (hit["aliases"], hit["attributes"]) == ([], {})
    attrs = {"odd": "naïve 🦊 'q\\\" %_", "n": [1.5, None, True], "deep": {"x": {}}}
    body = {"aliases": ["Countess", "COUNTESS", "ada", "Lady"], "attributes": attrs}
    response = http.put(f"/entities/{ada['id']}", json=body)
    assert response.status_code == 200, response.text
    full = response.json()
    assert (full["id"], full["name"], full["type"]) == (ada["id"], "Ada", "person")
    assert (full["aliases"], full["attributes"]) == (["Countess", "Lady"], attrs)
    assert full["description"] == "first" and full["updatedAt"] >= full["createdAt"]
    renamed = http.put(f"/entities/{ada['id']}", json={"name": "Ada L.", "description": None})
    assert renamed.status_code == 200, renamed.text
    assert (renamed.json()["name"], renamed.json()["description"]) == ("Ada L.", "first")
    read = http.get(f"/entities/{ada['id']}").json()
    assert (read["name"], read["aliases"], read["attributes"]) == (
        "Ada L.",
        ["Countess", "Lady"],
        attrs,
    )
    typed = http.put(f"/entities/{ada['id']}", json={"type": "organization", "extra": 1})
    assert typed.status_code == 200 and typed.json()["type"] == "person", typed.text
    cleared = http.put(f"/entities/{ada['id']}", json={"aliases": [], "attributes": {}}).json()
    assert (cleared["aliases"], cleared["attributes"]) == ([], {})
    found = http.post("/entities/search", json={"query": "ada l."}).json()["entities"]
    assert [e["id"] for e in found][:1] == [ada["id"]]


def test_put_entity_errors(http: httpx.Client) -> None:
    taken = entity(http, "Taken")
    ada = entity(http, "Ada", description="kept")
    clash = http.put(f"/entities/{ada['id']}", json={"name": "TAKEN", "description": "lost"})
    assert error_code(clash, 409) == "conflict"
    assert http.get(f"/entities/{ada['id']}").json()["description"] == "kept"
    assert http.get(f"/entities/{taken['id']}").json()["name"] == "Taken"
    unknown = http.put("/entities/no-such-entity", json={"description": "x"})
    assert error_code(unknown, 404) == "not_found"
    for bad in (
        {"name": "x" * 5000},
        {"name": ""},
        {"aliases": ["ok", ""]},
        {"aliases": "not a list"},
        {"attributes": [1, 2]},
        {"description": "x" * (DEFAULT_LIMITS.max_content_chars + 1)},
    ):
        response = http.put(f"/entities/{ada['id']}", json=bad)
        assert error_code(response, 400) == "invalid_request", bad
    after = http.get(f"/entities/{ada['id']}").json()
    assert (after["name"], after["description"], after["aliases"]) == ("Ada", "kept", [])


def test_merge_entity_into_the_target(http: httpx.Client, admin: httpx.Client) -> None:
    target = entity(http, "Target")
    source = entity(http, "Source", description="from the source")
    other = entity(http, "Other")
    http.put(f"/entities/{source['id']}", json={"aliases": ["Nick"], "attributes": {"a": 1}})
    moved = link(admin, other["id"], source["id"], "MANAGES")
    link(admin, source["id"], target["id"], "SAME_PERSON")
    response = http.post(f"/entities/{source['id']}/merge", json={"targetId": target["id"]})
    assert response.status_code == 200, response.text
    merged = response.json()
    assert (merged["id"], merged["name"]) == (target["id"], "Target")
    assert (merged["aliases"], merged["attributes"]) == (["Source", "Nick"], {"a": 1})
    assert merged["description"] == "from the source"
    assert error_code(http.get(f"/entities/{source['id']}"), 404) == "not_found"
    graph = http.get("/entities/graph", params={"entityId": target["id"]}).json()
    assert [(e["id"], e["source"], e["target"]) for e in graph["edges"]] == [
        (moved["id"], other["id"], target["id"])
    ]
    again = http.post(f"/entities/{source['id']}/merge", json={"targetId": target["id"]})
    assert error_code(again, 404) == "not_found"


def test_merge_errors(http: httpx.Client) -> None:
    one, two = entity(http, "One"), entity(http, "Two")
    gone_source = http.post("/entities/gone/merge", json={"targetId": two["id"]})
    assert error_code(gone_source, 404) == "not_found"
    assert "source" in gone_source.json()["error"]["message"]
    gone_target = http.post(f"/entities/{one['id']}/merge", json={"targetId": "gone"})
    assert error_code(gone_target, 404) == "not_found"
    assert "target" in gone_target.json()["error"]["message"]
    same = http.post(f"/entities/{one['id']}/merge", json={"targetId": one["id"]})
    assert error_code(same, 400) == "invalid_request"
    assert error_code(http.post(f"/entities/{one['id']}/merge", json={}), 400) == "invalid_request"
    for kept in (one, two):
        assert http.get(f"/entities/{kept['id']}").status_code == 200


def test_updates_and_merges_stay_in_their_workspace(
    nams_server: NamsTestServer, http: httpx.Client
) -> None:
    ada, bob = entity(http, "Ada"), entity(http, "Bob")
    with nams_server.client(nams_server.workspace()) as other:
        mine = entity(other, "Mine")
        put = other.put(f"/entities/{ada['id']}", json={"description": "x"})
        assert error_code(put, 404) == "not_found"
        into = other.post(f"/entities/{mine['id']}/merge", json={"targetId": ada["id"]})
        assert error_code(into, 404) == "not_found"
        away = other.post(f"/entities/{ada['id']}/merge", json={"targetId": mine["id"]})
        assert error_code(away, 404) == "not_found"
        assert other.get(f"/entities/{mine['id']}").status_code == 200
    assert http.get(f"/entities/{ada['id']}").json().get("description") is None
    assert http.get(f"/entities/{bob['id']}").status_code == 200


def test_listing_every_entity_is_not_served(http: httpx.Client) -> None:
    """No store method lists entities: ``GET /entities`` is not a route."""
    entity(http, "Ada")
    assert error_code(http.get("/entities"), 405) == "method_not_allowed"
