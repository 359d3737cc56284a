"""Exactly-once apply against the reference model, on random scenarios (issue 5, the harness).

One fixed small scenario per protocol (tests/harness): several tables, partitions, table or
index-value dispatch, one topic or one per table, inserts, updates, deletes and key-changing
updates (split or not), bursts of changes on one key in a transaction (sent as TiCDC does: each
key's net mutation), tables without a key, random DDLs, watermarks, at-least-once replays, and
two runs at random cut points through the real broker and this process's Spark session. After
every run every Iceberg table equals the model at the run's watermark.

More seeds: ``make soak SEEDS=20 PROTOCOLS=debezium`` (a failure prints its replay command).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.runner import Services, run_scenario
from tests.harness.scenario import PROTOCOLS, scenario_for

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]

#: Per protocol a seed whose small scenario has DDLs, and between them key-changing updates,
#: topic-per-table dispatch and keyless tables (see the scenario's ``describe()``).
SEEDS = {"simple-json": 11, "simple-avro": 1, "debezium": 5, "canal-json": 8, "open": 8, "avro": 8}


def _services(request: pytest.FixtureRequest, protocol: str, tmp_path: Path) -> Services:
    registry = request.getfixturevalue("schema_registry_url") if protocol == "avro" else None
    return Services(
        request.getfixturevalue("spark"),
        request.getfixturevalue("lake_home"),
        request.getfixturevalue("kafka_bootstrap"),
        registry,
        tmp_path,
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_table_equals_the_model_after_every_run(
    request: pytest.FixtureRequest, protocol: str, tmp_path: Path
) -> None:
    scenario = scenario_for(SEEDS[protocol], protocol, "small", bursts=True)
    result = run_scenario(_services(request, protocol, tmp_path), scenario)
    assert result.failures == [], "\n".join(result.failures)
    assert result.runs == scenario.runs
    assert result.ddls, f"seed {scenario.seed} made no DDL: choose another seed for {protocol}"
    assert result.rows_checked > 0, "no run applied anything to compare"
