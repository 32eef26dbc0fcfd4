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


def test_a_lazy_cycle_and_a_backend_importing_another_are_found(tmp_path: Path) -> None:
    checker = _checker()
    _write(
        tmp_path,
        {
            "memory_core/__init__.py": "",
            "memory_core/a.py": "def f():\n    from . import b\n",  # lazy: still a tie
            "memory_core/b.py": "from memory_core import a\n",
            "memory_core/c.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from . import d\n",  # never runs: no tie
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
        "wrong direction: memory_core.backends.x (backends.x) imports "
        "memory_core.backends.y.store (backends.y)",
    ]
