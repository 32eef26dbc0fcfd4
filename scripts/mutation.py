"""Measure the mutation score of one part of ``memory_core`` with mutmut, in a scratch copy.

    python scripts/mutation.py TARGET [--max-children N] [--workdir DIR] [--fresh]
    python scripts/mutation.py TARGET --rerun-survivors   # after adding tests
    python scripts/mutation.py TARGET --triage-only       # print the triage again

TARGET is one of ``TARGETS`` (embedded, sync, transfer, integrations, nams, bolt). The
checkout's files (tracked and untracked, not git-ignored) are copied to DIR (default
``/tmp/mutation-TARGET``), the ``[tool.mutmut]`` section of the copy's pyproject.toml is
rewritten for the target, ``mutmut run`` runs there, and the score and the triage of the
survivors (``tests/conformance/mutation_triage.py``) are printed. The checkout itself is
never changed but for one file: mutmut's ``mutants/`` folder lives in DIR, which later
runs reuse (mutmut keeps its results there; ``--fresh`` starts over).

The record: after every run (and ``--triage-only``) each mutant's result is written to
``tests/conformance/mutation_results/TARGET.json``, with the hash mutmut keeps of each
function. A run in a DIR without results starts from that record: mutmut keeps the
result of every mutant whose function is unchanged, so a target too big for one sitting
(``nams``, ``bolt``: hours on 2 cores) is measured over several, from a fresh machine,
and its score is reproduced from what was committed. Needs the ``mutation`` extra.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mutation_fresh

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "conformance" / "mutation_results"
NEO4J_DEPS = ROOT / "memory_core_dev" / "neo4j" / "target" / "deps"


@dataclass(frozen=True)
class Target:
    """What to mutate and which tests may kill the mutants."""

    source_paths: tuple[str, ...]
    tests: tuple[str, ...]
    prefix: str
    """Dotted module prefix stripped from mutant names before matching triage reasons."""
    shared_neo4j: bool = False
    """Start one Neo4j for the whole run (``NEO4J_URI``), not one per mutant's pytest."""


# Tests on Bolt start Neo4j (slow); the code under test is the same for every backend.
_NOT_NEO4J = ("-m", "not neo4j", "-k", "not bolt")
# mutmut calls each mutated function through a trampoline: a warning's location is then
# the trampoline's line, so tests of where warnings point cannot pass under mutmut.
_SYNC_DESELECT = (
    "bolt",
    "callers_line",
    "reach_the_caller",
    "warnings_warn_is_the_standard",
    "reissued_in_the_calling_thread",
    "fresh_interpreter_keeps_its_warnings",
)
TARGETS: dict[str, Target] = {
    "embedded": Target(
        ("memory_core/backends/embedded",),
        ("tests/conformance/test_conformance_memory.py",),
        "memory_core.backends.embedded.",
    ),
    "sync": Target(
        ("memory_core/sync.py",),
        ("tests/sync", "-k", " and ".join(f"not {name}" for name in _SYNC_DESELECT)),
        "memory_core.",
    ),
    "transfer": Target(
        ("memory_core/transfer", "memory_core/archive"),
        (
            "tests/transfer",
            "tests/reliability/test_import_tenancy.py",
            "tests/reliability/test_import_rules.py",
            "tests/reliability/test_hostile_archives.py",
            "tests/reliability/test_export_faults.py",
            *_NOT_NEO4J,
        ),
        "memory_core.",
    ),
    "integrations": Target(
        ("memory_core/integrations",),
        (
            "tests/integrations",
            "-m",
            "not neo4j",
            # Bolt and PostgreSQL run the same integration code (slower to start); and
            # where warnings point cannot be right under mutmut (see _SYNC_DESELECT)
            "-k",
            "not bolt and not postgres and not points_at_the_applications_line",
        ),
        "memory_core.integrations.",
    ),
    "nams": Target(
        ("memory_core/backends/nams",),
        (
            "tests/backends/nams",
            "tests/conformance/test_conformance_nams.py",
            # the NAMS client's own reliability tests: portable names, markers, the index
            # file's faults, injected HTTP faults, cursors, bulk chunks; and its spans
            "tests/reliability/test_portable_marker.py",
            "tests/reliability/test_portable_ownership.py",
            "tests/reliability/test_portable_state.py",
            "tests/reliability/test_session_index_faults.py",
            "tests/reliability/test_faults.py",
            "tests/reliability/test_server_cursors.py",
            "tests/reliability/test_batches.py",
            "tests/otel/test_nams.py",
            *_NOT_NEO4J,
        ),
        "memory_core.backends.nams.",
    ),
    "bolt": Target(
        ("memory_core/backends/bolt",),
        (
            "tests/backends/bolt",
            "tests/conformance/test_conformance_bolt.py",
            # Bolt's own reliability tests (batches, tenancy, limits, cursors, properties),
            # its spans, and the transfers into and out of it
            "tests/reliability/test_bolt_batches.py",
            "tests/reliability/test_import_tenancy.py",
            "tests/reliability/test_import_rules.py",
            "tests/reliability/test_limits.py",
            "tests/reliability/test_tenancy.py",
            "tests/reliability/test_properties.py",
            "tests/reliability/test_server_cursors.py",
            "tests/otel/test_bolt.py",
            "tests/transfer",
            # how errors are worded and times returned, on each kind of store
            "tests/test_errors.py",
            "tests/test_times.py",
            # a killed copy runs the CLI in subprocesses (30 s); PostgreSQL starts slowly
            "-k",
            "bolt and not killed_copy and not postgres",
            # restarts the server: not possible on the run's shared one (NEO4J_URI)
            "--deselect",
            "tests/backends/bolt/test_bolt_restart.py",
        ),
        "memory_core.backends.bolt.",
        shared_neo4j=True,
    ),
}

