"""The Neo4j Agent Memory Service (NAMS): client adapter, wire contract and server.

* :class:`NamsBackend` (``nams+https://host/v1``) — the contract over the hosted service;
* :mod:`backends.nams.wire` — routes, camelCase shapes, limits, error envelope (shared by
  both sides);
* :mod:`backends.nams.server` — a NAMS-compatible ASGI server over any backend
  (``memory-core serve``; needs the ``server`` extra).
"""

from .backend import NamsBackend

__all__ = ["NamsBackend"]
