"""Failover soak: concurrent writers against a pg_auto_failover formation while its primary
is failed over again and again.

Run ``python -m bench.failover`` from the repository root (``--writers``, ``--failovers``,
``--kinds``, ``--faults``, ``--standbys``, ``--monitor-defaults``). It starts a formation
of its own on 127.0.0.1 (:class:`memory_core_dev.pg_ha.HaFormation`: a monitor, a primary
and a synchronous standby, or two), opens one backend object on its multi-host URL and
runs the writers of :mod:`memory_core_dev.failover_writers` on it. The failovers take
``--faults`` in turn: ``switchover`` (``pg_autoctl perform failover``), ``kill`` (a
SIGKILL of the primary's postmaster: its keeper starts it again, or the monitor promotes
the standby) and ``lose`` (the primary's machine lost, keeper and PostgreSQL together: the
monitor promotes the standby, which takes writes alone for :data:`ALONE` seconds before
the lost node comes back as its standby). After each, the next one waits until every
writer has had a few more writes acknowledged.

Reported (printed, and written to ``bench/results/failover.json`` and ``failover.md``):
acknowledged writes lost, duplicates among keyed writes and turns, batches stored in part,
the write outage per failover (the longest pause between two acknowledged writes of any
writer around it: p50, p95, max) and the errors the writers saw, by type.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import platform
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import anyio

from memory_core import MemoryBackend, open_backend
from memory_core_dev.failover_writers import KINDS, WRITERS, Tally, check
from memory_core_dev.pg_ha import HaFormation, primaries_left_writing

from .core import percentile

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_FAULTS = ("switchover", "kill", "lose")
ALONE = 2.0  # seconds the new primary takes writes alone before the lost node comes back
AFTER = 3  # acknowledgements each writer needs after a failover before the next one
STALLED = 300.0  # seconds without those acknowledgements before the soak gives up


def sessions_for(writers: int, kinds: list[str]) -> list[str]:
    """One session per writer, the kinds taken in turn."""
    return [f"{kind}-{i}" for i, kind in zip(range(writers), itertools.cycle(kinds), strict=False)]


def outage(acked_at: list[float], began: float, resumed: float) -> float:
    """The longest pause between acknowledgements from the last one before ``began`` to
    ``resumed``."""
    before = [t for t in acked_at if t < began]
    times = sorted([*before[-1:], *(t for t in acked_at if began <= t <= resumed)])
    return max((b - a for a, b in itertools.pairwise(times)), default=resumed - began)


async def _wait_acks(tally: Tally, sessions: list[str], need: dict[str, int]) -> None:
    """Until each session has ``need`` acknowledged contents; TimeoutError after
    :data:`STALLED` seconds (a writer stuck: the soak's own failure, not a figure)."""
    with anyio.fail_after(STALLED):
        while any(tally.count(s) < need[s] for s in sessions):
            await anyio.sleep(0.01)


def lose_and_restore(formation: HaFormation) -> str:
    """The primary's machine lost (the monitor promotes the standby, which takes writes
    alone), then brought back as the standby; the primary's name."""
    formation.lose_primary()
    time.sleep(ALONE)
    return formation.restore()


FAULTS = {"switchover": "failover", "kill": "kill_primary", "lose": "lose_and_restore"}


def fault_of(formation: HaFormation, name: str) -> Callable[[], str]:
    """One of :data:`FAULTS` on ``formation``."""
    if name == "lose":
        return functools.partial(lose_and_restore, formation)
    return cast(Callable[[], str], getattr(formation, FAULTS[name]))


async def _fail_over(
    formation: HaFormation,
    tally: Tally,
    sessions: list[str],
    n: int,
    events: list[str],
    faults: list[str],
) -> float:
    """The ``n``-th failover (``faults`` in turn); its outage. Each is
    written to ``events``: when it began and ended (seconds since the first
    acknowledgement), what it was, the primary before and after."""
    fault = fault_of(formation, faults[n % len(faults)])
    before = formation.primary()
    began = time.monotonic()
    after = await anyio.to_thread.run_sync(fault)
    ended = time.monotonic()
    await _wait_acks(tally, sessions, {s: tally.count(s) + AFTER for s in sessions})
    start = tally.acked_at[0]
    replication = await anyio.to_thread.run_sync(formation.replication)
    events.append(
        f"{began - start:8.2f}-{ended - start:8.2f} s {faults[n % len(faults)]}: "
        f"{before} -> {after}; then {replication}"
    )
    return outage(tally.acked_at, began, time.monotonic())


async def soak(
    formation: HaFormation,
    store: MemoryBackend,
    sessions: list[str],
    failovers: int,
    events: list[str],
    faults: list[str],
) -> tuple[Tally, list[float]]:
    """The writers on ``store`` while ``formation`` fails over ``failovers`` times."""
    tally, stop, outages = Tally(), anyio.Event(), []
    async with anyio.create_task_group() as group:
        for session in sessions:
            group.start_soon(WRITERS[session.split("-")[0]], store, session, tally, stop)
        await _wait_acks(tally, sessions, dict.fromkeys(sessions, AFTER))
        for n in range(failovers):
            took = await _fail_over(formation, tally, sessions, n, events, faults)
            outages.append(took)
            print(f"failover {n + 1}/{failovers}: outage {outages[-1]:.2f} s", flush=True)
        stop.set()
    return tally, outages


async def run(
    formation: HaFormation,
    *,
    writers: int,
    failovers: int,
    kinds: list[str],
    faults: list[str] | None = None,
    require_standby: bool = False,
) -> dict[str, Any]:
    """Soak ``formation`` and return the report (``faults``: :data:`DEFAULT_FAULTS`;
    ``require_standby``: the backend's option)."""
    faults = faults or list(DEFAULT_FAULTS)
    sessions = sessions_for(writers, kinds)
    schema = f"soak_{uuid.uuid4().hex[:12]}"
    url = f"{formation.url}&schema={schema}"
    url += "&require_standby=true" if require_standby else ""
    began, events = time.monotonic(), list[str]()
    async with open_backend(url, max_size=writers + 2, pool_timeout=30, connect_timeout=2) as store:
        tally, outages = await soak(formation, store, sessions, failovers, events, faults)
        found = await check(store, tally, sessions)
        if found.lost:
            print("LOST failovers:", *events, sep="\n  ")
            await _evidence(formation, store, schema, tally, sessions)
    errors = tally.errors_by_type()
    return {
        "require_standby": require_standby,
        # times the monitor left a demoted primary taking writes alone (bug #774)
        "primaries_left_writing": len(primaries_left_writing(formation.event_log())),
        "writers": writers,
        "kinds": kinds,
        "failovers": failovers,
        "faults": faults,
        "standbys": len(formation.ports) - 1,
        "seconds": round(time.monotonic() - began, 1),
        "acknowledged_calls": len(tally.acked_at),
        "acknowledged_messages": sum(len(v) for v in tally.acknowledged.values()),
        **asdict(found),
        "outage_s": {
            "p50": round(percentile(outages, 0.5), 2),
            "p95": round(percentile(outages, 0.95), 2),
            "max": round(max(outages, default=0.0), 2),
            "each": [round(o, 2) for o in outages],
        },
        "errors": errors,
        "events": events,
        "maybe_applied": sum(e.maybe_applied for e in tally.errors),
        "gave_up": tally.gave_up,
        "machine": f"{platform.machine()}, {_cores()} cores, Python {platform.python_version()}",
    }


async def _evidence(
    formation: HaFormation, store: MemoryBackend, schema: str, tally: Tally, sessions: list[str]
) -> None:
    """Print where the lost writes were (by session: how many, the first and last of them in
    acknowledgement order) and how many messages each node holds, before the formation
    is stopped."""
    import psycopg

    for session in sessions:
        stored = {m.content for m in (await store.get_conversation(session, limit=10**8)).messages}
        acked = tally.acknowledged.get(session, [])
        lost = [c for c in acked if c not in stored]
        times = [_wall(tally.when[c]) for c in (lost[:1] + lost[-1:])]
        print(
            f"LOST {session}: {len(lost)} of {len(acked)}, first and last {lost[:1] + lost[-1:]}"
            f" acknowledged at {times}"
        )
    for node in formation.ports:
        with psycopg.connect(formation.node_url(node), autocommit=True) as conn:
            count = conn.execute(f"SELECT count(*) FROM {schema}.messages").fetchone()
            standby = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        print(f"LOST {node}: {count} messages, in recovery {standby}")
    print(f"LOST formation: {formation.states()}", flush=True)
    kept = RESULTS / "failover-lost-logs"
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(formation.root, kept, ignore=_not_logs)
    events = "\n".join("\t".join(row) for row in formation.event_log())
    (kept / "monitor-events.tsv").write_text(events + "\n")
    print(f"LOST the formation's logs and the monitor's events: {kept}", flush=True)


def _wall(monotonic: float) -> str:
    """A ``time.monotonic()`` reading as a UTC wall-clock time, to the millisecond (to set
    beside the monitor's events and the nodes' logs)."""
    wall = time.time() - time.monotonic() + monotonic
    return time.strftime("%H:%M:%S", time.gmtime(wall)) + f".{int(wall % 1 * 1000):03d} UTC"


def _not_logs(folder: str, names: list[str]) -> set[str]:
    """Everything but logs and directories (the data directories' own ``log`` folders)."""
    return {n for n in names if not n.endswith(".log") and not Path(folder, n).is_dir()}


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def markdown(report: dict[str, Any]) -> str:
    """The report as a short markdown page."""
    o = report["outage_s"]
    errors = ", ".join(f"{k} {v}" for k, v in report["errors"].items()) or "none"
    return "\n".join(
        [
            "# Failover soak (`python -m bench.failover`)",
            "",
            f"{report['writers']} writers ({', '.join(report['kinds'])}), "
            f"{report['failovers']} failovers ({', '.join(report['faults'])} in turn), "
            f"{report['seconds']} s; {report['machine']}.",
            "",
            "| measure | value |",
            "| --- | --- |",
            f"| acknowledged calls (messages) | {report['acknowledged_calls']:,} "
            f"({report['acknowledged_messages']:,}) |",
            f"| acknowledged writes lost | {report['lost']} |",
            f"| require_standby | {report['require_standby']} |",
            "| a demoted primary left taking writes alone (pg_auto_failover #774) | "
            f"{report['primaries_left_writing']} |",
            f"| duplicates among keyed writes and turns | {report['duplicates']} |",
            f"| batches stored in part | {report['half_batches']} |",
            f"| write outage per failover, p50 / p95 / max | {o['p50']} / {o['p95']} / "
            f"{o['max']} s |",
            f"| errors seen by the writers | {errors} |",
            f"| of which maybe_applied | {report['maybe_applied']} |",
            "",
        ]
    )


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.failover", description=__doc__)
    p.add_argument("--writers", type=int, default=6, help="concurrent writers (6)")
    p.add_argument("--failovers", type=int, default=20, help="failovers (20)")
    p.add_argument(
        "--kinds", default=",".join(KINDS), help=f"writer kinds, in turn ({','.join(KINDS)})"
    )
    p.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    p.add_argument(
        "--faults",
        default=",".join(DEFAULT_FAULTS),
        help=f"faults, in turn ({','.join(FAULTS)}; default {','.join(DEFAULT_FAULTS)})",
    )
    p.add_argument("--standbys", type=int, choices=(1, 2), default=1, help="standbys (1)")
    p.add_argument(
        "--monitor-defaults",
        action="store_true",
        help="the monitor with pg_auto_failover's own health-check and demote timeouts "
        "(20 s, 30 s), not the tests' (5 s, 5 s)",
    )
    p.add_argument(
        "--stale-settle",
        action="store_true",
        help="go on after a fault as soon as the monitor shows a primary and a secondary, "
        "stale states too (the harness when a run lost writes; see HaFormation.stale_settle)",
    )
    p.add_argument(
        "--require-standby",
        action="store_true",
        help="open the backend with require_standby=True (writes acknowledged only with a "
        "synchronous standby)",
    )
    args = p.parse_args(argv)
    args.kinds = [k for k in args.kinds.split(",") if k]
    args.faults = [f for f in args.faults.split(",") if f]
    if not args.kinds or set(args.kinds) - set(KINDS) or args.writers < 1:
        p.error(f"--kinds takes {', '.join(KINDS)}; --writers at least 1")
    if not args.faults or set(args.faults) - set(FAULTS):
        p.error(f"--faults takes {', '.join(FAULTS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Start a formation, soak it, print and write the report; 1 when a write was lost or
    stored twice."""
    args = _parse(argv)
    monitor: dict[str, str] | None = {} if args.monitor_defaults else None
    formation = HaFormation(monitor, standbys=args.standbys)
    formation.stale_settle = args.stale_settle
    formation.start()
    print(f"formation started in {formation.started_in:.1f} s", flush=True)
    try:
        report = anyio.run(
            lambda: run(
                formation,
                writers=args.writers,
                failovers=args.failovers,
                kinds=args.kinds,
                faults=args.faults,
                require_standby=args.require_standby,
            )
        )
    finally:
        formation.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "failover.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "failover.md").write_text(markdown(report))
    print(markdown(report))
    bad = report["lost"] or report["duplicates"] or report["half_batches"] or report["unexpected"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
