from tests.support.sync_stores import sync_store

__all__ = ["sync_store"]
