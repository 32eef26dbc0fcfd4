"""Development tools of this repository, not part of the wheel: the launchers of the real
servers the tests, the benchmarks and the scripts use (Neo4j Community in a small JVM, the
NAMS-compatible HTTP server on 127.0.0.1) and their pytest fixtures."""
