"""``python -m bench.failover`` at its smallest: three writers (one of each kind) through one
switchover of the run's pg_auto_failover formation (``pg_ha``, shared with the failover
tests), then the report and its markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import failover
from memory_core_dev.failover_writers import KINDS
from memory_core_dev.pg_ha import HaFormation


@pytest.mark.anyio
async def test_one_failover_loses_nothing_and_reports_it(pg_ha: HaFormation) -> None:
    report = await failover.run(pg_ha, writers=3, failovers=1, kinds=list(KINDS))
    assert report["failovers"] == 1 and len(report["outage_s"]["each"]) == 1
    assert report["acknowledged_calls"] > 0
    assert (report["lost"], report["duplicates"], report["half_batches"]) == (0, 0, 0)
    assert report["unexpected"] == 0
    page = failover.markdown(report)
    assert "| acknowledged writes lost | 0 |" in page
    json.dumps(report)  # what main writes to bench/results/failover.json


@pytest.mark.parametrize("option", ["--kinds", "--faults"])
def test_the_command_refuses_an_unknown_kind_or_fault(tmp_path: Path, option: str) -> None:
    with pytest.raises(SystemExit) as exited:
        failover.main([option, "switchover,keyed,bogus", "--out", str(tmp_path)])
    assert exited.value.code == 2
    assert list(tmp_path.iterdir()) == []
