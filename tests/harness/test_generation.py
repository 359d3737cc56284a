"""The harness's upstream side without broker or Spark: scenarios and DDLs are valid and replayable."""

from __future__ import annotations

import random

import pytest

from tests.harness.moves import KINDS, DdlMoves
from tests.harness.scenario import PROTOCOLS, build_simulator, scenario_for

#: avro needs a schema registry to encode; its DDL choices are those of the other protocols.
LOCAL_PROTOCOLS = [p for p in PROTOCOLS if p != "avro"]


def _stream(seed: int, protocol: str, steps: int = 50) -> tuple[list[bytes], list[str]]:
    scenario = scenario_for(seed, protocol, "normal")
    sim = build_simulator(scenario, f"gen-{seed}")
    moves = DdlMoves(sim, random.Random(seed), protocol)
    sim.setup()
    for _ in range(steps):
        if moves.rng.random() < 0.2:
            moves.random_ddl()
        else:
            sim.run_transactions(1)
    return [m.value for m in sim.take()], moves.done


@pytest.mark.parametrize("protocol", LOCAL_PROTOCOLS)
def test_random_ddls_are_valid_and_cover_every_kind(protocol: str) -> None:
    done = [ddl for seed in range(1, 9) for ddl in _stream(seed, protocol)[1]]
    described = " ".join(done)
    words = {
        "add_column": "ADD COLUMN",
        "drop_column": "DROP COLUMN",
        "rename_column": "RENAME COLUMN",
        "modify_column": "MODIFY COLUMN",
        "create_index": "CREATE INDEX",
        "drop_index": "DROP INDEX",
        "truncate_table": "TRUNCATE",
        "rename_table": "RENAME TO",
        "create_table": "CREATE TABLE",
    }
    assert sorted(words) == sorted(KINDS)
    assert [kind for kind, word in words.items() if word not in described] == []


def test_the_same_seed_gives_the_same_stream() -> None:
    assert _stream(7, "debezium") == _stream(7, "debezium")
    assert _stream(7, "debezium")[0] != _stream(8, "debezium")[0]


def test_scenarios_follow_the_protocol() -> None:
    avro = [scenario_for(seed, "avro") for seed in range(20)]
    assert {(s.mix.delete, s.mix.key_update, s.keyless_tables, s.burst_probability) for s in avro} == {
        (0.0, 0.0, None, None)
    }
    shapes = {(s.dispatch, s.topic_dispatch, s.split_key_updates) for s in map(scenario_for, range(40), ["open"] * 40)}
    assert len(shapes) == 8, "40 seeds should cover both dispatch rules, both topic modes, split on and off"
    assert scenario_for(3, "open", "small", bursts=False).burst_probability is None
    assert "BURSTS=0" in scenario_for(3, "open", bursts=False).replay_command()
