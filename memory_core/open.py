"""``open_backend``: pick and build a backend from a URL."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .backend import MemoryBackend
from .errors import ConfigurationError
from .registry import store_class
from .settings import Settings, default_url, redact_url


def open_backend(
    url: str | Settings | None = None, *, backend: str | None = None, **options: Any
) -> MemoryBackend:
    """Build the backend a URL names; use it with ``async with``.

    The scheme picks the backend: ``memory://`` (private, in-process), ``sqlite:///path``,
    ``bolt://`` / ``neo4j://`` (and ``+s`` / ``+ssc``), ``nams+https://host/v1``. A plain
    ``https://`` URL needs ``backend="nams"``. With no URL, ``MEMORY_BACKEND_URL`` or the
    embedded store in the user's data directory is used. ``options`` go to the backend
    (``strict``, ``multi_tenant``, ``embedder`` … and backend-specific ones).
    """
    if isinstance(url, Settings):
        options = {**url.options, **options}
        url = url.url
    if url is None:
        url = default_url()
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError("backend URL must be a non-empty string")
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if backend is not None:
        if scheme in ("http", "https"):
            scheme = f"{backend.lower()}+{scheme}"
        elif scheme and backend.lower() not in _names_of(scheme):
            raise ConfigurationError(
                f"backend={backend!r} does not match the URL scheme {scheme!r} (the "
                f"{store_class(scheme).name} backend's)"
            )
    if scheme in ("http", "https"):
        raise ConfigurationError(
            f"{redact_url(url)}: an http(s) URL is ambiguous; use nams+{scheme}://… or pass "
            'backend="nams"'
        )
    if not scheme:
        raise ConfigurationError(f"{redact_url(url)!r} has no scheme (e.g. memory://, bolt://)")
    return MemoryBackend.over(store_class(scheme), url, **options)


def _names_of(scheme: str) -> set[str]:
    """What ``backend=`` may say for a URL: its store's name, or the scheme's first word
    (``memory`` for ``memory://``, ``neo4j`` for ``neo4j+s://``)."""
    return {store_class(scheme).name, scheme.partition("+")[0]}
