"""Topic-per-table dispatch: rows, DDL, BOOTSTRAP and watermarks per topic, replay per topic."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from ticdc_sim.avro_confluent_encoder import AvroConfluentEncoder
from ticdc_sim.canal_json_encoder import CanalJsonEncoder
from ticdc_sim.catalog import TEMPLATES
from ticdc_sim.producer import produce_all
from ticdc_sim.simulator import OutMessage, TicdcSimulator
from ticdc_sim.topics import table_topic
from ticdc_sim.workload import WorkloadConfig

ORDERS, ACCOUNTS, LINES = "cdc_shop_orders", "cdc_shop_1_accounts", "cdc_shop_order_lines"


def _sim(**kwargs: object) -> TicdcSimulator:
    options: dict[str, object] = {
        "seed": 6,
        "topic": "cdc",
        "partitions": 2,
        "topic_dispatch": "table",
        "workload": WorkloadConfig(tables=3, databases=2),
    }
    options.update(kwargs)
    return TicdcSimulator(**options)  # type: ignore[arg-type]


def _runs(messages: list[OutMessage]) -> list[list[OutMessage]]:
    """The watermark broadcasts: maximal runs of consecutive WATERMARK messages."""
    runs: list[list[OutMessage]] = []
    previous = ""
    for message in messages:
        if message.kind == "WATERMARK":
            if previous != "WATERMARK":
                runs.append([])
            runs[-1].append(message)
        previous = message.kind
    return runs


def test_single_topic_is_the_default() -> None:
    sim = TicdcSimulator(seed=1, topic="t1", partitions=2, workload=WorkloadConfig(tables=2))
    sim.run_transactions(10)
    assert sim.topic_dispatch == "single"
    assert sim.topics == ["t1"]
    assert sim.topic_of("shop", "orders") == "t1"
    assert {m.topic for m in sim.messages()} == {"t1"}
    assert sim.partition_log(1) == sim.partition_log(1, "t1") == [m for m in sim.messages() if m.partition == 1]


def test_rows_ddl_and_watermarks_go_to_the_tables_topics() -> None:
    sim = _sim()
    sim.setup(create_databases=True)
    sim.run_transactions(40)
    sim.advance(2)
    messages = sim.messages()
    assert sim.topics == sorted(["cdc", ORDERS, ACCOUNTS, LINES])
    assert sim.topic_of("shop_1", "accounts") == ACCOUNTS
    # CREATE DATABASE to the default topic, CREATE TABLE to the table's topic, on every partition
    ddls = [(m.topic, m.partition, json.loads(m.value)["type"]) for m in messages if m.kind == "DDL"]
    assert ddls == [
        ("cdc", 0, "QUERY"),
        ("cdc", 1, "QUERY"),
        ("cdc", 0, "QUERY"),
        ("cdc", 1, "QUERY"),
        (ORDERS, 0, "CREATE"),
        (ORDERS, 1, "CREATE"),
        (ACCOUNTS, 0, "CREATE"),
        (ACCOUNTS, 1, "CREATE"),
        (LINES, 0, "CREATE"),
        (LINES, 1, "CREATE"),
    ]
    rows = [m for m in messages if m.kind in ("DML", "BOOTSTRAP")]
    assert len(rows) > 40
    for message in rows:
        value = json.loads(message.value)
        table = value.get("tableSchema", value)
        assert message.topic == sim.topic_of(table.get("database", table.get("schema")), table["table"])
    assert {m.topic for m in rows} == {ORDERS, ACCOUNTS, LINES}
    # every broadcast reaches every partition of the default topic and of every topic that had an
    # event before it; a topic's first event is never a watermark here (all tables were created)
    first_event = {t: min(i for i, m in enumerate(messages) if m.topic == t) for t in sim.topics}
    assert {t: messages[i].kind for t, i in first_event.items()} == {
        "cdc": "DDL",
        ORDERS: "DDL",
        ACCOUNTS: "DDL",
        LINES: "DDL",
    }
    runs = _runs(messages)
    assert len(runs) > 10
    for run in runs:
        at = messages.index(run[0])
        wanted = {(t, p) for t, i in first_event.items() if i < at for p in (0, 1)}
        assert [(m.topic, m.partition) for m in run] == sorted(wanted)
        assert len({m.commit_ts for m in run}) == 1
    assert sim.last_watermarks(ORDERS) == sim.last_watermarks() == {0: sim.checkpoint_ts, 1: sim.checkpoint_ts}
    assert sim.last_watermark(1, LINES) == sim.checkpoint_ts


def test_rename_ddl_goes_to_the_old_topic_and_rows_to_the_new() -> None:
    sim = _sim()
    sim.run_transactions(5)
    sim.take()
    sim.rename_table("shop", "orders", "shop", "orders_v2")
    after_rename = sim.take()
    new_topic = "cdc_shop_orders_v2"
    assert [(m.topic, m.partition, m.kind) for m in after_rename if m.kind == "DDL"] == [
        (ORDERS, 0, "DDL"),
        (ORDERS, 1, "DDL"),
    ]
    # the forced watermark after the DDL already reaches the new name's topic
    assert (new_topic, 0) in {(m.topic, m.partition) for m in after_rename if m.kind == "WATERMARK"}
    sim.commit(sim.workload.next_changes(sim.model, only=[("shop", "orders_v2")]))
    dml = [m for m in sim.take() if m.kind == "DML"]
    assert dml
    assert {m.topic for m in dml} == {new_topic}
    assert new_topic in sim.topics
    # TRUNCATE and DROP TABLE go to the table's topic, DROP DATABASE to the default topic
    sim.truncate_table("shop", "orders_v2")
    sim.drop_table("shop", "order_lines")
    sim.drop_database("shop_1")
    ddls = [(m.topic, json.loads(m.value)["type"]) for m in sim.take() if m.kind == "DDL" and m.partition == 0]
    assert ddls == [(new_topic, "TRUNCATE"), (LINES, "ERASE"), ("cdc", "QUERY")]


def test_bootstraps_of_a_renamed_table_stay_on_its_first_topic() -> None:
    """tiflow's ``tableStatistic.topic`` never changes (``pkg/sink/codec/bootstraper.go``)."""
    sim = _sim(workload=WorkloadConfig(tables=1), bootstrap_interval_s=10)
    sim.run_transactions(3)
    sim.rename_table("shop", "orders", "shop", "orders_v2")
    sim.take()
    for _ in range(4):
        sim.commit(sim.workload.next_changes(sim.model))
        sim.advance(4)
    messages = sim.take()
    assert {m.topic for m in messages if m.kind == "BOOTSTRAP"} == {ORDERS}
    assert {m.topic for m in messages if m.kind == "DML"} == {"cdc_shop_orders_v2"}
    bootstrap = next(json.loads(m.value) for m in messages if m.kind == "BOOTSTRAP")
    assert bootstrap["tableSchema"]["table"] == "orders_v2"


