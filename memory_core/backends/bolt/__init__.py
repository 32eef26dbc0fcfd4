"""The Bolt backend: conversation memory in Neo4j (``bolt://``, ``neo4j://`` and ``+s`` /
``+ssc``), graph-compatible with neo4j-agent-memory 0.8.0."""

from .store import BoltStore

__all__ = ["BoltStore"]
