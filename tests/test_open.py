"""``open_backend``: which store a URL (or ``Settings``, or ``MEMORY_BACKEND_URL``) picks,
and the URLs it refuses. Nothing here connects: a backend is built, never opened."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import MemoryBackend, Settings
from memory_core.errors import ConfigurationError
from memory_core.open import open_backend
from memory_core.registry import store_class


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection or name lookup fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"open_backend touched the network: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("memory://", "embedded"),
        ("MEMORY://", "embedded"),
        ("nams+https://memory.example.invalid/v1", "nams"),
        ("bolt://127.0.0.1:1", "bolt"),
        ("neo4j+s://db.example.invalid", "bolt"),
    ],
)
def test_the_scheme_picks_the_store(url: str, name: str) -> None:
    backend = open_backend(url, api_key="k") if name == "nams" else open_backend(url)
    assert isinstance(backend, MemoryBackend)
    assert backend.name == name
    assert type(backend.store) is store_class(url.partition("://")[0].lower())


def test_a_sqlite_url_is_built_without_creating_the_file(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    backend = open_backend(f"sqlite:///{db}")
    assert backend.name == "embedded"
    assert str(db) in backend.describe()
    assert not db.exists()


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_an_http_url_with_backend_nams_opens_nams(scheme: str) -> None:
    backend = open_backend(f"{scheme}://memory.example.invalid/v1", backend="NAMS", api_key="k")
    assert backend.name == "nams"


@pytest.mark.parametrize("scheme", ["https", "http", "HTTPS"])
def test_an_http_url_without_backend_is_ambiguous(scheme: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        open_backend(f"{scheme}://user:hunter2@memory.example.invalid/v1")
    message = str(caught.value)
    assert f"nams+{scheme.lower()}://" in message
    assert 'backend="nams"' in message
    assert "hunter2" not in message


@pytest.mark.parametrize(
    ("url", "backend"),
    [("memory://", "bolt"), ("bolt://127.0.0.1:1", "nams"), ("sqlite:///x.db", "memory")],
)
def test_a_backend_that_does_not_match_the_scheme_is_refused(url: str, backend: str) -> None:
    with pytest.raises(ConfigurationError, match="does not match the URL scheme"):
        open_backend(url, backend=backend)


def test_a_backend_matching_the_scheme_is_accepted() -> None:
    assert open_backend("memory://", backend="embedded").name == "embedded"
    assert open_backend("sqlite:///x.db", backend="Embedded").name == "embedded"
    assert open_backend("bolt+s://db.example.invalid", backend="bolt").name == "bolt"
    assert open_backend("memory://", backend="memory").name == "embedded"
    assert open_backend("neo4j+s://db.example.invalid", backend="neo4j").name == "bolt"


@pytest.mark.parametrize(("url", "backend"), [("bolt://h", "bo"), ("nams://h/v1", "nam")])
def test_a_prefix_of_the_backend_is_not_its_name(url: str, backend: str) -> None:
    with pytest.raises(ConfigurationError, match="does not match the URL scheme"):
        open_backend(url, backend=backend)


@pytest.mark.parametrize("url", ["localhost:7687", "just-a-name", "/var/lib/memory.db"])
def test_a_url_without_a_scheme_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="has no scheme"):
        open_backend(url)


@pytest.mark.parametrize("url", ["", "   ", 5, b"memory://"])
def test_an_empty_or_non_string_url_is_refused(url: Any) -> None:
    with pytest.raises(ConfigurationError, match="non-empty string"):
        open_backend(url)


def test_an_unknown_scheme_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown backend scheme 'nosuch'"):
        open_backend("nosuch://x")


def test_settings_give_the_url_and_the_options() -> None:
    backend = open_backend(Settings("memory://", {"strict": True}))
    assert backend.name == "embedded" and backend.strict is True
    # keywords given to open_backend win over the settings' options
    assert open_backend(Settings("memory://", {"strict": True}), strict=False).strict is False


def test_options_reach_the_store() -> None:
    backend = open_backend("memory://", multi_tenant=True)
    assert backend.store.multi_tenant is True


def test_no_url_uses_memory_backend_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_BACKEND_URL", "nams+https://memory.example.invalid/v1")
    assert open_backend(api_key="k").name == "nams"
    assert open_backend(Settings.from_env(api_key="k")).name == "nams"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG_DATA_HOME is Linux's")
def test_no_url_and_no_variable_is_the_embedded_store_in_the_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("MEMORY_BACKEND_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    backend = open_backend()
    assert backend.name == "embedded"
    assert str(tmp_path / "memory-core" / "memory.db") in backend.describe()
    assert not (tmp_path / "memory-core" / "memory.db").exists()


def test_a_plain_with_says_to_use_async_with_or_the_blocking_api() -> None:
    memory = open_backend("memory://")
    with pytest.raises(TypeError, match="async with open_backend") as refused, memory:
        pass  # the mistake a new user makes: a plain with
    assert "memory_core.sync.open_backend" in str(refused.value)
    assert repr(memory).endswith(" new>")  # nothing was opened