def test_active_watermark_topics_follow_tiflow_get_active_topics() -> None:
    sim = _sim(watermark_topics="active")
    sim.run_transactions(10)
    sim.drop_table("shop", "order_lines")
    sim.rename_table("shop_1", "accounts", "shop_1", "accounts_v2")
    sim.take()
    sim.run_transactions(5)
    sim.advance(3)
    watermark_topics = {m.topic for m in sim.take() if m.kind == "WATERMARK"}
    assert watermark_topics == {"cdc", ORDERS, "cdc_shop_1_accounts_v2"}
    assert sim.topics == sorted(["cdc", ORDERS, ACCOUNTS, LINES, "cdc_shop_1_accounts_v2"])
    with pytest.raises(ValueError, match="watermark_topics must be one of"):
        _sim(watermark_topics="all")


def test_canal_json_ddl_goes_to_partition_zero_of_the_table_topic() -> None:
    sim = _sim(encoder=CanalJsonEncoder())
    sim.setup()
    assert [(m.topic, m.partition) for m in sim.messages() if m.kind == "DDL"] == [
        (ORDERS, 0),
        (ACCOUNTS, 0),
        (LINES, 0),
    ]


def test_topic_names_are_sanitized_like_tiflow() -> None:
    assert table_topic("cdc", "shop-1", "客户 表.x") == "cdc_shop-1_____.x"
    assert len(table_topic("p", "d" * 200, "t" * 200)) == 249
    with pytest.raises(ValueError, match=r"may only hold \[A-Za-z0-9._-\]"):
        TicdcSimulator(topic="bad topic", topic_dispatch="table")
    with pytest.raises(ValueError, match="topic_dispatch must be one of"):
        TicdcSimulator(topic_dispatch="schema")
    sim = _sim(workload=WorkloadConfig(tables=1))
    sim.setup()
    sim.create_table(TEMPLATES[0].build("shop", "événements"))
    assert sim.topics == ["cdc", "cdc_shop__v_nements", ORDERS]


