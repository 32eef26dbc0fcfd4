"""Finding pg_auto_failover's bug #774 in the monitor's history
(:func:`memory_core_dev.pg_ha.primaries_left_writing`), and a formation that fails to
start made again once (:meth:`memory_core_dev.pg_ha.HaFormation.start`).

The history rows are the monitor's own (``HaFormation.event_log``), from a switchover that lost six
acknowledged writes on 2026-12-07 (descriptions shortened), and from a clean one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core_dev.pg_ha import HaFormation, primaries_left_writing

STRUCK = [
    ("06:32:45.785002", "node1", "primary", "draining", "0/30C4590", "user-initiated failover"),
    ("06:32:45.785002", "node2", "secondary", "prepare_promotion", "0/30C4590", "same"),
    ("06:32:45.804163", "node1", "primary", "wait_primary", "0/30C4590", "none healthy"),
    ("06:32:46.882963", "node1", "wait_primary", "wait_primary", "0/31D4600", "reported"),
    ("06:32:46.954001", "node2", "prepare_promotion", "stop_replication", "0/31DCB78", "x"),
    ("06:32:46.954001", "node1", "wait_primary", "demote_timeout", "0/31D4600", "x"),
    ("06:32:52.361725", "node1", "wait_primary", "demoted", "0/3620750", "timeout expired"),
]
CLEAN = [
    ("06:32:55.204722", "node2", "primary", "draining", "0/33C1570", "user-initiated failover"),
    ("06:32:55.204722", "node1", "secondary", "prepare_promotion", "0/33CD930", "same"),
    ("06:32:55.275941", "node2", "primary", "demote_timeout", "0/33EA988", "x"),
    ("06:32:55.386922", "node2", "draining", "demote_timeout", "0/0", "reported"),
    ("06:32:56.400817", "node1", "stop_replication", "wait_primary", "0/33F6000", "promoted"),
    ("06:32:56.400817", "node2", "demote_timeout", "demoted", "0/33EA988", "x"),
]


def test_a_primary_assigned_wait_primary_while_being_demoted_is_found() -> None:
    assert primaries_left_writing(STRUCK) == [("06:32:45.804163", "node1")]


def test_a_clean_switchover_and_a_promoted_standby_are_not() -> None:
    # node1 is assigned wait_primary too: as the promoted standby, which is how it should be
    assert primaries_left_writing(CLEAN) == []
    assert primaries_left_writing(CLEAN + STRUCK) == [("06:32:45.804163", "node1")]


def test_a_formation_that_fails_to_start_is_made_again_from_nothing_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pg_autoctl 2.0 now and then gives up creating a node on a loaded machine: the next
    attempt gets a new directory and new ports; a second failure is raised."""
    formation = HaFormation()
    tries: list[tuple[Path, dict[str, int]]] = []

    def flaky(self: HaFormation) -> HaFormation:
        tries.append((self.root, dict(self.ports)))
        if len(tries) == 1:
            raise RuntimeError("pg_autoctl of node1 exited: role nobody does not exist")
        return self

    monkeypatch.setattr(HaFormation, "_start_once", flaky)
    try:
        assert formation.start() is formation
        (first_root, first_ports), (second_root, second_ports) = tries
        assert second_root != first_root and not first_root.exists()
        assert set(second_ports) == set(first_ports) and second_ports != first_ports

        def broken(self: HaFormation) -> HaFormation:
            raise RuntimeError("still broken")

        monkeypatch.setattr(HaFormation, "_start_once", broken)
        with pytest.raises(RuntimeError, match="still broken"):
            formation.start()
    finally:
        formation.stop()