# Imported at start-up by the Python subprocesses tests run with the mutants folder on
# PYTHONPATH (the CLI tests): while mutmut maps tests to functions, a mutated function
# called there would look for mutmut's config in the subprocess's folder and fail; the
# map is kept in mutmut's own process anyway, so the subprocess just runs unmutated code.
_SITECUSTOMIZE = """import os
if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    os.environ["MUTANT_UNDER_TEST"] = ""
"""
# the likely killers of each mutant first (scripts/mutation_order.py, put in mutants/)
_PYTEST_ARGS = ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "mutation_order"]
_ORDER = Path(__file__).with_name("mutation_order.py")
_SECTION = re.compile(r"^\[tool\.mutmut\]\n(?:(?!\[).*\n)*", re.MULTILINE)


def mutmut_section(target: Target, top_level: list[str]) -> str:
    """The ``[tool.mutmut]`` TOML section that measures ``target``; ``top_level``: the
    checkout's top-level files and folders (tests read docs, examples and scripts)."""
    values = {
        "source_paths": list(target.source_paths),
        "also_copy": sorted(set(top_level) - {"tests"}),
        "pytest_add_cli_args_test_selection": list(target.tests),
        "pytest_add_cli_args": _PYTEST_ARGS,
        "use_git_change_detection": False,
    }
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    return "[tool.mutmut]\n" + "\n".join(lines) + "\n"


def _checkout_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file()]


def copy_checkout(workdir: Path, target: Target) -> None:
    """Copy the checkout's files into ``workdir`` and configure mutmut for ``target``."""
    names = _checkout_files()
    for name in names:
        _copy_if_changed(ROOT / name, workdir / name)
    # mutmut's copy (mutants/) holds a module outside the target as it was when mutmut
    # first copied it, and the fresh-process pass never copies: bring the changed ones in
    # (tests, other modules, docs), never the target's sources, which hold the mutants
    if (workdir / "mutants").is_dir():
        for name in names:
            if not any(_under(name, source) for source in target.source_paths):
                _copy_if_changed(ROOT / name, workdir / "mutants" / name)
    section = mutmut_section(target, sorted({name.split("/")[0] for name in names}))
    pyproject = workdir / "pyproject.toml"
    text, count = _SECTION.subn(section, pyproject.read_text("utf-8"))
    pyproject.write_text(text if count else text + "\n" + section, "utf-8")
    (workdir / "mutants").mkdir(exist_ok=True)
    (workdir / "mutants" / "sitecustomize.py").write_text(_SITECUSTOMIZE, "utf-8")
    shutil.copy2(_ORDER, workdir / "mutants" / _ORDER.name)


