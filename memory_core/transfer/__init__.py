"""Move memory between backends: a portable archive, export, import and copy.

The archive is JSON Lines (gzip when the file name ends in ``.gz``), one record per
line — ``header``, ``entity``, ``conversation``, ``message``, ``mention``,
``relationship``, ``preference``, ``fact``, ``trace``, ``step``, ``tool_call``, ``end``
(format version 3) — as described by
the JSON Schema shipped in ``schema.json`` (:func:`schema`). See the documentation
page "Moving memory between backends" (``docs/transfer.md``).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from ..archive.errors import ArchiveError
from ..archive.files import read_records
from ..archive.hooks import BulkTransfer, ImportState, OnConflict
from ..archive.records import FORMAT, FORMAT_VERSION, check_record
from ..archive.report import TransferReport
from .copy import copy_memory
from .export import SESSION_KEY, export_memory, iter_records
from .importer import ON_CONFLICT, import_memory


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every archive record follows."""
    text = resources.files(__name__).joinpath("schema.json").read_text(encoding="utf-8")
    value: dict[str, Any] = json.loads(text)
    return value


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ON_CONFLICT",
    "SESSION_KEY",
    "ArchiveError",
    "BulkTransfer",
    "ImportState",
    "OnConflict",
    "TransferReport",
    "check_record",
    "copy_memory",
    "export_memory",
    "import_memory",
    "iter_records",
    "read_records",
    "schema",
]
