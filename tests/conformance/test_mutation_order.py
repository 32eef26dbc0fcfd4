"""The pytest plugin that runs each mutant's likely killers first
(``scripts/mutation_order.py``): the kill log, the order, and the plugin in a real run."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "scripts" / "mutation_order.py"


@pytest.fixture
def order(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_order", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_a_mutant_belongs_to_its_function(order: ModuleType) -> None:
    assert order.function_of("pkg.mod.xǁAǁb__mutmut_12") == "pkg.mod.xǁAǁb"
    assert order.function_of("pkg.mod.x_f__mutmut_3") == "pkg.mod.x_f"


def test_kills_are_counted_per_function(order: ModuleType) -> None:
    lines = [
        json.dumps({"function": "m.x_f", "test": "t.py::a"}),
        json.dumps({"function": "m.x_f", "test": "t.py::a"}),
        json.dumps({"function": "m.x_g", "test": "t.py::b"}),
        json.dumps({"function": "m.x_f", "test": "t.py::c"}),
        '{"function": "m.x_f", "te',  # cut short by a stopped run
        "[1, 2]",
    ]
    assert order.kills_by_test(lines, "m.x_f") == {"t.py::a": 2, "t.py::c": 1}
    assert order.kills_by_test(lines, "m.x_h") == {}


def test_killers_first_then_the_fastest(order: ModuleType) -> None:
    names = ["slow", "fast", "killer", "unmeasured", "twice", "fast_too"]
    kills = {"killer": 1, "twice": 2}
    durations = {"slow": 9.0, "fast": 0.1, "killer": 5.0, "twice": 7.0, "fast_too": 0.1}
    running = [names[i] for i in order.ordered(names, kills, durations)]
    assert running == ["twice", "killer", "fast", "fast_too", "slow", "unmeasured"]


_DURATIONS = {"test_seq.py::test_a": 3.0, "test_seq.py::test_b": 2.0}


def _run(tmp_path: Path, mutant: str | None, durations: dict[str, float] = _DURATIONS) -> list[str]:
    """Run a small test file under the plugin; the tests' names in the order they ran."""
    (tmp_path / "mutation_order.py").write_bytes(PLUGIN.read_bytes())
    (tmp_path / "test_seq.py").write_text(
        "import os\n"
        "def _note(name):\n"
        "    with open('ran.txt', 'a') as f:\n"
        "        f.write(name + '\\n')\n"
        "def test_a():\n    _note('a')\n"
        "def test_b():\n    _note('b')\n    assert os.environ.get('BREAK') != 'b'\n"
        "def test_c():\n    _note('c')\n",
        "utf-8",
    )
    stats = {"duration_by_test": durations}
    (tmp_path / "mutmut-stats.json").write_text(json.dumps(stats), "utf-8")
    (tmp_path / "ran.txt").unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    if mutant is not None:
        env["MUTANT_UNDER_TEST"] = mutant
    env["BREAK"] = "b" if mutant else ""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "mutation_order", "-p", "no:randomly"]
    command += ["-p", "no:cacheprovider", "test_seq.py"]
    subprocess.run(command, cwd=tmp_path, env=dict(env, PYTHONPATH=str(tmp_path)), check=False)
    return (tmp_path / "ran.txt").read_text("utf-8").split()


def test_the_plugin_orders_a_real_run(tmp_path: Path) -> None:
    # no mutant (mutmut's statistics): the file's order
    assert _run(tmp_path, "stats") == ["a", "b", "c"]
    assert not (tmp_path / "mutation-kills.jsonl").exists()
    # the clean run: the fastest first, the unmeasured last
    assert _run(tmp_path, "") == ["b", "a", "c"]
    # a mutant: b fails, and is noted against the function
    assert _run(tmp_path, "m.x_f__mutmut_1") == ["b", "a", "c"]
    log = (tmp_path / "mutation-kills.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line) for line in log] == [
        {"function": "m.x_f", "test": "test_seq.py::test_b", "mutant": "m.x_f__mutmut_1"}
    ]
    # its killer has the first place for a sibling even when it became the slowest
    slow_b = {"test_seq.py::test_a": 0.1, "test_seq.py::test_b": 9.0}
    assert _run(tmp_path, "m.x_f__mutmut_2", slow_b) == ["b", "a", "c"]
    # another function's mutant has no history: the fastest first
    assert _run(tmp_path, "m.x_g__mutmut_1", slow_b) == ["a", "b", "c"]
