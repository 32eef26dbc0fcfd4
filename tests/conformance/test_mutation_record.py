"""The mutation script's record: what a run leaves in ``mutants/*.meta`` is written to
``tests/conformance/mutation_results/`` and given back to a workdir without results, so a
target's measurement goes on over several sittings."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation.py"


@pytest.fixture
def mutation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # it imports mutation_fresh
    spec = importlib.util.spec_from_file_location("mutation_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RECORDS", tmp_path / "records")
    return module


def _meta(workdir: Path, source: str, codes: dict[str, int | None], hashes: dict[str, str]) -> None:
    path = workdir / "mutants" / f"{source}.meta"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "exit_code_by_key": codes,
        "hash_by_function_name": hashes,
        "type_check_error_by_key": {},
        "durations_by_key": {k: 0.5 for k in codes},
        "estimated_durations_by_key": {},
    }
    path.write_text(json.dumps(meta), "utf-8")


def test_a_record_gives_a_fresh_workdir_the_same_results(
    mutation: ModuleType, tmp_path: Path
) -> None:
    module = "memory_core.backends.nams.transport"
    codes: dict[str, int | None] = {
        f"{module}.x_decode__mutmut_1": 1,
        f"{module}.x_decode__mutmut_2": 0,
        f"{module}.x_decode__mutmut_4": None,  # numbers need not be dense
        f"{module}.xǁNamsTransportǁsend__mutmut_1": 33,
    }
    hashes = {"x_decode": "aaa", "xǁNamsTransportǁsend": "bbb"}
    _meta(tmp_path / "first", "memory_core/backends/nams/transport.py", codes, hashes)
    _meta(tmp_path / "first", "memory_core/backends/nams/__init__.py", {}, {})

    record = mutation.save_record(tmp_path / "first", "nams")
    assert record == tmp_path / "records" / "nams.json"
    saved = json.loads(record.read_text("utf-8"))
    assert list(saved) == ["memory_core/backends/nams/transport.py"]  # no empty files
    assert saved["memory_core/backends/nams/transport.py"]["x_decode"] == [
        "aaa",
        [1, 0, None, None],
    ]

    fresh = tmp_path / "fresh"
    assert mutation.seed_from_record(fresh, "nams") == 1
    seeded = json.loads(
        (fresh / "mutants/memory_core/backends/nams/transport.py.meta").read_text("utf-8")
    )
    assert seeded["hash_by_function_name"] == hashes
    given = {k: v for k, v in seeded["exit_code_by_key"].items() if v is not None}
    assert given == {k: v for k, v in codes.items() if v is not None}
    assert mutation.seed_from_record(fresh, "nams") == 0  # results of its own are kept


def test_no_record_seeds_nothing(mutation: ModuleType, tmp_path: Path) -> None:
    assert mutation.seed_from_record(tmp_path / "w", "bolt") == 0
    assert mutation.save_record(tmp_path / "w", "bolt") is None


def test_the_record_is_written_while_mutmut_runs(mutation: ModuleType, tmp_path: Path) -> None:
    """A sitting stopped in the middle keeps what it measured; a result file caught half
    written is left for the next round, not an error."""
    source = "memory_core/backends/nams/transport.py"
    meta = tmp_path / "w" / "mutants" / f"{source}.meta"
    record = tmp_path / "records" / "nams.json"
    with mutation._saving_every(0.05, tmp_path / "w", "nams", True):
        meta.parent.mkdir(parents=True)
        meta.write_text("{half", "utf-8")
        time.sleep(0.2)
        assert not record.exists()
        _meta(tmp_path / "w", source, {"m.f__mutmut_1": 1}, {"f": "h"})
        deadline = time.monotonic() + 10
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert json.loads(record.read_text("utf-8")) == {source: {"f": ["h", [1]]}}


def test_a_shared_neo4j_takes_one_child(
    mutation: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bolt's tests compare the whole graph: two children on one server kill falsely."""
    with pytest.raises(SystemExit) as ended:
        mutation.main(["bolt", "--max-children", "2"])
    assert ended.value.code == 2
    assert "--max-children 1" in capsys.readouterr().err


def test_a_copy_that_lost_results_does_not_erase_the_record(
    mutation: ModuleType, tmp_path: Path
) -> None:
    module = "memory_core.backends.nams.transport"
    source = "memory_core/backends/nams/transport.py"
    first = {f"{module}.x_decode__mutmut_1": 1, f"{module}.x_decode__mutmut_2": 0}
    _meta(tmp_path / "first", source, first, {"x_decode": "aaa"})
    mutation.save_record(tmp_path / "first", "nams")
    # mutmut reset the copy's results (changed pytest arguments), one measured again
    again = {f"{module}.x_decode__mutmut_1": None, f"{module}.x_decode__mutmut_2": 1}
    _meta(tmp_path / "second", source, again, {"x_decode": "aaa"})
    record = mutation.save_record(tmp_path / "second", "nams", keep=False)  # --fresh
    assert json.loads(record.read_text("utf-8"))[source]["x_decode"] == ["aaa", [None, 1]]
    mutation.save_record(tmp_path / "first", "nams")
    record = mutation.save_record(tmp_path / "second", "nams")
    assert json.loads(record.read_text("utf-8"))[source]["x_decode"] == ["aaa", [1, 1]]
    # a changed function's old results are not carried over
    _meta(tmp_path / "third", source, {f"{module}.x_decode__mutmut_1": None}, {"x_decode": "zzz"})
    record = mutation.save_record(tmp_path / "third", "nams")
    assert json.loads(record.read_text("utf-8"))[source]["x_decode"] == ["zzz", [None]]


