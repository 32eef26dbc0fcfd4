"""URL scheme → store class, with lazy imports, install hints and entry points.

A backend is a :class:`~memory_core.interface.Store` subclass; :func:`memory_core.open_backend`
wraps the store of a URL's scheme in :class:`~memory_core.MemoryBackend`. Built-in schemes
are listed here as dotted paths so importing memory-core imports no backend. Third-party
backends register with :func:`register_backend` or, without any code in the application,
through the entry-point group ``memory_core.backends`` (entry name = URL scheme, value =
``"package.module:StoreClass"``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

from .errors import ConfigurationError

if TYPE_CHECKING:
    from .interface import Store

ENTRY_POINT_GROUP = "memory_core.backends"


@dataclass(frozen=True)
class BackendSpec:
    """Where a scheme's class lives and which extra (if any) it needs."""

    path: str
    extra: str | None = None


_EMBEDDED = BackendSpec("memory_core.backends.embedded:EmbeddedStore")
_BOLT = BackendSpec("memory_core.backends.bolt:BoltStore")
_NAMS = BackendSpec("memory_core.backends.nams:NamsStore")
_POSTGRES = BackendSpec("memory_core.backends.postgres:PostgresStore", extra="postgres")

_BUILT_IN: dict[str, BackendSpec] = {
    "memory": _EMBEDDED,
    "sqlite": _EMBEDDED,
    **{s: _BOLT for s in ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")},
    **{s: _POSTGRES for s in ("postgresql", "postgres")},
    **{s: _NAMS for s in ("nams", "nams+https", "nams+http")},
}
_registry: dict[str, BackendSpec] = dict(_BUILT_IN)


def register_backend(
    scheme: str, path: str, *, extra: str | None = None, replace: bool = False
) -> None:
    """Map ``scheme`` to ``"package.module:StoreClass"`` (a :class:`~memory_core.interface.Store`
    subclass); ``extra`` names the pip extra it needs."""
    key = scheme.lower()
    if key in _registry and not replace and _registry[key].path != path:
        raise ConfigurationError(
            f"scheme {scheme!r} is already registered to {_registry[key].path}"
        )
    _registry[key] = BackendSpec(path, extra)


def built_in() -> dict[str, BackendSpec]:
    """The built-in stores, one entry per store: its first scheme → where it lives and the
    extra it needs (what the docs' columns and the extras check are made from)."""
    found: dict[str, BackendSpec] = {}
    for scheme, spec in _BUILT_IN.items():
        if spec not in found.values():
            found[scheme] = spec
    return found


def known_schemes() -> list[str]:
    """Every scheme that can be opened: built-in, registered and from entry points."""
    return sorted(set(_registry) | {ep.name.lower() for ep in _entry_points()})


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _spec(scheme: str) -> BackendSpec:
    key = scheme.lower()
    if key in _registry:
        return _registry[key]
    for ep in _entry_points():
        if ep.name.lower() == key:
            return BackendSpec(ep.value)
    raise ConfigurationError(
        f"unknown backend scheme {scheme!r}; known schemes: {', '.join(known_schemes())}"
    )


def store_class(scheme: str) -> type[Store]:
    """Import and return the :class:`~memory_core.interface.Store` class for ``scheme``."""
    from .interface import Store

    spec = _spec(scheme)
    module_name, _, attr = spec.path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = (
            f'install it with: pip install "memory-core[{spec.extra}]"'
            if spec.extra
            else f"is the package providing {module_name!r} installed?"
        )
        raise ConfigurationError(
            f"the {scheme!r} backend could not be imported ({exc.name or exc}); {hint}"
        ) from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Store)):
        raise ConfigurationError(
            f"{spec.path} is not a memory_core.interface.Store subclass (a store)"
        )
    return cls
