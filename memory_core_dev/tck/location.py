"""Where the TCK snapshot is: ``MEMORY_CORE_TCK``, else ``shared/tck`` beside the
checkout or beside its parent (the layout this project is developed in)."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "MEMORY_CORE_TCK"
_ROOT = Path(__file__).resolve().parents[2]
_PLACES = (_ROOT.parent / "shared" / "tck", Path("/work/shared/tck"))


def find() -> Path:
    """The TCK's root (holding ``tck/adapters/base_adapter.py``); ``FileNotFoundError``
    naming where it looked when there is none."""
    given = os.environ.get(ENV)
    places = [Path(given)] if given else list(_PLACES)
    for place in places:
        if (place / "tck" / "adapters" / "base_adapter.py").is_file():
            return place
    looked = ", ".join(str(p) for p in places)
    raise FileNotFoundError(f"no agent-memory TCK at {looked}; set {ENV} to its folder")
