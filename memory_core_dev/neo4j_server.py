"""A real Neo4j Community DBMS for the test-suite, run in a small local JVM.

The server is ``memory_core_dev/neo4j/Launcher.java`` run as a single-file Java
program against the jars that ``memory_core_dev/neo4j/pom.xml`` pulls from Maven
Central (fetched once into a git-ignored cache, see :func:`ensure_deps`).
It listens for Bolt on ``127.0.0.1:<free port>`` only, without TLS or auth,
with usage reporting and every other outbound feature switched off.

Command line (run from the repository root)::

    python -m memory_core_dev.neo4j_server --fetch    # only fetch the jars (CI)
    python -m memory_core_dev.neo4j_server --serve    # run a server until Ctrl-C

Only the standard library is used, plus the ``neo4j`` Python driver for the
readiness check (imported lazily, so ``--fetch`` works without it).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = [
    "DEFAULT_DEPS_DIR",
    "Neo4jServer",
    "ensure_deps",
    "find_free_port",
]

HOST = "127.0.0.1"
SUPPORT_DIR = Path(__file__).resolve().parent / "neo4j"
POM = SUPPORT_DIR / "pom.xml"
LAUNCHER = SUPPORT_DIR / "Launcher.java"
DEFAULT_DEPS_DIR = SUPPORT_DIR / "target" / "deps"
STAMP_NAME = ".deps-stamp"
READY_MARKER = "NEO4J_READY "
LOG_NAME = "launcher.log"
TEMP_HOME_PREFIX = "neo4j-test-"
OWNER_FILE = "owner.pid"  # in temp homes: pid of the Python process that made it

#: Overrides the jar cache directory (e.g. to keep it outside the checkout).
ENV_DEPS_DIR = "NEO4J_TEST_DEPS_DIR"
#: Overrides the maximum heap of the server JVM (default 512m).
ENV_HEAP = "NEO4J_TEST_HEAP"

DEFAULT_HEAP = "512m"
DEFAULT_START_TIMEOUT = 180.0
MVN_TIMEOUT = 1800.0
LOG_TAIL_LINES = 40

# Flags the embedded DBMS needs on Java 17: Neo4j and Netty reach into these
# JDK internals (direct buffers, file channels, fields of java.lang classes).
ADD_OPENS = [
    "java.base/java.nio",
    "java.base/java.io",
    "java.base/sun.nio.ch",
    "java.base/java.lang",
]


def _jvm_flags(heap: str) -> list[str]:
    flags = [
        f"-Xmx{heap}",
        # A fixed initial heap avoids Neo4j's "initial heap not configured"
        # warning and resizing on a machine that is shared with the tests.
        "-Xms256m" if _heap_bytes(heap) >= 256 * 1024 * 1024 else f"-Xms{heap}",
        "-XX:+UseG1GC",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:-OmitStackTraceInFastThrow",
        "-Djava.awt.headless=true",
        "-Dfile.encoding=UTF-8",
        "-Djdk.nio.maxCachedBufferSize=1024",
        "-Dio.netty.tryReflectionSetAccessible=true",
        "-Dlog4j2.disable.jmx=true",
        # IPv4 only: the listener is 127.0.0.1 and nothing else.
        "-Djava.net.preferIPv4Stack=true",
    ]
    flags += [f"--add-opens={m}=ALL-UNNAMED" for m in ADD_OPENS]
    return flags


def _heap_bytes(heap: str) -> int:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    h = heap.strip().lower()
    if h and h[-1] in units:
        return int(h[:-1]) * units[h[-1]]
    return int(h)


# --------------------------------------------------------------------------
# Jars
# --------------------------------------------------------------------------


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise jar fetching between concurrent processes (e.g. xdist)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _deps_ready(cache_dir: Path, digest: str) -> bool:
    stamp = cache_dir / STAMP_NAME
    try:
        if stamp.read_text().strip() != digest:
            return False
    except OSError:
        return False
    return any(cache_dir.glob("neo4j-bolt-*.jar")) and any(cache_dir.glob("neo4j-kernel-*.jar"))


def ensure_deps(cache_dir: Path | None = None) -> Path:
    """Fetch the Neo4j jars into ``cache_dir`` once and return that directory.

    The default is ``memory_core_dev/neo4j/target/deps`` (git-ignored), or
    ``$NEO4J_TEST_DEPS_DIR`` when set. A stamp file holding the pom's hash
    marks a complete fetch, so later calls return at once; editing the pom
    (e.g. a version bump) triggers a fresh fetch.

    Raises RuntimeError (with the tail of Maven's output) when Maven is
    missing or fails.
    """
    if cache_dir is None:
        env = os.environ.get(ENV_DEPS_DIR)
        cache_dir = Path(env) if env else DEFAULT_DEPS_DIR
    cache_dir = Path(cache_dir).resolve()
    digest = _pom_digest()
    if _deps_ready(cache_dir, digest):
        return cache_dir

    with _file_lock(cache_dir.parent / f".{cache_dir.name}.lock"):
        if _deps_ready(cache_dir, digest):  # another process did it meanwhile
            return cache_dir
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError(
                "Maven ('mvn') is not on PATH; it is needed once to fetch the Neo4j jars "
                f"described by {POM} into {cache_dir}"
            )
        cache_dir.mkdir(parents=True, exist_ok=True)
        (cache_dir / STAMP_NAME).unlink(missing_ok=True)
        for stale in cache_dir.glob("*.jar"):
            stale.unlink()
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={cache_dir}",
        ]
        try:
            proc = subprocess.run(
                cmd,
                cwd=str(SUPPORT_DIR),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                timeout=MVN_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.output or ""
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
            raise RuntimeError(
                f"fetching the Neo4j jars timed out after {MVN_TIMEOUT:.0f} s: {' '.join(cmd)}\n"
                + _tail_text(out, 60)
            ) from None
        if proc.returncode != 0:
            raise RuntimeError(
                f"fetching the Neo4j jars failed (mvn exit code {proc.returncode}): "
                f"{' '.join(cmd)}\n--- last lines of Maven's output ---\n"
                + _tail_text(proc.stdout, 60)
            )
        if not any(cache_dir.glob("neo4j-bolt-*.jar")):
            raise RuntimeError(
                f"Maven succeeded but no neo4j-bolt jar is in {cache_dir}; "
                f"check {POM}\n" + _tail_text(proc.stdout, 60)
            )
        (cache_dir / STAMP_NAME).write_text(digest + "\n")
    return cache_dir


def _tail_text(text: str, n: int) -> str:
    lines = text.splitlines()
    return "\n".join(lines[-n:])


# --------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------


def find_free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("no 'java' on PATH (and none under $JAVA_HOME); Java 17+ is needed")
    return java


def _launcher_command(deps: Path) -> list[str]:
    """Classpath and main class for the JVM command line.

    Launcher.java is compiled once with javac into ``<deps>/.launcher/<hash>``
    (keyed by the source and the pom), which saves the 2-3 s that the
    single-file source launcher spends compiling on every start. Without a
    javac next to java, the source file is run directly.
    """
    source = LAUNCHER.read_bytes()
    digest = hashlib.sha256(source + _pom_digest().encode()).hexdigest()[:16]
    out = deps / ".launcher" / digest
    source_mode = ["-cp", str(deps / "*"), str(LAUNCHER)]
    if not (out / "Launcher.class").is_file():
        javac = Path(_java_executable()).resolve().with_name("javac")
        if not javac.is_file():
            return source_mode
        with _file_lock(deps / ".launcher.lock"):
            if not (out / "Launcher.class").is_file():
                out.parent.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkdtemp(prefix="build-", dir=out.parent))
                proc = subprocess.run(
                    [str(javac), "-nowarn", "-d", str(tmp), "-cp", str(deps / "*"), str(LAUNCHER)],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    errors="replace",
                    timeout=300,
                )
                if proc.returncode != 0:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise RuntimeError(
                        f"javac failed on {LAUNCHER}:\n" + _tail_text(proc.stdout + proc.stderr, 60)
                    )
                shutil.rmtree(out, ignore_errors=True)
                tmp.rename(out)
    return ["-cp", f"{deps / '*'}{os.pathsep}{out}", "Launcher"]


_LIVE: set[Neo4jServer] = set()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all_at_exit() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        with contextlib.suppress(Exception):
            server.close(timeout=20.0)


class Neo4jServer:
    """One Neo4j DBMS in a child JVM, on 127.0.0.1 with Bolt only; no auth unless a
    ``password`` is given (then the user ``neo4j`` has it: the server a user already runs,
    as the external-Neo4j test job needs one).

    ``start()`` picks a free port and a temporary home directory the first
    time; ``restart()`` (and any later ``start()``) reuses both, so the data
    survive. ``close()`` (or leaving the ``with`` block) stops the JVM and
    removes a home directory that this object created.
    """

    def __init__(
        self,
        home: Path | None = None,
        port: int | None = None,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        deps_dir: Path | None = None,
        heap: str | None = None,
        pagecache: str | None = None,
        password: str | None = None,
    ) -> None:
        self._home: Path | None = Path(home).resolve() if home is not None else None
        self._owns_home = False
        self._port: int | None = port
        self._port_fixed = port is not None
        self.start_timeout = start_timeout
        self._deps_dir = deps_dir
        self._heap = heap or os.environ.get(ENV_HEAP) or DEFAULT_HEAP
        #: Neo4j's page cache (``"64m"``, ``"2g"``); ``None``: the launcher's 64 MiB.
        self._pagecache = pagecache
        self._password = password
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        #: Wall-clock seconds the last successful ``start()`` took.
        self.last_start_seconds: float | None = None
        #: Wall-clock seconds the last ``stop()`` took.
        self.last_stop_seconds: float | None = None

    # -- properties --------------------------------------------------------

    @property
    def uri(self) -> str:
        if self._port is None:
            raise RuntimeError("Neo4jServer has not been started yet")
        return f"bolt://{HOST}:{self._port}"

    @property
    def auth(self) -> tuple[str, str] | None:
        """What the driver logs in with: None when auth is off (no ``password``)."""
        return None if self._password is None else ("neo4j", self._password)

    @property
    def port(self) -> int | None:
        return self._port

    @property
    def home(self) -> Path | None:
        return self._home

    @property
    def log_path(self) -> Path | None:
        return self._home / LOG_NAME if self._home else None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> Neo4jServer:
        if self.is_running():
            raise RuntimeError(f"Neo4jServer already running at {self.uri}")
        deps = ensure_deps(self._deps_dir)
        if self._home is None:
            _sweep_stale_homes()
            self._home = Path(tempfile.mkdtemp(prefix=TEMP_HOME_PREFIX)).resolve()
            self._owns_home = True
            (self._home / OWNER_FILE).write_text(f"{os.getpid()}\n")
        self._home.mkdir(parents=True, exist_ok=True)

        attempts = 1 if self._port_fixed else 3
        for attempt in range(1, attempts + 1):
            if self._port is None:
                self._port = find_free_port()
            t0 = time.monotonic()
            try:
                self._spawn_and_wait(deps)
            except _PortTaken:
                # The free port was grabbed by someone else between our probe
                # and the JVM's bind: try another one.
                if attempt == attempts:
                    raise RuntimeError(
                        f"Neo4j could not bind a port after {attempts} attempts\n"
                        + self._log_tail()
                    ) from None
                self._port = None
                continue
            self.last_start_seconds = time.monotonic() - t0
            # Once bound, the port is ours for good: a restart reuses it.
            self._port_fixed = True
            return self
        raise AssertionError("unreachable")

    def _spawn_and_wait(self, deps: Path) -> None:
        assert self._home is not None and self._port is not None
        log_path = self._home / LOG_NAME
        # Kept open for the JVM's lifetime (its stdout/stderr); closed in
        # _forget_process().
        self._log = open(log_path, "ab")  # noqa: SIM115
        offset = self._log.tell()
        header = (
            f"\n=== launcher start {time.strftime('%Y-%m-%d %H:%M:%S')} port {self._port} ===\n"
        )
        self._log.write(header.encode())
        self._log.flush()
        offset += len(header.encode())
        cmd = [
            _java_executable(),
            *_jvm_flags(self._heap),
            *_launcher_command(deps),
            "--port",
            str(self._port),
            "--home",
            str(self._home),
        ]
        if self._pagecache is not None:
            cmd += ["--pagecache-mib", str(_heap_bytes(self._pagecache) // 1024**2)]
        self._proc = subprocess.Popen(
            cmd,
            cwd=str(self._home),
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Own process group: a Ctrl-C in the terminal reaches Python, which
            # then stops the JVM in order; if Python dies instead, the JVM sees
            # EOF on stdin and shuts itself down.
            start_new_session=True,
            env=self._launcher_env(),
        )
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self._wait_ready(log_path, offset)
        except BaseException:
            self._kill()
            raise

    def _launcher_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "NEO4J_TEST_PASSWORD"}
        if self._password is not None:
            env["NEO4J_TEST_PASSWORD"] = self._password
        return env

    def _wait_ready(self, log_path: Path, offset: int) -> None:
        deadline = time.monotonic() + self.start_timeout
        seen_ready = False
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                code = self._proc.returncode if self._proc else None
                text = _read_from(log_path, offset)
                if "Address already in use" in text and not self._port_fixed:
                    raise _PortTaken()
                raise RuntimeError(
                    f"Neo4j JVM exited with code {code} before becoming ready "
                    f"(home {self._home})\n" + self._log_tail()
                )
            if not seen_ready:
                seen_ready = any(
                    line.startswith(READY_MARKER)
                    for line in _read_from(log_path, offset).splitlines()
                )
            if seen_ready and self._bolt_ok(min(10.0, max(1.0, deadline - time.monotonic()))):
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"Neo4j did not become ready within {self.start_timeout:.0f} s "
            f"(ready line seen: {seen_ready}; home {self._home})\n" + self._log_tail()
        )

    def _bolt_ok(self, timeout: float) -> bool:
        from neo4j import GraphDatabase
        from neo4j.exceptions import DriverError, Neo4jError

        try:
            with GraphDatabase.driver(
                self.uri, auth=self.auth, connection_timeout=timeout, max_connection_pool_size=1
            ) as driver:
                records, _, _ = driver.execute_query("RETURN 1 AS one")
                return bool(records[0]["one"] == 1)
        except (DriverError, Neo4jError, OSError):
            return False

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the JVM: close its stdin (clean shutdown), then kill after ``timeout``."""
        proc = self._proc
        if proc is None:
            return
        t0 = time.monotonic()
        try:
            if proc.poll() is None:
                with contextlib.suppress(OSError, ValueError):
                    if proc.stdin:
                        proc.stdin.close()
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.terminate()
                    try:
                        proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(timeout=10)
        finally:
            self._forget_process()
            self.last_stop_seconds = time.monotonic() - t0

    def restart(self) -> Neo4jServer:
        """Stop, then start again on the same port with the same home (data kept)."""
        if self._port is None or self._home is None:
            raise RuntimeError("restart() called on a server that was never started")
        self.stop()
        return self.start()

    def close(self, timeout: float = 60.0) -> None:
        """Stop the JVM and delete the home directory if this object created it."""
        try:
            self.stop(timeout=timeout)
        finally:
            if self._owns_home and self._home is not None:
                shutil.rmtree(self._home, ignore_errors=True)
                self._home = None
                self._owns_home = False

    def _kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
        finally:
            self._forget_process()

    def _forget_process(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.stdin:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def _log_tail(self, n: int = LOG_TAIL_LINES) -> str:
        path = self.log_path
        if path is None or not path.exists():
            return "(no launcher log)"
        with open(path, "rb") as fh:
            lines = deque(fh, maxlen=n)
        body = b"".join(lines).decode(errors="replace")
        extra = f"\n(Neo4j's own log: {self._home / 'logs' / 'debug.log'})" if self._home else ""
        return f"--- last {n} lines of {path} ---\n{body}{extra}"

    # -- context manager ---------------------------------------------------

    def __enter__(self) -> Neo4jServer:
        if not self.is_running():
            self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<Neo4jServer {state} port={self._port} home={self._home}>"


class _PortTaken(Exception):
    pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_homes(min_age: float = 120.0) -> None:
    """Delete temp homes left behind by test runs that were killed (SIGKILL etc.).

    Only directories that we created (they hold OWNER_FILE) whose owning
    process is gone and that saw no writes for ``min_age`` seconds are removed;
    their JVM has shut itself down on stdin EOF long before.
    """
    now = time.time()
    for home in Path(tempfile.gettempdir()).glob(TEMP_HOME_PREFIX + "*"):
        try:
            pid = int((home / OWNER_FILE).read_text().strip())
            stamps = [p.stat().st_mtime for p in (home / OWNER_FILE, home / LOG_NAME) if p.exists()]
        except (OSError, ValueError):
            continue
        if pid == os.getpid() or _pid_alive(pid) or now - max(stamps) < min_age:
            continue
        shutil.rmtree(home, ignore_errors=True)


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memory_core_dev.neo4j_server",
        description="Fetch the Neo4j test-server jars, or run the test server.",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--fetch", action="store_true", help="only fetch the jars (for CI)")
    mode.add_argument("--serve", action="store_true", help="start a server and wait for Ctrl-C")
    parser.add_argument("--port", type=int, default=None, help="Bolt port (default: a free one)")
    parser.add_argument("--home", type=Path, default=None, help="DBMS home (default: a temp dir)")
    parser.add_argument("--deps-dir", type=Path, default=None, help="jar cache directory")
    args = parser.parse_args(argv)

    if args.fetch:
        t0 = time.monotonic()
        path = ensure_deps(args.deps_dir)
        _launcher_command(path)  # compile Launcher.java now, not in the first test
        jars = len(list(path.glob("*.jar")))
        print(f"Neo4j jars ready in {path} ({jars} jars, {time.monotonic() - t0:.1f} s)")
        return 0

    server = Neo4jServer(home=args.home, port=args.port, deps_dir=args.deps_dir)
    try:
        server.start()
        print(server.uri, flush=True)
        print(
            f"(started in {server.last_start_seconds:.1f} s; home {server.home}; Ctrl-C to stop)",
            file=sys.stderr,
            flush=True,
        )
        while server.is_running():
            time.sleep(0.5)
        print("Neo4j exited on its own; see " + str(server.log_path), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.close()


if __name__ == "__main__":
    sys.exit(main())
