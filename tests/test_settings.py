"""Settings and URL handling never leak secrets."""

from __future__ import annotations

import pytest

from memory_core import ConfigurationError, Settings, open_backend
from memory_core.settings import default_store_path, default_url, redact_url


def test_redact_url_hides_password_and_secret_query_values() -> None:
    url = "neo4j+s://alice:s3cret@db.example:7687/?database=mem&api_key=k3y&token=t0k"
    shown = redact_url(url)
    assert "s3cret" not in shown and "k3y" not in shown and "t0k" not in shown
    assert "alice" in shown and "database=mem" in shown


@pytest.mark.parametrize(
    "parameter",
    ["sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key", "PASSWORD"],
)
def test_redact_url_hides_libpq_secret_parameters(parameter: str) -> None:
    shown = redact_url(f"postgresql://u@h/db?{parameter}=v4lue&sslmode=require")
    assert "v4lue" not in shown and f"{parameter}=" in shown and "sslmode=require" in shown


def test_settings_repr_hides_secret_options() -> None:
    settings = Settings("bolt://u:pw123@h:7687", {"password": "pw123", "api_key": "abc", "x": 1})
    text = repr(settings)
    assert "pw123" not in text and "abc" not in text and "'x': 1" in text


def test_default_url_prefers_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORY_BACKEND_URL", "memory://")
    assert default_url() == "memory://"
    monkeypatch.delenv("MEMORY_BACKEND_URL")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "memory-core" / "memory.db"
    assert default_url() == f"sqlite:///{tmp_path}/memory-core/memory.db"


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("nosuch://x", "unknown backend scheme 'nosuch'"),
        ("https://api.example/v1", "ambiguous"),
        ("just-a-path", "has no scheme"),
        ("", "non-empty"),
    ],
)
def test_open_backend_rejects_bad_urls(url: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        open_backend(url)
