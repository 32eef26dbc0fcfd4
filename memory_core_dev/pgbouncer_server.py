"""A throwaway PgBouncer in transaction mode in front of a test PostgreSQL.

:class:`PgBouncerServer` writes an ini and an auth file into a temporary directory and
runs Debian's ``pgbouncer`` (``/usr/sbin/pgbouncer``, else ``PATH``) in the foreground on
127.0.0.1, on a free port, with ``pool_mode = transaction`` and a small server pool, so
consecutive transactions of one client land on different server connections. Clients
log in with trust authentication; the one database entry points at the PostgreSQL of the
given URL. PgBouncer refuses to run as root, so under root it runs as ``nobody`` (like
:mod:`memory_core_dev.postgres_server`). :meth:`PgBouncerServer.close` stops it and
removes the directory.

The ``pgbouncer_server`` fixture (session scope, started only when a test asks for it)
yields a :class:`~memory_core_dev.postgres_server.PostgresHandle` whose URL goes through
PgBouncer to the run's ``postgres_server``.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core_dev.postgres_server import (
    UNPRIVILEGED_USER,
    PostgresHandle,
    free_port,
    log_tail,
    wait_ready,
)

__all__ = ["PgBouncerServer", "find_pgbouncer", "pgbouncer_server"]

SERVER_POOL_SIZE = 2


def find_pgbouncer() -> str:
    """The ``pgbouncer`` binary; RuntimeError naming the package when it is missing."""
    for each in ("/usr/sbin/pgbouncer", shutil.which("pgbouncer")):
        if each and Path(each).is_file():
            return each
    raise RuntimeError(
        "pgbouncer not found: install Debian's `pgbouncer` (scripts/test does as root)"
    )


def _quote(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


class PgBouncerServer:
    """One PgBouncer in front of the PostgreSQL at ``backend_url``; :meth:`start`,
    :meth:`close`."""

    def __init__(self, backend_url: str, *, pool_size: int = SERVER_POOL_SIZE) -> None:
        from psycopg.conninfo import conninfo_to_dict

        self.target = conninfo_to_dict(backend_url)
        self.pool_size = pool_size
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="memory-core-pgbouncer-"))
        self._user = UNPRIVILEGED_USER if os.geteuid() == 0 else None
        self._process: subprocess.Popen[bytes] | None = None
        self._log = self.root / "pgbouncer.log"
        atexit.register(self.close)

    @property
    def user(self) -> str:
        """The PostgreSQL user every client logs in as (the target's)."""
        return str(self.target.get("user") or "postgres")

    @property
    def dbname(self) -> str:
        """The database name clients use (the target's)."""
        return str(self.target.get("dbname") or "postgres")

    @property
    def url(self) -> str:
        """``postgresql://<user>@127.0.0.1:<port>/<dbname>`` (trust auth at PgBouncer)."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.dbname}"

    def _database_line(self) -> str:
        keys = ("host", "port", "dbname", "user", "password")
        parts = [f"{k}={self.target[k]}" for k in keys if self.target.get(k)]
        return f"{self.dbname} = {' '.join(parts)}"

    def _write_config(self) -> Path:
        (self.root / "users.txt").write_text(f'{_quote(self.user)} ""\n')
        ini = self.root / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"{self._database_line()}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            f"unix_socket_dir = {self.root}\n"
            "auth_type = trust\n"
            f"auth_file = {self.root / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool_size}\n"
            "max_client_conn = 200\n"
            f"logfile = {self._log}\n"
            f"pidfile = {self.root / 'pgbouncer.pid'}\n"
        )
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            for path in (self.root, *self.root.iterdir()):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        return ini

    def _run_as(self) -> dict[str, object]:
        if self._user is None:
            return {}
        entry = pwd.getpwnam(self._user)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def start(self) -> PgBouncerServer:
        """Write the configuration, start PgBouncer, wait until a query goes through."""
        ini = self._write_config()
        self._process = subprocess.Popen(
            [find_pgbouncer(), str(ini)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            cwd=self.root,
            start_new_session=True,
            **self._run_as(),  # type: ignore[call-overload]
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        assert self._process is not None
        wait_ready("pgbouncer", self._process, self.url, self._log)

    def log_tail(self) -> str:
        """The end of PgBouncer's log (for failure messages)."""
        return log_tail(self._log)

    def close(self) -> None:
        """Stop PgBouncer (SIGINT: immediate shutdown) and remove its directory."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pgbouncer_server(postgres_server: PostgresHandle) -> Iterator[PostgresHandle]:
    """PgBouncer (transaction mode, ``SERVER_POOL_SIZE`` server connections) in front of
    the run's PostgreSQL, started once when a test asks for it."""
    server = PgBouncerServer(postgres_server.url)
    try:
        server.start()
        yield PostgresHandle(url=server.url)
    finally:
        server.close()
