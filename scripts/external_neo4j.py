"""The test suite against a Neo4j the suite did not start, as a user runs it on their own.

    python scripts/external_neo4j.py [PYTEST ARGS]

Starts a Neo4j of its own (127.0.0.1, usage reporting and discovery off, as every test
server) but *with auth* and *holding other programs' data*: the reference library's own
writes and records with values memory-core's models cannot hold
(:mod:`memory_core_dev.foreign_data`). Then runs pytest with only ``NEO4J_URI``,
``NEO4J_USERNAME`` and ``NEO4J_PASSWORD`` pointing at it, as the README tells a user to:
the tests must pass there, or skip by name what needs a private server (a restart, a
wipe). ``-rs`` lists every skip with its reason. The server is stopped at the end; the
exit status is pytest's.

``scripts/test`` runs every test that uses Neo4j here (``-m neo4j``); the ones that need a
Neo4j of their own (``neo4j_private``: they restart or empty it, or read the whole
database) skip here, named in a closing section, and run in its other pytest step, on the
Neo4j the test session starts. With ``NEO4J_URI`` already set (a user's server), the tests
run on that one, which nothing here fills.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core_dev import foreign_data  # noqa: E402
from memory_core_dev.neo4j_server import Neo4jServer  # noqa: E402


def main(argv: list[str]) -> int:
    if os.environ.get("NEO4J_URI"):
        # The user's own server: the tests run on it as it is (nothing is written to it
        # but the tests' own, uniquely named data, which they remove).
        return _pytest(argv, dict(os.environ))
    password = secrets.token_urlsafe(16)
    server = Neo4jServer(password=password)
    try:
        server.start()
        print(f"external-neo4j: {server.uri} with auth, in {server.last_start_seconds:.0f} s")
        tag = "external-job"
        anyio.run(foreign_data.add_reference_writes, server.uri, server.auth, tag)
        foreign_data.add_bolt_adversarial(server.uri, server.auth, tag)
        print("external-neo4j: filled with the reference library's writes and adversarial records")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
        env.update(NEO4J_URI=server.uri, NEO4J_USERNAME="neo4j", NEO4J_PASSWORD=password)
        return _pytest(argv, env)
    finally:
        server.close()


def _pytest(argv: list[str], env: dict[str, str]) -> int:
    command = [sys.executable, "-m", "pytest", "-rs", *argv]
    return subprocess.run(command, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
