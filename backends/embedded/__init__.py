"""The embedded default backend: SQLite from the standard library.

``memory://`` (private, in-process) and ``sqlite:///path/to/file.db`` (persistent) both
map to :class:`EmbeddedBackend` in the URL registry.
"""

from .backend import EmbeddedBackend

__all__ = ["EmbeddedBackend"]
