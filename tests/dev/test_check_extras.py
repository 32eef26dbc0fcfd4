"""scripts/check_extras.py: every third-party import of the package is declared for the
extra its module needs, and the checker catches an import that only another extra (or a
dependency's dependency) happens to install."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

PROJECT: dict[str, Any] = {
    "name": "demo-pkg",
    "dependencies": ["anyio>=4"],
    "optional-dependencies": {
        "server": ["fastapi>=0.1"],
        "conformance": ["pytest>=8", "trio"],
        "all": ["demo_pkg[server, conformance]"],
    },
}
DISTRIBUTIONS = {
    "anyio": ["anyio"],
    "fastapi": ["fastapi"],
    "pytest": ["pytest"],
    "trio": ["trio"],
    "sniffio": ["sniffio"],  # installed, but only because trio needs it
}
OWNERS = {"pkg.server": "server", "pkg.suite": "conformance"}


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_extras", ROOT / "scripts/check_extras.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_extras"] = module
    spec.loader.exec_module(module)
    return module


def _problems(tmp_path: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found: list[str] = _checker().problems(tmp_path, PROJECT, DISTRIBUTIONS, OWNERS, "pkg")
    return found


def test_the_package_declares_every_import() -> None:
    import tomllib

    checker = _checker()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    owners = checker.registered_owners()
    assert checker.problems(ROOT, project, checker.provided(), owners) == []


def test_an_import_only_another_extra_installs_is_caught(tmp_path: Path) -> None:
    found = _problems(
        tmp_path,
        {
            "__init__.py": "",
            "store.py": "import anyio\nimport sniffio\n",
            "server/app.py": "import fastapi\nimport pytest\n",
        },
    )
    assert len(found) == 2, found
    server, store = sorted(found)  # pkg/server/app.py sorts before pkg/store.py
    assert "store.py:2: imports 'sniffio'" in store
    assert "core dependencies" in store
    assert "server/app.py:2: imports 'pytest'" in server
    assert "'server' extra" in server


def test_a_function_level_import_counts(tmp_path: Path) -> None:
    found = _problems(tmp_path, {"lazy.py": "def f():\n    import fastapi\n"})
    assert len(found) == 1 and "lazy.py:2: imports 'fastapi'" in found[0]


def test_guarded_and_type_checking_imports_are_allowed(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "try:\n    import fastapi\nexcept ImportError:\n    fastapi = None\n"
        "if TYPE_CHECKING:\n    import pytest\n"
        "from . import sibling\nfrom pkg import other\n"
    )
    assert _problems(tmp_path, {"opt.py": source}) == []


def test_unguarded_import_in_a_try_without_import_handler_counts(tmp_path: Path) -> None:
    source = "try:\n    import trio\nexcept KeyError:\n    pass\n"
    found = _problems(tmp_path, {"t.py": source})
    assert len(found) == 1 and "'trio'" in found[0]


def test_an_extra_that_names_the_project_includes_its_extras() -> None:
    declared = _checker().declared(PROJECT, "all")
    assert declared == {"anyio", "fastapi", "pytest", "trio"}


def test_an_import_no_distribution_provides_is_reported(tmp_path: Path) -> None:
    found = _problems(tmp_path, {"x.py": "import not_installed_anywhere\n"})
    assert len(found) == 1 and "no installed distribution" in found[0]


def test_owner_is_the_longest_prefix() -> None:
    owner = _checker().owner
    assert owner("memory_core.server.app") == "server"
    assert owner("memory_core.integrations.langchain") == "langchain"
    assert owner("memory_core.integrations") == ""
    assert owner("memory_core.serverless") == ""