def _copy_if_changed(source: Path, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    if not destination.exists() or destination.read_bytes() != source.read_bytes():
        shutil.copy2(source, destination)


def _under(name: str, source_path: str) -> bool:
    """Whether the checkout file ``name`` is ``source_path`` or inside that folder."""
    return name == source_path or name.startswith(source_path.rstrip("/") + "/")


def _meta_files(workdir: Path, target: Target) -> list[Path]:
    """mutmut's per-file result files of ``target`` in ``workdir`` (``.py.meta``)."""
    found: list[Path] = []
    for source in target.source_paths:
        base = workdir / "mutants" / source
        if source.endswith(".py"):
            found += [meta for meta in [base.with_name(base.name + ".meta")] if meta.is_file()]
        else:
            found += sorted(base.rglob("*.py.meta"))
    return found


def _mutant_number(key: str) -> tuple[str, int]:
    """``(function, n)`` of a mutant name ``<module>.<function>__mutmut_<n>``."""
    head, _, number = key.rpartition("__mutmut_")
    return head.rpartition(".")[2], int(number)


def save_record(workdir: Path, name: str, keep: bool = True) -> Path | None:
    """Write each mutant's result of ``name`` in ``workdir`` to the target's record: per
    source file, per function, mutmut's hash of the function and the exit codes of its
    mutants by number (``null``: not run yet). One function per line, for readable diffs.
    ``keep``: results the copy lacks are kept from the record (``--fresh``: not)."""
    files: dict[str, dict[str, list[Any]]] = {}
    for meta_path in _meta_files(workdir, TARGETS[name]):
        meta = json.loads(meta_path.read_text("utf-8"))
        functions: dict[str, list[Any]] = {
            function: [digest, []] for function, digest in meta["hash_by_function_name"].items()
        }
        for key, code in meta["exit_code_by_key"].items():
            function, number = _mutant_number(key)
            codes = functions.setdefault(function, ["", []])[1]
            codes.extend([None] * (number - len(codes)))
            codes[number - 1] = code
        source = meta_path.relative_to(workdir / "mutants").as_posix().removesuffix(".meta")
        if functions:
            files[source] = functions
    if not files:
        return None
    record = RECORDS / f"{name}.json"
    if keep:
        _keep_recorded(files, record)
    lines = ["{"]
    for i, (source, functions) in enumerate(sorted(files.items())):
        lines.append(f"  {json.dumps(source)}: {{")
        entries = [
            f"    {json.dumps(function)}: {json.dumps(value, ensure_ascii=False)}"
            for function, value in sorted(functions.items())
        ]
        lines.append(",\n".join(entries))
        lines.append("  }" + ("," if i < len(files) - 1 else ""))
    lines.append("}")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("\n".join(lines) + "\n", "utf-8")
    return record


def _keep_recorded(files: dict[str, dict[str, list[Any]]], record: Path) -> None:
    """Fill the results a copy does not have (``null``) from the record, for functions
    whose hash is unchanged: a copy whose results mutmut reset (it does when the pytest
    arguments change) or that measured a part only never erases what was measured."""
    if not record.is_file():
        return
    for source, functions in json.loads(record.read_text("utf-8")).items():
        for function, (digest, old) in functions.items():
            new = files.get(source, {}).get(function)
            if new is None or not digest or new[0] != digest:
                continue
            codes = new[1]
            codes.extend([None] * (len(old) - len(codes)))
            for i, code in enumerate(old):
                if codes[i] is None:
                    codes[i] = code


def seed_from_record(workdir: Path, name: str) -> int:
    """Give a ``workdir`` with no results of its own the results of the target's record
    (mutmut then keeps those of unchanged functions); how many files were seeded."""
    record = RECORDS / f"{name}.json"
    if not record.is_file():
        return 0
    seeded = 0
    for source, functions in json.loads(record.read_text("utf-8")).items():
        meta_path = workdir / "mutants" / f"{source}.meta"
        if meta_path.exists():
            continue
        module = source.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        codes = {
            f"{module}.{function}__mutmut_{number}": code
            for function, (_, numbered) in functions.items()
            for number, code in enumerate(numbered, start=1)
        }
        meta = {
            "exit_code_by_key": codes,
            "hash_by_function_name": {f: digest for f, (digest, _) in functions.items() if digest},
            "type_check_error_by_key": {},
            "durations_by_key": {},
            "estimated_durations_by_key": {},
        }
        meta_path.parent.mkdir(parents=True, exist_ok=True)
        meta_path.write_text(json.dumps(meta, indent=1), "utf-8")
        seeded += 1
    return seeded


def fresh_mutants(workdir: Path, name: str) -> dict[str, str]:
    """The target's mutants of functions that run while its modules are imported (see
    ``scripts/mutation_fresh.py``), each with the hash of its function."""
    package = TARGETS[name].prefix.removesuffix(".")
    functions = mutation_fresh.import_time_functions(ROOT, package)
    found: dict[str, str] = {}
    for meta_path in _meta_files(workdir, TARGETS[name]):
        meta = json.loads(meta_path.read_text("utf-8"))
        for key in meta["exit_code_by_key"]:
            if mutation_fresh.function_of(key) in functions:
                found[key] = meta["hash_by_function_name"][_mutant_number(key)[0]]
    return found


def overlay_fresh(workdir: Path, name: str) -> int:
    """Put the fresh-process results over mutmut's in ``workdir`` (those measured on the
    function as it is now); an import-time mutant without one is "not checked", whatever
    mutmut said (it could not switch it on). How many results were laid."""
    results = mutation_fresh.load(RECORDS / f"{name}-fresh.json")
    import_time = fresh_mutants(workdir, name)
    laid = 0
    for meta_path in _meta_files(workdir, TARGETS[name]):
        meta = json.loads(meta_path.read_text("utf-8"))
        codes, hashes = meta["exit_code_by_key"], meta["hash_by_function_name"]
        for key in codes:
            digest, code = results.get(key, [None, None])
            if digest is not None and digest == hashes.get(_mutant_number(key)[0]):
                codes[key] = code
                laid += 1
            elif key in import_time:
                codes[key] = None
        meta_path.write_text(json.dumps(meta, indent=1), "utf-8")
    return laid


def run_fresh(workdir: Path, name: str, timeout: float) -> None:
    """Measure the target's import-time mutants in new processes (``--fresh-process``);
    ``main`` then lays the results over mutmut's, as after every run."""
    record = RECORDS / f"{name}-fresh.json"
    results = mutation_fresh.load(record)
    mutants = fresh_mutants(workdir, name)
    print(f"{len(mutants)} mutants of functions run at import time")
    tests = TARGETS[name].tests
    with _shared_neo4j(TARGETS[name]):
        env = _environment()
        # the controls: the tests pass with no mutant on, and fail when every mutated
        # function raises (mutmut's "fail"), or nothing here would mean anything
        for control, wanted in (("", 0), ("fail", 1)):
            code = mutation_fresh.run_one(workdir, control, tests, env, timeout)
            if code != wanted:
                raise SystemExit(f"control {control or 'clean'!r}: exit {code}, not {wanted}")
        mutation_fresh.measure(
            mutants,
            results,
            lambda mutant: mutation_fresh.run_one(workdir, mutant, tests, env, timeout),
            lambda: mutation_fresh.save(record, results),
        )


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    if NEO4J_DEPS.is_dir():  # the Neo4j jars are git-ignored, so not copied
        env.setdefault("NEO4J_TEST_DEPS_DIR", str(NEO4J_DEPS))
    return env


@contextmanager
def _shared_neo4j(target: Target) -> Iterator[None]:
    """For a target whose tests need Neo4j: one server for every mutant's test run (each
    mutant's pytest would otherwise start its own JVM), unless ``NEO4J_URI`` names one."""
    if not target.shared_neo4j or os.environ.get("NEO4J_URI"):
        yield
        return
    sys.path.insert(0, str(ROOT))
    from memory_core_dev.neo4j_server import Neo4jServer

    server = Neo4jServer().start()  # on 127.0.0.1, without auth
    # ours: the tests wipe it before each test as they do their own server
    os.environ.update(NEO4J_URI=server.uri, NEO4J_THROWAWAY="1")
    try:
        yield
    finally:
        os.environ.pop("NEO4J_URI", None)
        os.environ.pop("NEO4J_THROWAWAY", None)
        server.close()


@contextmanager
def _saving_every(seconds: float, workdir: Path, name: str, keep: bool) -> Iterator[None]:
    """Write the record every ``seconds`` while mutmut runs, so a sitting stopped early
    (or a machine gone) keeps what was measured; ``0``: only at the end."""
    stop = threading.Event()

    def keep_saving() -> None:
        while not stop.wait(seconds):
            with suppress(ValueError, OSError):  # a result file being written: next time
                save_record(workdir, name, keep)

    saver = threading.Thread(target=keep_saving, daemon=True)
    if seconds > 0:
        saver.start()
    try:
        yield
    finally:
        stop.set()
        if saver.is_alive():
            saver.join()


# As mutmut runs the tests: once in its own process (the clean run), then in a child
# forked from it per mutant. The child's run must pass too, with no mutant on: state the
# first run left behind (servers whose threads stay in the parent) must not fail it.
_FORK_CONTROL = """
import os, sys, pytest
args = sys.argv[1:]
first = int(pytest.main(args))
pid = os.fork()
if pid == 0:
    os._exit(int(pytest.main(args)))
_, status = os.waitpid(pid, 0)
print(f"fork control: in process {first}, in a forked child {os.waitstatus_to_exitcode(status)}")
sys.exit(max(first, os.waitstatus_to_exitcode(status)))
"""


def fork_control(workdir: Path, name: str) -> int:
    """Run the target's tests (no mutant) in one process, then in a child forked from it;
    0 when both pass (``--fork-control``)."""
    tests = ["-q", "-x", "--rootdir=.", *_PYTEST_ARGS[:4], *TARGETS[name].tests]
    command = [sys.executable, "-c", _FORK_CONTROL, *tests]
    with _shared_neo4j(TARGETS[name]):
        # read inside: the shared server's address is only known once it runs
        env = dict(_environment(), MUTANT_UNDER_TEST="")
        env.update({k: v for k, v in os.environ.items() if k.startswith("NEO4J_")})
        return subprocess.run(command, cwd=workdir, env=env, check=False).returncode


def _mutmut(workdir: Path, *args: str) -> int:
    # Not ``python -m mutmut``: that runs mutmut's __main__ twice (its own warning says so).
    command = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()", *args]
    return subprocess.run(command, cwd=workdir, env=_environment(), check=False).returncode


def survivors(workdir: Path) -> list[str]:
    """Names of the mutants that survived or were not executed."""
    command = [sys.executable, "-m", "tests.conformance.mutation_triage", "--names"]
    listed = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=True)
    return listed.stdout.split()


