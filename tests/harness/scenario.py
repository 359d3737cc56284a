"""One random scenario from one integer seed: the simulator's shape and the workload's knobs.

Everything random in a scenario derives from ``(protocol, seed)``: the shape here, the workload
(the simulator's own ``Random(seed)``) and the delivery (:mod:`tests.harness.runner`). The same
seed and protocol therefore replay the same messages, cut points and checks.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ticdc_sim.encoders import encoder_for
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import OperationMix, WorkloadConfig

PROTOCOLS = ("simple-json", "simple-avro", "debezium", "canal-json", "open", "avro")
SIZES = ("small", "normal")


@dataclass(frozen=True, slots=True)
class Scenario:
    """The shape of one randomized scenario (see :func:`scenario_for`)."""

    seed: int
    protocol: str
    size: str
    tables: int
    partitions: int
    dispatch: str
    split_key_updates: bool
    mix: OperationMix
    runs: int
    #: Transactions per run: (low, high).
    transactions: tuple[int, int]
    #: Chance that a step of the workload is a DDL instead of a transaction.
    ddl_probability: float
    #: Simulator features that may not exist yet (None: not available or not used).
    burst_probability: float | None
    keyless_tables: int | None
    topic_dispatch: bool

    def replay_command(self) -> str:
        size = "" if self.size == "normal" else f" SOAK_SIZE={self.size}"
        bursts = "" if self.burst_probability else " BURSTS=0"
        return f"make soak PROTOCOLS={self.protocol} SEED={self.seed} SEEDS=1{size}{bursts}"

    def describe(self) -> str:
        extras = ["topic-per-table" * self.topic_dispatch]
        if self.burst_probability:
            extras.append(f"burst={self.burst_probability:.2f}")
        if self.keyless_tables:
            extras.append(f"keyless={self.keyless_tables}")
        return (
            f"{self.tables} tables, {self.partitions} partitions, dispatch {self.dispatch}, "
            f"split {self.split_key_updates}, {self.runs} runs {' '.join(e for e in extras if e)}".rstrip()
        )


def _workload_fields() -> set[str]:
    return {f.name for f in dataclasses.fields(WorkloadConfig)}


def _simulator_parameters() -> set[str]:
    return set(inspect.signature(TicdcSimulator.__init__).parameters)


def scenario_for(seed: int, protocol: str, size: str = "normal", bursts: bool = True) -> Scenario:
    """The scenario of ``seed`` for ``protocol``; ``small`` keeps it cheap enough for CI.

    ``bursts=False`` leaves out transactions with several changes on one key: TiKV keeps one
    mutation per key per transaction, so TiCDC never sends them (``workload_burst``).
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; the harness knows {', '.join(PROTOCOLS)}")
    if size not in SIZES:
        raise ValueError(f"unknown scenario size {size!r}; use one of {', '.join(SIZES)}")
    rng = random.Random(f"scenario:{protocol}:{seed}")
    small = size == "small"
    avro = protocol == "avro"
    if avro:
        # TiCDC's avro DELETE is a tombstone without commit TSO (docs/protocols.md): no deletes,
        # hence no key-changing updates either.
        mix = OperationMix(insert=0.55, update=0.45, delete=0.0, key_update=0.0)
    else:
        mix = OperationMix(
            insert=rng.uniform(0.3, 0.6), update=rng.uniform(0.1, 0.4), delete=rng.uniform(0.05, 0.25),
            key_update=rng.uniform(0.0, 0.25),
        )  # fmt: skip
    fields, parameters = _workload_fields(), _simulator_parameters()
    tables = rng.randint(3, 4) if small else rng.randint(3, 6)
    return Scenario(
        seed=seed,
        protocol=protocol,
        size=size,
        tables=tables,
        partitions=rng.randint(1, 4),
        dispatch=rng.choice(("table", "index-value")),
        split_key_updates=rng.random() < 0.6,
        mix=mix,
        runs=2 if small else rng.randint(2, 4),
        transactions=(6, 16) if small else (15, 60),
        ddl_probability=rng.uniform(0.04, 0.12),
        # Bursts delete and change keys whatever the mix says: not for avro (see above).
        burst_probability=rng.uniform(0.05, 0.3) if bursts and "burst_probability" in fields and not avro else None,
        keyless_tables=rng.randint(0, 1) if "keyless_tables" in fields and protocol != "avro" else None,
        topic_dispatch="topic_dispatch" in parameters and rng.random() < 0.4,
    )


def build_simulator(
    scenario: Scenario, topic: str, register: Callable[[str, str], Any] | None = None
) -> TicdcSimulator:
    """The scenario's simulator writing to ``topic`` (avro: registering writer schemas with ``register``)."""
    options: dict[str, Any] = {}
    if scenario.protocol == "avro":
        if register is None:
            raise ValueError("the avro protocol needs a schema registry: pass register=")
        options = {"register": register, "topic": topic}
    workload: dict[str, Any] = {
        "tables": scenario.tables,
        "databases": 1 if scenario.tables < 4 else 2,
        "mix": scenario.mix,
        "split_key_updates": scenario.split_key_updates,
        "max_rows_per_transaction": 5,
    }
    if scenario.burst_probability is not None:
        workload["burst_probability"] = scenario.burst_probability
    if scenario.keyless_tables is not None:
        workload["keyless_tables"] = scenario.keyless_tables
    extra: dict[str, Any] = {"topic_dispatch": "table"} if scenario.topic_dispatch else {}
    return TicdcSimulator(
        seed=scenario.seed,
        topic=topic,
        partitions=scenario.partitions,
        dispatch=scenario.dispatch,
        workload=WorkloadConfig(**workload),
        encoder=encoder_for(scenario.protocol, "UTC", **options),
        **extra,
    )
