"""TicdcSimulator: TiCDC's MQ-sink message order, cadence, broadcast, replay and determinism."""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime, timedelta

import pytest

from ticdc_lake import tso
from ticdc_sim.column_types import Value
from ticdc_sim.dispatch import index_value_partition
from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder
from ticdc_sim.simulator import DEFAULT_START, OutMessage, TicdcSimulator
from ticdc_sim.workload import OperationMix, WorkloadConfig

ORDERS_PARTITION = zlib.crc32(b"shop\x00orders") % 3


def _sim(**kwargs: object) -> TicdcSimulator:
    options: dict[str, object] = {"seed": 3, "partitions": 3, "workload": WorkloadConfig(tables=1)}
    options.update(kwargs)
    return TicdcSimulator(**options)  # type: ignore[arg-type]


def _kinds(messages: list[OutMessage]) -> list[tuple[str, int]]:
    return [(m.kind, m.partition) for m in messages]


def _ms_since_start(build_ts: int) -> int:
    return build_ts - tso.physical_ms(tso.from_datetime(DEFAULT_START))


def test_create_table_is_broadcast_then_a_forced_watermark() -> None:
    sim = _sim()
    created = sim.setup()
    messages = sim.take()
    assert _kinds(messages) == [
        ("DDL", 0),
        ("DDL", 1),
        ("DDL", 2),
        ("WATERMARK", 0),
        ("WATERMARK", 1),
        ("WATERMARK", 2),
    ]
    ddl_ts = messages[0].commit_ts
    assert len({m.value for m in messages[:3]}) == 1
    ddl = json.loads(messages[0].value)
    assert ddl["type"] == "CREATE"
    assert ddl["commitTs"] == ddl_ts
    assert ddl["tableSchema"]["schema"] == "shop"
    assert ddl["tableSchema"]["table"] == "orders"
    assert ddl["tableSchema"]["tableID"] == created[0].table_id == 100
    assert ddl["tableSchema"]["version"] == created[0].version
    assert created[0].version is not None
    assert created[0].version < ddl_ts
    assert ddl["sql"].startswith("CREATE TABLE `shop`.`orders` (`id` bigint NOT NULL, ")
    assert [json.loads(m.value) for m in messages[3:]] == [
        {"version": 1, "type": "WATERMARK", "commitTs": ddl_ts, "buildTs": ddl["buildTs"]}
    ] * 3
    assert sim.last_watermarks() == {0: ddl_ts, 1: ddl_ts, 2: ddl_ts}
    assert sim.checkpoint_ts == ddl_ts
    assert sim.setup() == []
    assert sim.take() == []


def test_bootstrap_goes_to_every_partition_before_the_first_row() -> None:
    sim = _sim()
    sim.setup()
    sim.take()
    [txn] = sim.run_transactions(1)
    messages = sim.take()
    bootstrap = messages[:3]
    assert _kinds(bootstrap) == [("BOOTSTRAP", 0), ("BOOTSTRAP", 1), ("BOOTSTRAP", 2)]
    value = json.loads(bootstrap[0].value)
    assert value["type"] == "BOOTSTRAP"
    assert value["commitTs"] == 0
    assert value["tableSchema"]["table"] == "orders"
    assert "database" not in value
    assert "sql" not in value
    assert all(m.commit_ts == 0 for m in bootstrap)
    rows = messages[3:]
    assert [m.kind for m in rows] == ["DML"] * len(txn.changes)
    assert {m.partition for m in rows} == {ORDERS_PARTITION}
    assert {m.commit_ts for m in rows} == {txn.commit_ts}
    # the next transaction gets no bootstrap: the table is known now
    sim.run_transactions(1)
    assert "BOOTSTRAP" not in [m.kind for m in sim.take()]


def test_watermark_ticks_every_second_only_when_the_checkpoint_advanced() -> None:
    sim = _sim(transaction_gap_ms=(100, 100))
    sim.setup()
    [txn] = sim.run_transactions(1)
    sim.take()
    sim.advance(1.0)
    first = sim.take()
    assert _kinds(first) == [("WATERMARK", 0), ("WATERMARK", 1), ("WATERMARK", 2)]
    assert {m.commit_ts for m in first} == {txn.commit_ts}
    assert json.loads(first[0].value)["commitTs"] == txn.commit_ts
    assert _ms_since_start(json.loads(first[0].value)["buildTs"]) % 1000 == 0
    sim.advance(10.0)
    assert sim.take() == []  # nothing committed: no watermark
    assert sim.last_watermark(1) == txn.commit_ts
    assert sim.last_watermark(7) is None


def test_flush_watermark_makes_the_last_transaction_visible_now() -> None:
    sim = _sim()
    [*_, last] = sim.run_transactions(5)
    sim.take()
    assert sim.flush_watermark() == last.commit_ts
    assert [(m.kind, m.partition, m.commit_ts) for m in sim.take()] == [
        ("WATERMARK", p, last.commit_ts) for p in range(3)
    ]
    assert sim.last_watermarks() == {0: last.commit_ts, 1: last.commit_ts, 2: last.commit_ts}