def _matches(name: str, globs: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)


# mutmut's own first steps of ``run`` (mutmut 3.8.1, pinned by the ``mutation`` extra):
# the mutated copies of the sources, without the statistics run that follows
_GENERATE = """
from mutmut.__main__ import (copy_also_copy_files, copy_src_dir, create_mutants,
    set_mutant_under_test, setup_source_paths, store_lines_covered_by_tests)
set_mutant_under_test("mutant_generation")
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); store_lines_covered_by_tests()
create_mutants(1)
"""


def generate_mutants(workdir: Path, name: str) -> bool:
    """Make mutmut's mutated sources in a copy that has none (a fresh machine's, before
    ``--triage-only``: the triage reads each survivor's diff from them)."""
    sources = [workdir / "mutants" / path for path in TARGETS[name].source_paths]
    # the record's seeding makes the folders (result files only): look for the code
    if all(path.is_file() or any(path.rglob("*.py")) for path in sources):
        return False
    command = [sys.executable, "-c", _GENERATE]
    subprocess.run(command, cwd=workdir, env=_environment(), check=True)
    return True


def sample(workdir: Path, name: str, size: int, seed: int) -> list[str]:
    """A seeded random sample of ``size`` of the target's mutants that mutmut can switch
    on (not those of import-time functions): the same names for the same code and seed,
    on any machine, whatever was measured before."""
    candidates = sorted(set(_codes(workdir, name)) - set(fresh_mutants(workdir, name)))
    return sorted(random.Random(seed).sample(candidates, min(size, len(candidates))))


