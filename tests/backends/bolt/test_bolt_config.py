"""URL and option parsing, credential precedence and secret hygiene (no server needed)."""

from __future__ import annotations

import pytest

from memory_core import ConfigurationError, open_backend
from memory_core.backends.bolt import BoltStore
from memory_core.backends.bolt.config import parse_config

SECRET = "s3cr3t-pa55"


@pytest.mark.parametrize("scheme", ["bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"])
def test_every_scheme_opens_a_bolt_backend(scheme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
        monkeypatch.delenv(name, raising=False)  # the URL alone: not the test server's
    backend = open_backend(f"{scheme}://db.example:7688")
    assert isinstance(backend.store, BoltStore)
    assert backend.describe() == f"{scheme}://db.example:7688"
    assert isinstance(backend.store, BoltStore)
    assert backend.store._config.uri == f"{scheme}://db.example:7688"


def test_default_port_and_database_from_url() -> None:
    config = parse_config("bolt://localhost?database=memory", environ={})
    assert config.uri == "bolt://localhost:7687"
    assert config.database == "memory"
    assert config.auth is None
    assert config.describe() == "bolt://localhost:7687/memory"


def test_database_precedence() -> None:
    env = {"NEO4J_DATABASE": "from-env"}
    assert parse_config("bolt://h", environ=env).database == "from-env"
    assert parse_config("bolt://h", database="opt", environ=env).database == "opt"
    assert parse_config("bolt://h?database=url", environ=env).database == "url"
    assert parse_config("bolt://h?database=x", database="x", environ=env).database == "x"
    with pytest.raises(ConfigurationError, match="give it once"):
        parse_config("bolt://h?database=a", database="b", environ={})
    assert parse_config("bolt://h", environ={}).database is None


def test_credentials_from_url_options_or_env() -> None:
    env = {"NEO4J_USERNAME": "envuser", "NEO4J_PASSWORD": "envpass"}
    assert parse_config("bolt://u:p%40ss@h", environ=env).auth == ("u", "p@ss")
    assert parse_config("bolt://h", username="o", password="q", environ=env).auth == ("o", "q")
    assert parse_config("bolt://h", auth=("a", "b"), environ=env).auth == ("a", "b")
    assert parse_config("bolt://h", environ=env).auth == ("envuser", "envpass")
    assert parse_config("bolt://h", environ={}).auth is None
    # a half-set pair from the environment names the variables to fix
    with pytest.raises(ConfigurationError, match="NEO4J_USERNAME/NEO4J_PASSWORD"):
        parse_config("bolt://h", environ={"NEO4J_PASSWORD": "envpass"})


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("bolt://u:p@h", {"username": "x", "password": "y"}, "both in the URL and as options"),
        ("bolt://h", {"auth": ("a", "b"), "username": "x"}, "not both"),
        ("bolt://h", {"auth": "a:b"}, "pair"),
        ("bolt://h", {"username": "x"}, "password must be a str"),
        ("bolt://:p@h", {}, "no user name"),
        ("bolt://h?password=p", {}, "credentials do not belong in the query"),
        ("bolt://h?foo=1", {}, "unknown query parameter"),
        ("bolt://h/db", {}, "must not have a path"),
        ("bolt://", {}, "needs a host"),
        ("bolt://h:notaport", {}, "not a valid URL"),
        ("http://h", {}, "unsupported scheme"),
        ("bolt://h?database=", {}, "must not be empty"),
    ],
)
def test_bad_configuration_is_refused(url: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_config(url, environ={}, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["password", "username", "user", "auth", "PassWord"])
def test_credentials_never_go_into_a_routing_context(key: str) -> None:
    # a neo4j:// URL keeps its other query parameters as routing context (sent to the
    # cluster): a credential there would be sent too
    with pytest.raises(ConfigurationError, match="credentials do not belong in the query"):
        parse_config(f"neo4j://h?region=eu&{key}=secret", environ={})


def test_routing_context_is_kept_for_neo4j_urls() -> None:
    assert parse_config("neo4j://h?region=eu", environ={}).uri == "neo4j://h:7687?region=eu"


def test_bad_options_raise_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="max_connection_pool_size"):
        open_backend("bolt://h", max_connection_pool_size=0)
    with pytest.raises(ConfigurationError, match="connection_timeout"):
        open_backend("bolt://h", connection_timeout="5")
    with pytest.raises(ConfigurationError, match="no_such_option"):
        open_backend("bolt://h", no_such_option=1)
    with pytest.raises(ConfigurationError, match="create_schema"):
        open_backend("bolt://h", create_schema="yes")


def test_secrets_never_show(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_PASSWORD", SECRET)
    monkeypatch.setenv("NEO4J_USERNAME", "envuser")
    for backend in (
        open_backend(f"bolt://alice:{SECRET}@db.example:7687?database=mem"),
        open_backend("neo4j+s://db.example", username="alice", password=SECRET),
        open_backend("bolt://db.example", auth=("alice", SECRET)),
        open_backend("bolt://db.example"),
    ):
        assert isinstance(backend.store, BoltStore)
        shown = " ".join(
            [repr(backend), backend.describe(), str(backend), repr(backend.store._config)]
        )
        assert SECRET not in shown
        assert backend.store._config.password == SECRET
    assert open_backend(f"bolt://alice:{SECRET}@h").describe() == "bolt://alice@h:7687"
    with pytest.raises(ConfigurationError) as info:
        open_backend(f"bolt://alice:{SECRET}@h", password="other")
    assert SECRET not in str(info.value)


def test_a_bare_scheme_uses_neo4j_uri() -> None:
    env = {"NEO4J_URI": "neo4j+s://db.example:7688", "NEO4J_DATABASE": "mem"}
    config = parse_config("neo4j://", environ=env)
    assert (config.uri, config.database) == ("neo4j+s://db.example:7688", "mem")
    assert parse_config("bolt://?database=other", environ=env).database == "other"
    pooled = parse_config("neo4j://", driver_options={"max_connection_pool_size": 7}, environ=env)
    assert dict(pooled.driver_options) == {"max_connection_pool_size": 7}
    with pytest.raises(ConfigurationError, match="NEO4J_URI"):
        parse_config("bolt://", environ={})


def test_a_bare_scheme_adds_its_query_to_neo4j_uris_own() -> None:
    env = {"NEO4J_URI": "neo4j://db.example?region=eu"}
    config = parse_config("neo4j://?database=mem&zone=a", environ=env)
    assert config.uri == "neo4j://db.example:7687?region=eu&zone=a"
    assert config.database == "mem"
    plain = parse_config("neo4j://?zone=a", environ={"NEO4J_URI": "neo4j://db.example"})
    assert plain.uri == "neo4j://db.example:7687?zone=a"


@pytest.mark.parametrize(
    "options",
    [{"username": "", "password": "p"}, {"username": 7, "password": "p"}],
    ids=["empty", "not-a-str"],
)
def test_a_user_name_must_be_a_non_empty_str(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="a non-empty user name is required"):
        parse_config("bolt://h", environ={}, **options)  # type: ignore[arg-type]
