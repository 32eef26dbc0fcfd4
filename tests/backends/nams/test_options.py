"""Every option of the NAMS backend: its default, a value given reaching what it
configures, and each refused value a ``ConfigurationError`` that names the option (and
never shows a key)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from memory_core import ConfigurationError
from memory_core.backends.nams import NamsStore
from memory_core.backends.nams.sessions import DEFAULT_CACHE_SIZE
from memory_core.backends.nams.transport import RetryPolicy

URL = "nams+https://nams.test/v1"


def store(**options: Any) -> NamsStore:
    return NamsStore(URL, **options)


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMORY_API_KEY", "MEMORY_WORKSPACE_ID", "MEMORY_SESSION_SECRET"):
        monkeypatch.delenv(name, raising=False)
    made = store()
    assert made.session_names == "portable" and made.workspace_id is None
    assert made._http.retry == RetryPolicy(
        max_retries=3, backoff=0.5, max_backoff=8.0, max_retry_after=60.0
    )
    assert made._http._timeout == httpx.Timeout(30.0, connect=10.0)
    assert made._http._trust_env is True
    assert made._names is not None and made._names.cache.names.size == DEFAULT_CACHE_SIZE
    assert made._names.cache.ids.size == DEFAULT_CACHE_SIZE
    headers = made._http._headers()
    assert "Authorization" not in headers and "X-Workspace-Id" not in headers


def test_given_values_reach_what_they_configure() -> None:
    made = store(
        api_key="k-1",
        workspace_id="team",
        timeout=5,
        connect_timeout=2,
        max_retries=0,
        backoff=0.25,
        max_backoff=4,
        max_retry_after=9,
        trust_env=0,
        session_cache_size=7,
    )
    assert made._http.retry == RetryPolicy(
        max_retries=0, backoff=0.25, max_backoff=4.0, max_retry_after=9.0
    )
    assert made._http._timeout == httpx.Timeout(5.0, connect=2.0)
    assert made._http._trust_env is False
    assert made._http.base_url == "https://nams.test/v1" == made.base_url
    assert made._http.workspace_id == "team" == made.workspace_id
    assert made._http.backend == "nams"
    headers = made._http._headers()
    assert headers["Authorization"] == "Bearer k-1" and headers["X-Workspace-Id"] == "team"
    assert made._names is not None and made._names.cache.names.size == 7
    assert store(session_cache_size=0)._names.cache.names.size == 1  # type: ignore[union-attr]
    assert store(session_names="server")._names is None
    transport = httpx.MockTransport(lambda request: httpx.Response(204))
    assert store(http_transport=transport)._http._http_transport is transport


def test_environment_fills_what_is_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_API_KEY", "env-key")
    monkeypatch.setenv("MEMORY_WORKSPACE_ID", "env-ws")
    from_env = store()
    assert from_env.workspace_id == "env-ws"
    assert from_env._http._headers()["Authorization"] == "Bearer env-key"
    given = store(api_key="mine", workspace_id="ours")
    assert given.workspace_id == "ours"
    assert given._http._headers()["Authorization"] == "Bearer mine"
    monkeypatch.setenv("MEMORY_API_KEY", "")
    assert "Authorization" not in store()._http._headers()  # empty: no key


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout", 0),
        ("timeout", -1),
        ("timeout", True),
        ("timeout", "30"),
        ("connect_timeout", 0),
        ("backoff", 0.0),
        ("max_backoff", -2),
        ("max_retry_after", 0),
        ("max_retries", -1),
        ("max_retries", 1.5),
        ("max_retries", False),
        ("session_cache_size", -1),
        ("session_cache_size", "10"),
        ("api_key", ""),
        ("api_key", "   "),
        ("api_key", 12345),
        ("workspace_id", 7),
        ("http_transport", "https://proxy.test"),
        ("session_index", 3),
        ("session_names", "names"),
    ],
)
def test_a_refused_value_names_its_option(option: str, value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        store(**{option: value})
    assert option in str(caught.value)
    if option == "api_key":
        assert str(value).strip() == "" or str(value) not in str(caught.value)


@pytest.mark.parametrize(
    "option",
    [
        "timeout",
        "connect_timeout",
        "backoff",
        "max_backoff",
        "max_retry_after",
        "max_retries",
        "session_cache_size",
    ],
)
def test_a_refused_number_is_named_as_the_option_is_spelled(option: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        store(**{option: -1})
    assert str(caught.value).startswith(f"nams backend: {option} must be ")


def test_the_session_secret_variable_is_not_read_for_server_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An unusable value shows whether the variable was read at all.
    monkeypatch.setenv("MEMORY_SESSION_SECRET", "   ")
    assert store(session_names="server")._names is None
    with pytest.raises(ConfigurationError, match="MEMORY_SESSION_SECRET"):
        store(session_names="portable")


def test_session_index_needs_portable_names(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="session_index"):
        store(session_names="server", session_index=str(tmp_path / "x.db"))
    assert store(session_index=tmp_path / "x.db")._session_index == tmp_path / "x.db"


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("nams+https://h.test/v1", "https://h.test/v1"),
        ("NAMS+HTTPS://h.test/v1/", "https://h.test/v1"),
        ("nams+https://h.test", "https://h.test/v1"),
        ("nams+https://h.test/", "https://h.test/v1"),
        ("nams://h.test/api", "https://h.test/api"),
        ("nams+http://127.0.0.1:8080/v2", "http://127.0.0.1:8080/v2"),
        ("Nams+Http://h.test", "http://h.test/v1"),
        ("https://h.test/v1", "https://h.test/v1"),
        ("http://h.test:81", "http://h.test:81/v1"),
        ("nams+https://[::1]:9/v1", "https://[::1]:9/v1"),
    ],
)
def test_urls_name_their_base(url: str, base: str) -> None:
    assert NamsStore(url).base_url == base


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("nams+https://h.test/BOX/", "https://h.test/BOX"),
        ("nams+https://h.test/v1/XX", "https://h.test/v1/XX"),
    ],
)
def test_only_trailing_slashes_leave_the_path(url: str, base: str) -> None:
    assert NamsStore(url).base_url == base


def test_a_bare_url_without_the_endpoint_variable_says_to_set_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MEMORY_ENDPOINT", raising=False)
    with pytest.raises(ConfigurationError, match="set MEMORY_ENDPOINT to the service URL"):
        NamsStore("nams://")


@pytest.mark.parametrize(
    ("endpoint", "base"),
    [
        ("https://e.test/v1", "https://e.test/v1"),
        ("  HTTP://e.test  ", "http://e.test/v1"),
    ],
)
def test_a_bare_url_takes_the_endpoint_variable(
    monkeypatch: pytest.MonkeyPatch, endpoint: str, base: str
) -> None:
    monkeypatch.setenv("MEMORY_ENDPOINT", endpoint)
    assert NamsStore("nams://").base_url == base
    assert NamsStore(None).base_url == base


@pytest.mark.parametrize(
    ("url", "endpoint", "named"),
    [
        ("nams://", None, "MEMORY_ENDPOINT"),
        ("nams://", "   ", "MEMORY_ENDPOINT"),
        ("nams://", "ftp://e.test", "MEMORY_ENDPOINT"),
        ("bolt://h.test", None, "not a NAMS URL"),
        ("nams+https:///v1", None, "no host"),
        ("nams+https://user@h.test/v1", None, "credentials"),
        ("nams+https://h.test/v1#frag", None, "query strings"),
        (42, None, "must be a string"),
    ],
)
def test_a_refused_url_says_why(
    monkeypatch: pytest.MonkeyPatch, url: Any, endpoint: str | None, named: str
) -> None:
    monkeypatch.delenv("MEMORY_ENDPOINT", raising=False)
    if endpoint is not None:
        monkeypatch.setenv("MEMORY_ENDPOINT", endpoint)
    with pytest.raises(ConfigurationError, match=named):
        NamsStore(url)