def _codes(workdir: Path, name: str) -> dict[str, Any]:
    """mutmut's exit code of each of the target's mutants in ``workdir`` (``None``: not
    run yet)."""
    codes: dict[str, Any] = {}
    for meta_path in _meta_files(workdir, TARGETS[name]):
        codes.update(json.loads(meta_path.read_text("utf-8"))["exit_code_by_key"])
    return codes


def _unchecked(workdir: Path, name: str, names: list[str]) -> list[str]:
    codes = _codes(workdir, name)
    return [n for n in names if codes.get(n) is None]


def triage(workdir: Path, name: str, within: Path | None = None) -> int:
    """Print the score and the triage of ``name``'s survivors (of those in ``within``)."""
    command = [sys.executable, "-m", "tests.conformance.mutation_triage", "--target", name]
    command += ["--prefix", TARGETS[name].prefix]
    command += ["--within", str(within)] if within else []
    return subprocess.run(command, cwd=workdir, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    """Run mutmut on one target in a scratch copy and print the triage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument(
        "--save-every",
        type=float,
        default=10,
        metavar="MINUTES",
        help="write the record this often during the run (0: at the end only)",
    )
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start over: delete the copy's results and measure without the record's "
        "(which the run then replaces)",
    )
    parser.add_argument("--rerun-survivors", action="store_true")
    parser.add_argument("--triage-only", action="store_true")
    parser.add_argument(
        "--fresh-process",
        action="store_true",
        help="measure the mutants of functions run at import time, each in a new process "
        "(mutmut cannot switch them on: scripts/mutation_fresh.py)",
    )
    parser.add_argument(
        "--fresh-timeout", type=float, default=900, metavar="SECONDS", help="per mutant"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        metavar="GLOB",
        help="mutant names to run, e.g. "
        "'memory_core.archive.files*' (a partial run: the score counts what ran)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="measure the unchecked of a seeded random sample of N mutants (not the "
        "import-time ones), and score and triage that sample only",
    )
    parser.add_argument("--seed", type=int, default=1, help="of --sample")
    parser.add_argument(
        "--fork-control",
        action="store_true",
        help="only check that the target's tests pass in a child forked from a process "
        "that ran them (as mutmut runs them), with no mutant",
    )
    args = parser.parse_args(argv)
    if TARGETS[args.target].shared_neo4j and args.max_children > 1:
        # tests compare the whole graph before and after (and count what they leave):
        # another mutant's tests writing to the same server would fail them, a false kill
        parser.error(f"{args.target} shares one Neo4j between mutants: --max-children 1")
    workdir: Path = args.workdir or Path(f"/tmp/mutation-{args.target}")
    if args.fresh and workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    copy_checkout(workdir, TARGETS[args.target])  # also the latest triage reasons
    seeded = 0 if args.fresh else seed_from_record(workdir, args.target)
    if seeded:
        print(f"results of {seeded} file(s) taken from {RECORDS / args.target}.json")
    if (args.triage_only or args.sample) and generate_mutants(workdir, args.target):
        print("mutants generated for the triage's diffs")
    within = None
    if args.sample:
        chosen = sample(workdir, args.target, args.sample, args.seed)
        within = workdir / f"sample-{args.sample}-seed-{args.seed}.txt"
        within.write_text("\n".join(chosen) + "\n", "utf-8")
        args.only = _unchecked(workdir, args.target, chosen)
        print(f"sample of {len(chosen)} (seed {args.seed}): {len(args.only)} not checked yet")
        if not args.only:
            args.triage_only = True
    if args.fork_control:
        return fork_control(workdir, args.target)
    if args.fresh_process:
        run_fresh(workdir, args.target, args.fresh_timeout)
    elif not args.triage_only:
        names = args.only
        if args.rerun_survivors:  # those of --only, if given
            names = [n for n in survivors(workdir) if not names or _matches(n, names)]
            if not names:
                return triage(workdir, args.target)
        started = time.monotonic()
        with (
            _shared_neo4j(TARGETS[args.target]),
            _saving_every(args.save_every * 60, workdir, args.target, not args.fresh),
        ):
            code = _mutmut(workdir, "run", "--max-children", str(args.max_children), *names)
        print(f"\nmutmut run: exit {code}, wall time {time.monotonic() - started:.0f} s")
    overlay_fresh(workdir, args.target)
    record = save_record(workdir, args.target, keep=not args.fresh)
    if record is not None:
        print(f"results recorded in {record.relative_to(ROOT)}")
    return triage(workdir, args.target, within)


if __name__ == "__main__":
    sys.exit(main())