def test_replay_and_malformed_per_topic() -> None:
    sim = _sim()
    sim.run_transactions(20)
    log = sim.partition_log(0, ORDERS)
    copies = sim.replay([0], start=1, count=2, topic=ORDERS)
    assert [m.value for m in copies] == [m.value for m in log[1:3]]
    assert all(m.replay and m.topic == ORDERS for m in copies)
    assert sim.partition_log(0, ORDERS)[len(log) :] == copies
    everything = sim.replay(topic=LINES)
    assert len(everything) == len(sim.partition_log(0, LINES)) // 2 + len(sim.partition_log(1, LINES)) // 2
    bad = sim.append_malformed(1, b"\xff", topic=ACCOUNTS)
    assert sim.partition_log(1, ACCOUNTS)[-1] == bad
    assert bad.topic == ACCOUNTS
    with pytest.raises(ValueError, match="was not used") as caught:
        sim.replay([0], topic="cdc_nope")
    assert str(caught.value) == (
        f"topic 'cdc_nope' was not used by this changefeed; used topics: {sorted(['cdc', ORDERS, ACCOUNTS, LINES])}"
    )
    with pytest.raises(ValueError, match=r"topic 'cdc_shop_orders' partition 0: cannot replay \["):
        sim.replay([0], start=10_000, count=1, topic=ORDERS)


def test_avro_registers_each_table_under_its_topics_subjects() -> None:
    subjects: dict[str, int] = {}

    def register(subject: str, text: str) -> int:
        return subjects.setdefault(subject, len(subjects) + 1)

    sim = _sim(topic="cdc.x", encoder=AvroConfluentEncoder(register=register, topic="cdc.x"))
    sim.run_transactions(30)
    table_topics = [t for t in sim.topics if t != "cdc.x"]
    assert table_topics == ["cdc.x_shop_1_accounts", "cdc.x_shop_order_lines", "cdc.x_shop_orders"]
    assert sorted(subjects) == sorted(t.replace(".", "_") + side for t in table_topics for side in ("-key", "-value"))


def _count_per_topic(bootstrap: str, wanted: dict[tuple[str, int], int]) -> dict[tuple[str, int], list[bytes]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"sim-{uuid.uuid4()}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(t, p, 0) for t, p in wanted])
    got: dict[tuple[str, int], list[bytes]] = {k: [] for k in wanted}
    try:
        idle = 0
        while any(len(got[k]) < n for k, n in wanted.items()) and idle < 60:
            record = consumer.poll(0.5)
            if record is None:
                idle += 1
                continue
            assert record.error() is None, record.error()
            topic, partition, value = record.topic(), record.partition(), record.value()
            assert topic is not None
            assert partition is not None
            assert value is not None
            got[(topic, partition)].append(value)
    finally:
        consumer.close()
    return got


@pytest.mark.kafka
def test_produce_all_creates_every_topic(kafka_bootstrap: str) -> None:
    prefix = f"simt-{uuid.uuid4().hex[:8]}"
    sim = _sim(topic=prefix, workload=WorkloadConfig(tables=2))
    sim.run_transactions(10)
    messages = sim.take()
    produce_all(kafka_bootstrap, messages, sim.partitions)
    wanted: dict[tuple[str, int], list[bytes]] = {}
    for m in messages:
        wanted.setdefault((m.topic, m.partition), []).append(m.value)
    assert {t for t, _ in wanted} == set(sim.topics) == {prefix, f"{prefix}_shop_orders", f"{prefix}_shop_accounts"}
    got = _count_per_topic(kafka_bootstrap, {k: len(v) for k, v in wanted.items()})
    assert got == wanted
