"""The PostgreSQL backend: psycopg 3 (async) with a connection pool.

``postgresql://…`` and ``postgres://…`` map to :class:`PostgresStore` in the URL registry
(:class:`PostgresBackend` is the public API over it, for direct construction). Needs the
``postgres`` extra: ``pip install "memory-core[postgres]"``.
"""

from .store import PostgresStore

__all__ = ["PostgresStore"]
