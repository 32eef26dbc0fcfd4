"""scripts/check_imports.py: the package has no import cycle and no wrong-way import, and
the checker sees both kinds of problem in a package made to have them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_imports", ROOT / "scripts/check_imports.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_imports"] = module
    spec.loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_package_has_no_cycle_and_no_wrong_way_import() -> None:
    checker = _checker()
    assert checker.problems(checker.graph()) == []


def test_lazy_and_type_checking_cycles_and_a_backend_importing_another_are_found(
    tmp_path: Path,
) -> None:
    checker = _checker()
    _write(
        tmp_path,
        {
            "memory_core/__init__.py": "",
            "memory_core/a.py": "def f():\n    from . import b\n",  # lazy: still a tie
            "memory_core/b.py": "from memory_core import a\n",
            "memory_core/c.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from . import d\n",  # types only: still a circle
            "memory_core/d.py": "from . import c\n",
            "memory_core/backends/__init__.py": "",
            "memory_core/backends/x/__init__.py": "from memory_core.backends.y import store\n",
            "memory_core/backends/y/__init__.py": "",
            "memory_core/backends/y/store.py": "",
        },
    )
    found = checker.problems(checker.graph(tmp_path, "memory_core"))
    assert found == [
        "import cycle: memory_core.a <-> memory_core.b",
        "import cycle: memory_core.c <-> memory_core.d",
        "wrong direction: memory_core.backends.x (backends.x) imports "
        "memory_core.backends.y.store (backends.y): a store imports only memory_core.store, "
        "its own folder and third-party packages",
    ]


def test_a_store_may_import_the_store_face_and_nothing_else_of_the_core(tmp_path: Path) -> None:
    checker = _checker()
    _write(
        tmp_path,
        {
            "memory_core/__init__.py": "from .backend import MemoryBackend\n",
            "memory_core/backend.py": "from . import models\n",
            "memory_core/models.py": "",
            "memory_core/store.py": "from .models import *\n",
            "memory_core/backends/__init__.py": "",
            "memory_core/backends/x/__init__.py": "from .store import XStore\n",
            "memory_core/backends/x/store.py": "from memory_core.store import Message\n"
            "from . import rows\n",
            "memory_core/backends/x/rows.py": "from memory_core import MemoryBackend\n"
            "from memory_core.models import Message\n",
        },
    )
    found = checker.problems(checker.graph(tmp_path, "memory_core"))
    assert found == [
        f"wrong direction: memory_core.backends.x.rows (backends.x) imports {target} "
        f"({area}): a store imports only memory_core.store, its own folder and third-party "
        "packages"
        for target, area in (("memory_core", "core"), ("memory_core.models", "core"))
    ]
