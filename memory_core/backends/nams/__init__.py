"""The Neo4j Agent Memory Service (NAMS) client: :class:`NamsBackend`
(``nams+https://host/v1``), the contract over the hosted service.

The wire contract it shares with the NAMS-compatible server (:mod:`memory_core.server`)
is :mod:`memory_core.nams_wire`.
"""

from .store import NamsStore

__all__ = ["NamsStore"]