def test_bootstrap_repeats_after_120_seconds_on_the_5_second_check() -> None:
    sim = _sim()
    sim.run_transactions(1)
    first_bootstrap = json.loads(next(m for m in sim.take() if m.kind == "BOOTSTRAP").value)["buildTs"]
    sim.advance(125.0)
    messages = [m for m in sim.take() if m.kind == "BOOTSTRAP"]
    assert _kinds(messages) == [("BOOTSTRAP", 0), ("BOOTSTRAP", 1), ("BOOTSTRAP", 2)]
    sent_at = json.loads(messages[0].value)["buildTs"]
    assert _ms_since_start(sent_at) % 5000 == 0
    assert 120_000 <= sent_at - first_bootstrap < 125_000


def test_bootstrap_repeats_after_the_row_count() -> None:
    sim = _sim(
        bootstrap_row_count=4,
        workload=WorkloadConfig(
            tables=1, min_rows_per_transaction=2, max_rows_per_transaction=2, mix=OperationMix(1, 0, 0, 0)
        ),
    )
    sim.run_transactions(1)  # bootstrap, then 2 rows (the first row is not counted, like TiCDC)
    sim.take()
    sim.run_transactions(2)  # 4 more rows: 5 counted
    assert sim.now < DEFAULT_START + timedelta(seconds=1)
    sim.advance(5.0)  # reach the next 5 s check
    bootstraps = [m for m in sim.take() if m.kind == "BOOTSTRAP"]
    assert _kinds(bootstraps) == [("BOOTSTRAP", 0), ("BOOTSTRAP", 1), ("BOOTSTRAP", 2)]
    sim.advance(5.0)
    assert [m for m in sim.take() if m.kind == "BOOTSTRAP"] == []  # counter was reset


def test_idle_table_is_forgotten_after_30_minutes_and_bootstrapped_again() -> None:
    sim = _sim()
    sim.run_transactions(1)
    sim.take()
    sim.advance(31 * 60.0)
    periodic = [m for m in sim.take() if m.kind == "BOOTSTRAP"]
    # at 125 s, 245 s, ..., 1805 s; the 30 s check forgets the table at 1830 s
    sent_at = sorted({_ms_since_start(json.loads(m.value)["buildTs"]) for m in periodic})
    assert sent_at == [125_000 + 120_000 * k for k in range(15)]
    assert len(periodic) == 15 * 3
    sim.run_transactions(1)
    after = sim.take()
    assert _kinds(after[:3]) == [("BOOTSTRAP", 0), ("BOOTSTRAP", 1), ("BOOTSTRAP", 2)]


def test_bootstrap_to_partition_zero_only_when_configured() -> None:
    sim = _sim(bootstrap_to_all_partitions=False)
    sim.run_transactions(1)
    assert [m.partition for m in sim.take() if m.kind == "BOOTSTRAP"] == [0]


def test_key_changing_update_is_split_with_one_commit_ts() -> None:
    mix = OperationMix(insert=1, update=0, delete=0, key_update=0)
    sim = _sim(workload=WorkloadConfig(tables=1, mix=mix))
    sim.run_transactions(3)
    sim.take()
    row = sim.model.rows("shop", "orders")[0]
    moved = {**row, "id": 10_000}
    txn = sim.commit(
        [
            RowChange(DmlOp.DELETE, "shop", "orders", row, None, split=True),
            RowChange(DmlOp.INSERT, "shop", "orders", None, moved, split=True),
        ]
    )
    messages = sim.take()
    assert [(m.kind, m.commit_ts) for m in messages] == [("DML", txn.commit_ts)] * 2
    values = [json.loads(m.value) for m in messages]
    assert [v["type"] for v in values] == ["DELETE", "INSERT"]
    assert values[0]["old"]["id"] == str(row["id"])
    assert values[1]["data"]["id"] == "10000"
    assert sim.model.row("shop", "orders", (row["id"],)) is None
    assert sim.model.row("shop", "orders", (10_000,)) == moved


def test_index_value_dispatch_uses_the_key_of_each_row() -> None:
    sim = _sim(dispatch="index-value", partitions=4, workload=WorkloadConfig(tables=3))
    sim.run_transactions(60)
    rows = [m for m in sim.take() if m.kind == "DML"]
    seen = set()
    for message in rows:
        value = json.loads(message.value)
        schema = sim.model.schema(value["database"], value["table"])
        image = value.get("data") or value["old"]
        key = {name: image[name] for name in schema.handle_key()}
        model_row = {name: _parse_key(schema.column(name).mysql_type, text) for name, text in key.items()}  # type: ignore[union-attr]
        assert message.partition == index_value_partition(schema, model_row, 4)
        seen.add(message.partition)
    assert seen == {0, 1, 2, 3}


