"""Tests mirror the package (CONTRIBUTING.md, "Layout"): each module at the top of
``memory_core`` has ``tests/test_<module>.py`` or a folder ``tests/<module>/``, and each
folder of the package has ``tests/<folder>/``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "memory_core"
TESTS = ROOT / "tests"


def test_each_module_at_the_top_of_the_package_has_its_test_file() -> None:
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(modules) > 20
    missing = [
        m for m in modules if not (TESTS / f"test_{m}.py").is_file() and not (TESTS / m).is_dir()
    ]
    assert missing == []


def test_each_folder_of_the_package_has_its_test_folder() -> None:
    folders = sorted(
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
    )
    assert "backends" in folders
    # the archive format is tested with the transfers that write and read it; telemetry
    # under the name of its extra, otel
    tested_with = {"archive": "transfer", "telemetry": "otel"}
    missing = [f for f in folders if not (TESTS / tested_with.get(f, f)).is_dir()]
    assert missing == []
    backends = sorted(
        p.name for p in (PACKAGE / "backends").iterdir() if (p / "__init__.py").is_file()
    )
    assert [b for b in backends if not (TESTS / "backends" / b).is_dir()] == []
