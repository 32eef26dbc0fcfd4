"""The Neo4j fixtures on a server the tests did not start (``NEO4J_URI``): a test that
needs a Neo4j of its own skips, naming why, and nothing empties the user's database."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory_core_dev.neo4j_fixtures import PRIVATE, Neo4jHandle

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
import pytest

from memory_core_dev import neo4j_fixtures
from memory_core_dev.neo4j_fixtures import Neo4jHandle, neo4j_clean

WIPED = []


@pytest.fixture(scope="session")
def neo4j_server():
    return Neo4jHandle(uri="bolt://127.0.0.1:9", auth=None, throwaway={throwaway})


@pytest.fixture(autouse=True)
def recorded_wipes(monkeypatch):
    monkeypatch.setattr(neo4j_fixtures, "neo4j_wipe", lambda *args: WIPED.append(args))
"""
TESTS = """
from conftest import WIPED


def test_a_needs_an_empty_database(neo4j_clean):
    pass


def test_b_what_was_wiped():
    print("WIPED", len(WIPED))
    assert len(WIPED) == {wipes}
"""


@pytest.mark.parametrize(("throwaway", "wipes"), [(False, 0), (True, 1)])
def test_neo4j_clean_never_empties_a_server_the_user_runs(
    tmp_path: Path, throwaway: bool, wipes: int
) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST.format(throwaway=throwaway)))
    (tmp_path / "test_it.py").write_text(textwrap.dedent(TESTS.format(wipes=wipes)))
    options = ["-rs", "-s", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # memory_core_dev: the checkout's
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    if throwaway:
        assert "2 passed" in run.stdout, run.stdout
    else:
        assert "1 passed, 1 skipped" in run.stdout, run.stdout
        assert f"{PRIVATE}: it starts from an empty database; NEO4J_URI names" in run.stdout


def test_a_server_the_session_did_not_start_is_never_its_own() -> None:
    external = Neo4jHandle(uri="bolt://127.0.0.1:9", auth=("neo4j", "pw"), throwaway=True)
    with pytest.raises(pytest.skip.Exception, match=f"^{PRIVATE}: it restarts the server;"):
        external.require_own("it restarts the server")
    external.require_wipeable("a throwaway may be emptied")  # no skip
    with pytest.raises(RuntimeError, match="external"):
        external.restart()
