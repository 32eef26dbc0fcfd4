"""The fresh-process pass of the mutation script (``scripts/mutation_fresh.py``): which
functions run at import time, how one mutant's run is read, which mutants are measured
again, and how the results go over mutmut's."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPTS))  # mutation.py imports mutation_fresh
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return _load("mutation_fresh", monkeypatch)


def test_mutmut_names_of_functions_and_methods(fresh: ModuleType) -> None:
    assert fresh.mangled("pkg.mod", "build") == "pkg.mod.x_build"
    assert fresh.mangled("pkg.mod", "Scoped.build") == "pkg.mod.xǁScopedǁbuild"
    assert fresh.mangled("pkg.mod", "f.<locals>.g") is None
    assert fresh.mangled("pkg.mod", "<listcomp>") is None
    assert fresh.function_of("pkg.mod.xǁAǁb__mutmut_12") == "pkg.mod.xǁAǁb"


def test_the_functions_a_package_runs_while_imported(fresh: ModuleType, tmp_path: Path) -> None:
    package = tmp_path / "probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", "utf-8")
    (package / "statements.py").write_text(
        "def text(x):\n    return 'MATCH ' + x\n\n"
        "def later():\n    return 1\n\n"
        "class Built:\n    @classmethod\n    def build(cls):\n        return cls()\n\n"
        "ONE = text('n')\nTWO = Built.build()\n",
        "utf-8",
    )
    ran = fresh.import_time_functions(tmp_path, "probe_pkg")
    assert "probe_pkg.statements.x_text" in ran
    assert "probe_pkg.statements.xǁBuiltǁbuild" in ran
    assert "probe_pkg.statements.x_later" not in ran


def _workdir(tmp_path: Path, test: str) -> Path:
    tests = tmp_path / "w" / "mutants"
    tests.mkdir(parents=True)
    (tests / "test_one.py").write_text(test, "utf-8")
    # as scripts/mutation.py's copy has it: the runs load it (-p mutation_order)
    (tests / "mutation_order.py").write_bytes((SCRIPTS / "mutation_order.py").read_bytes())
    return tmp_path / "w"


@pytest.mark.parametrize(
    ("test", "code"),
    [
        ("def test_ok():\n    assert True\n", 0),
        ("def test_bad():\n    assert False\n", 1),
        ("import no_such_module_here\n\ndef test_ok():\n    pass\n", 1),  # import broken
        (
            "import os\n\ndef test_sees_the_mutant():\n"
            "    assert os.environ['MUTANT_UNDER_TEST'] == 'm.x_f__mutmut_1'\n",
            0,
        ),
    ],
    ids=["passes", "fails", "cannot-import", "mutant-named"],
)
def test_one_run_is_read_as_killed_or_survived(
    fresh: ModuleType, tmp_path: Path, test: str, code: int
) -> None:
    workdir = _workdir(tmp_path, test)
    env = {"PATH": "/usr/bin:/bin"}
    assert fresh.run_one(workdir, "m.x_f__mutmut_1", ["test_one.py"], env, 60) == code


def test_a_run_past_its_time_is_a_timeout(fresh: ModuleType, tmp_path: Path) -> None:
    workdir = _workdir(tmp_path, "import time\n\ndef test_slow():\n    time.sleep(30)\n")
    assert fresh.run_one(workdir, "m", ["test_one.py"], {}, 3) == fresh.TIMEOUT == 36


def test_only_missing_or_changed_mutants_run(fresh: ModuleType, tmp_path: Path) -> None:
    results: dict[str, list[object]] = {
        "m.x_f__mutmut_1": ["h1", 1],  # measured on this version: kept
        "m.x_f__mutmut_2": ["old", 0],  # another version of f: again
    }
    ran: list[str] = []
    saves: list[int] = []
    record = tmp_path / "r.json"

    def run(mutant: str) -> int:
        ran.append(mutant)
        return 0 if mutant.endswith("_3") else 1

    def saved() -> None:
        fresh.save(record, results)
        saves.append(len(ran))

    mutants = {"m.x_f__mutmut_1": "h1", "m.x_f__mutmut_2": "h1", "m.x_f__mutmut_3": "h1"}
    assert fresh.measure(mutants, results, run, saved) == 2
    assert ran == ["m.x_f__mutmut_2", "m.x_f__mutmut_3"]
    assert saves == [1, 2]  # after each mutant, so a stopped pass keeps what it measured
    assert fresh.load(record) == {
        "m.x_f__mutmut_1": ["h1", 1],
        "m.x_f__mutmut_2": ["h1", 1],
        "m.x_f__mutmut_3": ["h1", 0],
    }
    assert fresh.load(tmp_path / "none.json") == {}


def test_fresh_results_go_over_mutmuts_for_the_same_function_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    mutation = _load("mutation", monkeypatch)
    monkeypatch.setattr(mutation, "RECORDS", tmp_path / "records")
    module = "memory_core.backends.bolt.cypher"
    meta_path = tmp_path / "w/mutants/memory_core/backends/bolt/cypher.py.meta"
    meta_path.parent.mkdir(parents=True)
    build = f"{module}.xǁScopedǁbuild__mutmut_1"  # run at import: mutmut's 0 means nothing
    codes = {f"{module}.x_f__mutmut_1": 0, f"{module}.x_g__mutmut_1": 0, build: 0}
    hashes = {"x_f": "new", "x_g": "g", "xǁScopedǁbuild": "b"}
    meta = {"exit_code_by_key": codes, "hash_by_function_name": hashes}
    meta_path.write_text(json.dumps(meta), "utf-8")
    fresh = sys.modules["mutation_fresh"]
    fresh.save(
        tmp_path / "records" / "bolt-fresh.json",
        {f"{module}.x_f__mutmut_1": ["old", 1], f"{module}.x_g__mutmut_1": ["g", 1]},
    )
    assert mutation.overlay_fresh(tmp_path / "w", "bolt") == 1
    laid = json.loads(meta_path.read_text("utf-8"))["exit_code_by_key"]
    assert laid == {f"{module}.x_f__mutmut_1": 0, f"{module}.x_g__mutmut_1": 1, build: None}
