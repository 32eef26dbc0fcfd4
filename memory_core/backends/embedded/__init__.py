"""The embedded default backend: SQLite from the standard library.

``memory://`` (private, in-process) and ``sqlite:///path/to/file.db`` (persistent) both
map to :class:`EmbeddedStore` in the URL registry (:class:`EmbeddedBackend` is the
public API over it, for direct construction).
"""

from .store import EmbeddedStore

__all__ = ["EmbeddedStore"]
