"""Adding a backend touches what CONTRIBUTING.md ("Adding a backend") says and no more.

In a copy of the checkout, a fifth built-in backend is added exactly as the list says:
its folder (the example store, renamed), one line in the registry and a two-line test
class (it imports nothing beyond the core's dependencies: no extra). Then only commands
run: the generated docs are rewritten, and every check CI makes of the layout passes —
the import graph, the extras, the generated docs, the scenario catalogue, the registry's
and the docs' tests — and a conformance area runs on the new store. Anything else that
would need editing by hand fails here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REGISTRY_LINE = '    "fifth": BackendSpec("memory_core.backends.fifth:FifthStore"),\n'
TEST_CLASS = """\
from memory_core.conformance import ConformanceSuite


class TestFifthConformance(ConformanceSuite):
    backend_url = "fifth://"
"""


def _copy_checkout(target: Path) -> None:
    """The checkout's files as git sees them (tracked and new, not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            (target / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / os.fsdecode(name))


def _add_the_fifth_backend(repo: Path) -> None:
    folder = repo / "memory_core" / "backends" / "fifth"
    folder.mkdir()
    example = (repo / "memory_core" / "conformance" / "example_backend.py").read_text()
    store = example.replace("ToyStore", "FifthStore").replace('"toy', '"fifth')
    (folder / "store.py").write_text(store.replace("toy://", "fifth://"))
    (folder / "__init__.py").write_text(
        '"""The fifth backend: ``fifth://``."""\n\nfrom .store import FifthStore\n\n'
        '__all__ = ["FifthStore"]\n'
    )
    registry = repo / "memory_core" / "registry.py"
    text = registry.read_text()
    anchor = "_BUILT_IN: dict[str, BackendSpec] = {\n"
    assert anchor in text
    registry.write_text(text.replace(anchor, anchor + REGISTRY_LINE, 1))
    (repo / "tests" / "conformance" / "test_conformance_fifth.py").write_text(TEST_CLASS)


def _run(repo: Path, *command: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMORY_CORE_"))}
    env["PYTHONPATH"] = str(repo)
    done = subprocess.run(
        [sys.executable, *command], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_a_fifth_backend_is_its_folder_one_registry_line_and_a_test_class(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    _copy_checkout(repo)
    _add_the_fifth_backend(repo)
    _run(repo, "scripts/gen_docs.py", "--write")
    table = (repo / "docs" / "capabilities.md").read_text().splitlines()
    header = next(line for line in table if line.startswith("| capability |"))
    columns = [c.strip() for c in header.strip("|").split("|")][2:]
    assert columns == ["fifth", "embedded", "bolt", "postgres", "nams", "nams (server ids)"]
    _run(repo, "scripts/check_imports.py")
    _run(repo, "scripts/check_extras.py")
    _run(repo, "scripts/gen_docs.py", "--check")
    _run(repo, "-m", "memory_core.conformance.catalog", "--check")
    pytest_run = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")
    _run(repo, *pytest_run, "tests/test_registry.py", "tests/test_capabilities.py")
    _run(repo, *pytest_run, "tests/test_cli.py", "tests/docs/test_promise_registry.py")
    out = _run(repo, *pytest_run, "tests/conformance/test_conformance_fifth.py", "-k", "writes")
    assert " passed" in out and "failed" not in out, out
