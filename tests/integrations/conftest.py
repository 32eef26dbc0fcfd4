from memory_core_dev.sync_stores import sync_store

__all__ = ["sync_store"]