def _parse_key(mysql_type: str, text: str) -> Value:
    return int(text) if mysql_type in ("bigint", "int") else text


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    def run(seed: int) -> list[tuple[int, bytes]]:
        sim = TicdcSimulator(
            seed=seed,
            partitions=3,
            server_time_zone="Asia/Shanghai",
            workload=WorkloadConfig(tables=4, databases=2),
        )
        sim.run_transactions(150)
        sim.advance(200)
        sim.flush_watermark()
        return [(m.partition, m.value) for m in sim.take()]

    first = run(11)
    assert first == run(11)
    assert first != run(12)


def test_commit_ts_strictly_increase_and_match_the_clock() -> None:
    sim = _sim(start=datetime(2024, 3, 1, tzinfo=UTC), transaction_gap_ms=(0, 3))
    transactions = sim.run_transactions(200)
    stamps = [t.commit_ts for t in transactions]
    assert stamps == sorted(set(stamps))
    assert tso.to_datetime(stamps[-1]) <= sim.now
    assert sim.now - datetime(2024, 3, 1, tzinfo=UTC) < timedelta(seconds=2)


def test_replay_resends_a_contiguous_slice_byte_for_byte() -> None:
    sim = _sim()
    sim.run_transactions(4)
    sent = sim.take()
    log = sim.partition_log(ORDERS_PARTITION)
    copies = sim.replay([ORDERS_PARTITION], start=3, count=4)
    assert [(m.partition, m.key, m.value, m.kind, m.commit_ts) for m in copies] == [
        (m.partition, m.key, m.value, m.kind, m.commit_ts) for m in log[3:7]
    ]
    assert all(m.replay for m in copies)
    assert not any(m.replay for m in sent)
    assert sim.take() == copies
    assert sim.partition_log(ORDERS_PARTITION)[len(log) :] == copies
    both = sim.replay([0, 1], start=0, count=2)
    assert [(m.partition, m.value) for m in both] == [(p, m.value) for p in (0, 1) for m in sim.partition_log(p)[:2]]
    with pytest.raises(
        ValueError,
        match=r"^topic 'ticdc-simple' partition 0: cannot replay \[0, 1000\), "
        r"only offsets \[0, \d+\) were sent$",
    ):
        sim.replay([0], start=0, count=1000)
    with pytest.raises(ValueError, match=r"^topic 'ticdc-simple' has partitions 0..2, not 5$"):
        sim.replay([5])


def test_malformed_message_goes_to_the_requested_partition() -> None:
    sim = _sim()
    sim.setup()
    sim.take()
    message = sim.append_malformed(2, b"\xff{not json")
    assert message == OutMessage("ticdc-simple", 2, None, b"\xff{not json", "MALFORMED", 0)
    assert sim.take() == [message]
    assert sim.partition_log(2)[-1] == message


def test_the_stream_replays_to_the_model_state() -> None:
    """Applying the DML messages in order rebuilds exactly the model's final tables."""
    sim = TicdcSimulator(seed=5, partitions=3, workload=WorkloadConfig(tables=4, databases=2))
    sim.run_transactions(400)
    encoder = SimpleJsonEncoder()
    tables: dict[tuple[str, str], dict[tuple[str, ...], dict[str, object]]] = {}
    for message in sim.take():
        if message.kind != "DML":
            continue
        value = json.loads(message.value)
        schema = sim.model.schema(value["database"], value["table"])
        rows = tables.setdefault((value["database"], value["table"]), {})
        if "old" in value:
            del rows[tuple(value["old"][k] for k in schema.handle_key())]
        if "data" in value:
            key = tuple(value["data"][k] for k in schema.handle_key())
            assert key not in rows
            rows[key] = value["data"]
    assert sorted(tables) == sim.model.tables()
    for (database, table), rows in tables.items():
        schema = sim.model.schema(database, table)
        expected = [encoder.row_json(schema, row) for row in sim.model.rows(database, table)]
        assert sorted(rows.values(), key=json.dumps) == sorted(expected, key=json.dumps)


def test_setup_can_create_the_databases_first() -> None:
    sim = _sim(workload=WorkloadConfig(tables=2, databases=2))
    sim.setup(create_databases=True)
    ddls = [json.loads(m.value) for m in sim.take() if m.kind == "DDL" and m.partition == 0]
    assert [(d["type"], d.get("sql", "")[:26], "tableSchema" in d) for d in ddls] == [
        ("QUERY", "CREATE DATABASE `shop`", False),
        ("QUERY", "CREATE DATABASE `shop_1`", False),
        ("CREATE", "CREATE TABLE `shop`.`order", True),
        ("CREATE", "CREATE TABLE `shop_1`.`acc", True),
    ]
    assert [d["commitTs"] for d in ddls] == sorted({d["commitTs"] for d in ddls})


def test_expected_rows_default_to_the_checkpoint() -> None:
    sim = _sim()
    first, second = sim.run_transactions(2)
    assert sim.expected_iceberg_rows("shop", "orders") == sim.expected_iceberg_rows("shop", "orders", second.commit_ts)
    at_first = sim.expected_iceberg_rows("shop", "orders", first.commit_ts)
    assert [r["id"] for r in at_first] == [r["id"] for r in sim.model.rows_at("shop", "orders", first.commit_ts)]
