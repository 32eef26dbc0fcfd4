"""A throwaway pg_auto_failover formation for tests: a monitor, a primary, a standby.

:class:`HaFormation` runs Debian's ``pg_autoctl`` (packages ``postgresql-15-auto-failover``
and ``pg-auto-failover-cli``): three PostgreSQL servers, each ``initdb`` into its own
directory under one temporary directory, every one listening on 127.0.0.1 only (the
monitor too: its default is every address), on free ports, with trust authentication on
loopback and no TLS. Each node is supervised by its own ``pg_autoctl`` process in the
background; the standby is synchronous (pg_auto_failover's default with one standby).
``HaFormation(standbys=2)`` adds a third node: a commit then waits for either standby
(``ANY 1``), so losing one of them does not stop synchronous commit.
Under root everything runs as the unprivileged ``nobody``, like
:mod:`memory_core_dev.postgres_server`.

:meth:`HaFormation.failover` is a switchover (``pg_autoctl perform failover``);
:meth:`HaFormation.kill_primary` SIGKILLs the primary's postmaster (its keeper starts it
again). Both return once the formation has a primary and a standby again.
:meth:`HaFormation.lose_primary` loses the primary's whole machine (keeper and PostgreSQL
killed together): the monitor promotes the standby, which takes writes alone until
:meth:`HaFormation.restore` brings the lost node back as its standby. The monitor's
health checks are tuned (:data:`MONITOR_SETTINGS`) to find a lost node in seconds.

The ``pg_ha`` fixture (session scope, started only when a test asks for it) yields a
started :class:`HaFormation`. It never skips: without ``pg_autoctl`` it fails, naming the
packages (``scripts/test`` installs them).
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memory_core_dev.postgres_server import UNPRIVILEGED_USER, free_port, log_tail

__all__ = ["HaFormation", "find_pg_autoctl", "pg_ha", "primaries_left_writing"]

SETTLE_TIMEOUT = 90.0
# A spread checkpoint makes the standby's base backup wait seconds for nothing here.
_NODE_SETTINGS = {"fsync": "off", "checkpoint_completion_target": "0", "max_connections": "100"}
# The monitor finds a lost node (keeper and PostgreSQL gone) in about 5 s, not 20-30 s:
# health checks every second, one retry, unhealthy after 5 s without a keeper's report;
# and then waits 5 s, not 30 s, for the old primary to confirm its demotion before it
# promotes the standby.
MONITOR_SETTINGS = {
    "pgautofailover.primary_demote_timeout": "5000",
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "5000",
}


def find_pg_autoctl() -> tuple[str, Path]:
    """``pg_autoctl`` and the PostgreSQL binaries its extension was built for; RuntimeError
    naming the Debian packages when either is missing."""
    autoctl = shutil.which("pg_autoctl") or "/usr/bin/pg_autoctl"
    for control in sorted(Path("/usr/share/postgresql").glob("*/extension/pgautofailover.control")):
        bindir = Path("/usr/lib/postgresql") / control.parent.parent.name / "bin"
        if Path(autoctl).is_file() and (bindir / "pg_ctl").is_file():
            return autoctl, bindir
    raise RuntimeError(
        "pg_auto_failover not found: install Debian's postgresql-15-auto-failover and "
        "pg-auto-failover-cli (scripts/test does as root)"
    )


class HaFormation:
    """A monitor, a primary and a synchronous standby; :meth:`start`, :meth:`stop`."""

    def __init__(
        self, monitor_settings: dict[str, str] | None = None, *, standbys: int = 1
    ) -> None:
        """``monitor_settings``: the monitor's ``pgautofailover.*`` settings
        (:data:`MONITOR_SETTINGS` unless given; ``{}`` keeps pg_auto_failover's defaults).
        ``standbys``: how many (1 or 2; with 2, a commit waits for either of them)."""
        if standbys not in (1, 2):
            raise ValueError("standbys is 1 or 2")
        self.monitor_settings = MONITOR_SETTINGS if monitor_settings is None else monitor_settings
        self.autoctl, self.bindir = find_pg_autoctl()
        self.root = Path(tempfile.mkdtemp(prefix="memory-core-ha-"))
        self.monitor_port = free_port()
        self.ports = {f"node{n}": free_port() for n in range(1, standbys + 2)}
        self._user = UNPRIVILEGED_USER if os.geteuid() == 0 else None
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self.lost: str | None = None
        """The node :meth:`lose_primary` took down, until :meth:`restore`."""
        self.started_in = 0.0
        self.stale_settle = False
        """When true, a fault returns on the monitor's first states showing a primary and
        a secondary, stale ones too, and without waiting for synchronous streaming: the
        harness as it was when the soak lost writes (issue 52), kept to try that again."""
        atexit.register(self.stop)

    @property
    def url(self) -> str:
        """Both nodes, libpq picking the one that takes writes."""
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.ports.values())
        return f"postgresql://postgres@{hosts}/postgres?target_session_attrs=read-write"

    def node_url(self, name: str) -> str:
        """One node's URL (``node1``, ``node2``, ...), whatever its role."""
        return f"postgresql://postgres@127.0.0.1:{self.ports[name]}/postgres"

    @property
    def _monitor_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.monitor_port}/pg_auto_failover"

    def _run_as(self) -> dict[str, Any]:
        if self._user is None:
            return {}
        entry = pwd.getpwnam(self._user)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "XDG_"))}
        env.update(
            LC_ALL="C",
            LANG="C",
            HOME=str(self.root),
            XDG_CONFIG_HOME=str(self.root / "config"),
            XDG_DATA_HOME=str(self.root / "share"),
            XDG_RUNTIME_DIR=str(self.root / "run"),
            PGHOST=str(self.root),  # pg_autoctl's own connections: the socket directory
            PGUSER="postgres",
            PATH=f"{self.bindir}:{env.get('PATH', '/usr/bin:/bin')}",
        )
        return env

    def _command(self, *args: str, timeout: float = SETTLE_TIMEOUT) -> str:
        done = subprocess.run(
            [self.autoctl, *args],
            capture_output=True,
            env=self._env(),
            cwd=self.root,
            timeout=timeout,
            **self._run_as(),
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"pg_autoctl {args[0]} {args[1]} failed:\n"
                f"{done.stderr.decode(errors='replace')[-3000:]}"
            )
        return str(done.stdout.decode(errors="replace"))

    def _background(self, name: str, *args: str) -> None:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - the child writes it
        self._processes[name] = subprocess.Popen(
            [self.autoctl, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self._env(),
            cwd=self.root,
            start_new_session=True,
            **self._run_as(),
        )
        log.close()

    def _initdb(self, name: str) -> Path:
        """A data directory of our own: superuser ``postgres``, socket in :attr:`root`
        (``postgresql.auto.conf``: pg_autoctl's own settings file cannot override it)."""
        data = self.root / name
        command = [str(self.bindir / "initdb"), "-D", str(data), "-U", "postgres"]
        done = subprocess.run(
            [*command, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
            capture_output=True,
            env=self._env(),
            cwd=self.root,
            **self._run_as(),
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.decode(errors='replace')[-2000:]}")
        settings = {"unix_socket_directories": str(self.root), **_NODE_SETTINGS}
        with open(data / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
            conf.writelines(f"{key} = '{value}'\n" for key, value in settings.items())
        return data

    def start(self) -> HaFormation:
        """Create and run the monitor, then the primary, then the standby; return once the
        monitor reports a primary and a secondary.

        On a loaded machine pg_autoctl 2.0 now and then gives up creating a node: its first
        connections to the new PostgreSQL stop after about 3.5 s, and its next attempts
        connect as the operating-system user, which has no role ("role nobody does not
        exist"). Then the formation is made again from nothing (new directory, new ports),
        once."""
        try:
            return self._start_once()
        except RuntimeError as exc:
            print(f"pg_ha: the formation did not start; a fresh one: {exc}", file=sys.stderr)
            self.stop()
            self.root = Path(tempfile.mkdtemp(prefix="memory-core-ha-"))
            self.monitor_port = free_port()
            self.ports = {name: free_port() for name in self.ports}
            return self._start_once()

    def _start_once(self) -> HaFormation:
        began = time.monotonic()
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        monitor = self._initdb("monitor")
        self._command(
            "create", "monitor", "--pgdata", str(monitor), "--pgport", str(self.monitor_port),
            "--pgctl", str(self.bindir / "pg_ctl"), "--hostname", "127.0.0.1",
            "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl",
        )  # fmt: skip
        with open(monitor / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
            settings = self.monitor_settings.items()
            conf.writelines(f"{key} = '{value}'\n" for key, value in settings)
        self._background("monitor", "run", "--pgdata", str(monitor))
        self._create_node("node1", self._initdb("node1"))
        self._wait(lambda states: states.get("node1") == ("single", "single"))
        for name in list(self.ports)[1:]:
            self._create_node(name, self.root / name)
            self._wait_settled(nodes=int(name[4:]))
        self.started_in = time.monotonic() - began
        return self

    def _create_node(self, name: str, data: Path) -> None:
        monitor = (
            f"postgres://autoctl_node@127.0.0.1:{self.monitor_port}/pg_auto_failover"
            "?sslmode=disable"
        )
        self._background(
            name, "create", "postgres", "--pgdata", str(data), "--pgport", str(self.ports[name]),
            "--pgctl", str(self.bindir / "pg_ctl"), "--hostname", "127.0.0.1",
            "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl", "--monitor", monitor,
            "--username", "postgres", "--dbname", "postgres", "--name", name, "--run",
        )  # fmt: skip

    def states(self) -> dict[str, tuple[str, str]]:
        """Each node's (reported, assigned) state, as the monitor has them."""
        import psycopg

        try:
            with psycopg.connect(self._monitor_url, connect_timeout=3) as conn:
                rows = conn.execute(
                    "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node"
                ).fetchall()
        except psycopg.Error:
            return {}
        return {name: (reported, goal) for name, reported, goal in rows}

    def event_log(self) -> list[tuple[str, ...]]:
        """The monitor's history of state changes (``pgautofailover.event``), oldest first:
        time (UTC, to the microsecond), node, reported state, assigned state, the node's
        reported WAL position and the monitor's description. Which node took writes in
        which state at a given moment, after a soak lost one."""
        import psycopg

        with psycopg.connect(self._monitor_url, connect_timeout=3) as conn:
            rows = conn.execute(
                "SELECT to_char(eventtime AT TIME ZONE 'UTC', 'HH24:MI:SS.US'), nodename,"
                " reportedstate::text, goalstate::text, reportedlsn::text, description"
                " FROM pgautofailover.event ORDER BY eventid"
            ).fetchall()
        return [tuple(str(v) for v in row) for row in rows]

    def primary(self) -> str:
        """The name of the node the monitor reports as primary."""
        found = [n for n, (reported, _) in self.states().items() if reported == "primary"]
        if len(found) != 1:
            raise RuntimeError(f"no single primary: {self.states()}")
        return found[0]

    def _wait(self, done: Any, what: str = "the formation to settle") -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while not done(self.states()):
            for name, process in self._processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"pg_autoctl of {name} exited:\n{self.log_tail(name)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}: {self.states()}")
            time.sleep(0.2)

    def _wait_settled(
        self, old_primary: str | None = None, since: float | None = None, nodes: int = 0
    ) -> None:
        """Until one primary and the others secondaries (``nodes`` of them in all, or every
        node), each in its assigned state (and, given
        ``old_primary``, the primary another node; given ``since``, a monitor clock
        reading, every node having reported after it, so the states are not those from
        before a fault); then until the URL takes a write and the primary has a streaming
        standby that counts for synchronous commit."""

        def settled(states: dict[str, tuple[str, str]]) -> bool:
            roles = sorted(reported for reported, goal in states.values() if reported == goal)
            if roles != ["primary"] + ["secondary"] * ((nodes or len(self.ports)) - 1):
                return False
            if since is not None and not self.stale_settle and self._oldest_report() <= since:
                return False
            return old_primary is None or states[old_primary][0] == "secondary"

        self._wait(settled)
        self._wait_writable()
        if not self.stale_settle:
            self._wait(lambda _: self._synchronous(), "a synchronous standby")

    def monitor_clock(self) -> float:
        """The monitor's clock, as seconds since the epoch."""
        return self._monitor_value("SELECT extract(epoch FROM now())::float8")

    def _oldest_report(self) -> float:
        """When the node that reported longest ago last reported (monitor's clock)."""
        return self._monitor_value(
            "SELECT extract(epoch FROM min(reporttime))::float8 FROM pgautofailover.node"
        )

    def _monitor_value(self, query: str) -> float:
        import psycopg

        with psycopg.connect(self._monitor_url, connect_timeout=3) as conn:
            row = conn.execute(query).fetchone()
        return float(row[0]) if row and row[0] is not None else 0.0

    def client_connections(self, name: str) -> int:
        """How many client connections node ``name`` has, the asking one aside."""
        import psycopg

        with psycopg.connect(self.node_url(name), autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
        return int(row[0]) if row else 0

    def _synchronous(self) -> bool:
        """The primary (found by the URL) has a streaming standby that counts for
        synchronous commit."""
        import psycopg

        try:
            with psycopg.connect(self.url, connect_timeout=3, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_replication "
                    "WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')"
                ).fetchone()
        except psycopg.Error:
            return False
        return bool(row and row[0])

    def _wait_writable(self) -> None:
        import psycopg

        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=3, autocommit=True) as conn:
                    # A commit with an xid, so it waits for the standby. Not a temporary
                    # table: dropping it when the session ends waits for the standby too,
                    # even once a shutdown has ended the session, and blocks the shutdown.
                    conn.execute("SELECT txid_current()")
                return
            except psycopg.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def failover(self) -> str:
        """A switchover (``pg_autoctl perform failover``); returns once the standby is
        the primary and the old primary its standby. The new primary's name."""
        old = self.primary()
        self._command("perform", "failover", "--pgdata", str(self.root / "monitor"))
        self._wait_settled(old_primary=old)
        return self.primary()

    def kill_primary(self) -> str:
        """SIGKILL the primary's postmaster; returns once the formation has a primary and
        a standby again (its keeper restarts it, or the monitor promotes the standby).
        The primary's name then."""
        old = self.primary()
        pid = self._postmaster(old)
        since = self.monitor_clock()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while self._postmaster(old, missing_ok=True) in (pid, 0):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{old}'s postmaster was not restarted:\n{self.log_tail(old)}")
            time.sleep(0.1)
        self._wait_settled(since=since)
        return self.primary()

    def lose_primary(self) -> str:
        """Lose the primary's whole machine: SIGKILL its keeper and its PostgreSQL together,
        so nothing restarts it and the monitor, its health checks failing, promotes the
        standby. Returns the new primary's name once it takes writes (alone: the formation
        is degraded until :meth:`restore`)."""
        old = self.primary()
        self.lose_node(old)

        def promoted(states: dict[str, tuple[str, str]]) -> bool:
            return any(
                name != old and reported == goal and reported in ("wait_primary", "primary")
                for name, (reported, goal) in states.items()
            )

        self._wait(promoted, "the monitor to promote the standby")
        self._wait_writable()
        return self.primary_or_alone()

    def lose_node(self, name: str) -> None:
        """Lose one node's machine: SIGKILL its keeper and its PostgreSQL together. It
        stays down until :meth:`restore`."""
        if self.lost is not None:
            raise RuntimeError(f"{self.lost} is lost already")
        keeper = self._processes.pop(name)
        _kill_group(keeper.pid)
        # Reaped now: a zombie keeper still answers kill(pid, 0), and the keeper that
        # restore() starts would take its pidfile for a live one and exit.
        keeper.wait(timeout=30)
        self.lost = name

    def restore(self) -> str:
        """Start the lost node's keeper again (:meth:`lose_primary`, :meth:`lose_node`): it
        rejoins as a standby. Returns the primary's name once every node is back."""
        if self.lost is None:
            raise RuntimeError("no node was lost")
        name, self.lost = self.lost, None
        self._background(name, "run", "--pgdata", str(self.root / name))
        self._wait_settled(old_primary=name)
        return self.primary()

    def replication(self) -> str:
        """What the primary says of its standbys: ``synchronous_standby_names`` and each
        standby's ``state/sync_state`` from ``pg_stat_replication`` (for reports)."""
        import psycopg

        try:
            with psycopg.connect(self.url, connect_timeout=3, autocommit=True) as conn:
                names = conn.execute("SHOW synchronous_standby_names").fetchone()
                rows = conn.execute(
                    "SELECT application_name, state, sync_state FROM pg_stat_replication"
                ).fetchall()
        except psycopg.Error as exc:
            return f"unknown ({type(exc).__name__})"
        standbys = ", ".join(f"{name} {state}/{sync}" for name, state, sync in rows) or "none"
        return f"synchronous_standby_names={names[0] if names else ''!r}; standbys: {standbys}"

    def primary_or_alone(self) -> str:
        """The node reported ``primary``, or else the one reported ``wait_primary``
        (taking writes without a standby); never a lost node (the monitor keeps its last
        report)."""
        states = {n: s for n, s in self.states().items() if n != self.lost}
        for role in ("primary", "wait_primary"):
            found = [n for n, (reported, _) in states.items() if reported == role]
            if len(found) == 1:
                return found[0]
        raise RuntimeError(f"no single primary: {self.states()}")

    def _postmaster(self, name: str, *, missing_ok: bool = False) -> int:
        try:
            first = (self.root / name / "postmaster.pid").read_text().split("\n", 1)[0]
            return int(first)
        except (OSError, ValueError):
            if missing_ok:
                return 0
            raise

    def log_tail(self, name: str) -> str:
        """The end of one pg_autoctl's log (``monitor``, ``node1``, ``node2``, ...)."""
        return log_tail(self.root / f"{name}.log")

    def stop(self) -> None:
        """Stop every pg_autoctl (each stops its PostgreSQL), kill what is left of their
        process groups, and remove the directory."""
        processes, self._processes = self._processes, {}
        for process in processes.values():
            if process.poll() is None:
                process.terminate()  # pg_autoctl stops its PostgreSQL (fast shutdown)
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            _kill_group(process.pid)  # the postmaster runs in its pg_autoctl's group
        shutil.rmtree(self.root, ignore_errors=True)


def primaries_left_writing(events: Sequence[tuple[str, ...]]) -> list[tuple[str, str]]:
    """Where pg_auto_failover's bug #774 struck, in the monitor's history
    (:meth:`HaFormation.event_log` rows): a primary being demoted (assigned ``draining`` or
    ``demote_timeout``) then assigned ``wait_primary``, which turns its synchronous
    replication off while its keeper, with no way from ``wait_primary`` to a demotion,
    keeps it taking writes as its standby is promoted. ``(time, node)`` of each."""
    goals: dict[str, str] = {}
    found: list[tuple[str, str]] = []
    for when, node, _reported, goal, *_ in events:
        if goal == "wait_primary" and goals.get(node) in ("draining", "demote_timeout"):
            found.append((when, node))
        goals[node] = goal
    return found


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


@pytest.fixture(scope="session")
def pg_ha() -> Iterator[HaFormation]:
    """The run's pg_auto_failover formation, started once when a test asks for it."""
    formation = HaFormation()
    try:
        formation.start()
        yield formation
    finally:
        formation.stop()


def _exit_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    running = HaFormation().start()
    print(f"{running.url} (started in {running.started_in:.1f} s)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        running.stop()