def test_a_sample_depends_on_the_seed_only(
    mutation: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "memory_core.backends.bolt.config"
    source = "memory_core/backends/bolt/config.py"
    names = [f"{module}.x_parse__mutmut_{n}" for n in range(1, 41)]
    imported = {f"{module}.x_built__mutmut_{n}": "h" for n in range(1, 11)}
    codes: dict[str, int | None] = {name: None for name in [*names, *imported]}
    codes[names[0]] = 1
    _meta(tmp_path / "a", source, codes, {"x_parse": "p", "x_built": "h"})
    # the other copy measured more: the sample is the same
    codes = dict.fromkeys(codes, 0)
    _meta(tmp_path / "b", source, codes, {"x_parse": "p", "x_built": "h"})
    monkeypatch.setattr(mutation, "fresh_mutants", lambda workdir, name: imported)

    chosen = mutation.sample(tmp_path / "a", "bolt", 10, 7)
    assert len(chosen) == 10 and set(chosen) <= set(names)  # never an import-time one
    assert mutation.sample(tmp_path / "b", "bolt", 10, 7) == chosen
    assert mutation.sample(tmp_path / "a", "bolt", 10, 8) != chosen
    assert sorted(mutation.sample(tmp_path / "a", "bolt", 99, 7)) == sorted(names)
    unchecked = mutation._unchecked(tmp_path / "a", "bolt", [names[0], names[1]])
    assert unchecked == [names[1]]


@pytest.mark.parametrize(("inherits", "code"), [(False, 0), (True, 1)])
def test_the_fork_control_fails_tests_a_forked_child_fails(
    mutation: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    inherits: bool,
    code: int,
) -> None:
    # a test that passes where it first ran, and (when it ``inherits``) fails in a child
    # forked from there: the state it left is the parent's
    (tmp_path / "first_run.py").write_text("PID = None\n", "utf-8")
    (tmp_path / "test_pid.py").write_text(
        "import os\nimport first_run\n\n"
        "def test_where_it_runs():\n"
        "    if first_run.PID is None:\n"
        "        first_run.PID = os.getpid()\n"
        f"    assert {not inherits} or first_run.PID == os.getpid()\n",
        "utf-8",
    )
    target = mutation.Target(("first_run.py",), ("test_pid.py",), "")
    monkeypatch.setitem(mutation.TARGETS, "toy", target)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert mutation.fork_control(tmp_path, "toy") == code


def test_a_copy_gets_the_checkouts_later_tests_and_modules_but_keeps_its_mutants(
    mutation: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout, workdir = tmp_path / "checkout", tmp_path / "copy"
    files = {
        "pyproject.toml": "[project]\nname = 'toy'\n",
        "tests/test_new.py": "def test_new():\n    pass\n",
        "memory_core/telemetry/__init__.py": "NEW = 1\n",
        "memory_core/backends/bolt/store.py": "ORIGINAL = 1\n",
    }
    for name, text in files.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text, "utf-8")
    for name, text in {
        "memory_core/telemetry/__init__.py": "OLD = 1\n",
        "memory_core/backends/bolt/store.py": "MUTATED = 1\n",
    }.items():
        (workdir / "mutants" / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / "mutants" / name).write_text(text, "utf-8")
    seen: list[dict[str, str | None]] = []

    def run_fresh(where: Path, name: str, timeout: float) -> None:
        found = {n: where / "mutants" / n for n in files if n != "pyproject.toml"}
        seen.append({n: p.read_text("utf-8") if p.is_file() else None for n, p in found.items()})

    monkeypatch.setattr(mutation, "ROOT", checkout)
    monkeypatch.setattr(mutation, "_checkout_files", lambda: sorted(files))
    for name in ("overlay_fresh", "save_record", "triage"):
        monkeypatch.setattr(mutation, name, lambda *args, **kwargs: None)
    monkeypatch.setattr(mutation, "seed_from_record", lambda *args: 0)
    monkeypatch.setattr(mutation, "run_fresh", run_fresh)
    # the fresh-process pass never runs mutmut, which would copy the other files itself
    mutation.main(["bolt", "--fresh-process", "--workdir", str(workdir)])
    assert seen == [
        {
            "tests/test_new.py": files["tests/test_new.py"],
            "memory_core/telemetry/__init__.py": "NEW = 1\n",
            "memory_core/backends/bolt/store.py": "MUTATED = 1\n",
        }
    ]
