"""Simulator round trip: the same seeded workload through Simple Avro and Simple JSON.

Both encoders and both decoders were written independently; every DML must decode to the same
canonical row images (and the same commit TSO, table and operation) through either encoding.
"""

from __future__ import annotations

from ticdc_lake.config import CodecOptions
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, RawMessage
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.protocols.simple_avro import SimpleAvroDecoder
from ticdc_lake.protocols.simple_json import SimpleJsonDecoder
from ticdc_sim.encoding import ProtocolEncoder
from ticdc_sim.simple_avro_encoder import SimpleAvroEncoder
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

ZONE = "Asia/Shanghai"
Summary = tuple[str, int, str | None, str | None, str | None, str, str]


def _decode_all(seed: int, encoder: ProtocolEncoder, decoder: Decoder) -> list[ChangeEvent]:
    simulator = TicdcSimulator(
        seed=seed, partitions=2, server_time_zone=ZONE, encoder=encoder, workload=WorkloadConfig(tables=4)
    )
    simulator.setup(create_databases=True)
    simulator.run_transactions(150)
    simulator.flush_watermark()
    schemas = MemorySchemaLookup()
    events: list[ChangeEvent] = []
    for partition in range(simulator.partitions):
        for offset, out in enumerate(simulator.partition_log(partition)):
            message = RawMessage(out.topic, partition, offset, 0, out.key, out.value)
            for event in decoder.decode(message, schemas):
                for schema in (event.table_schema, event.pre_table_schema):
                    if schema is not None:
                        schemas.add(schema)
                events.append(event)
    return events


def _dml(events: list[ChangeEvent]) -> list[Summary]:
    rows = []
    for event in events:
        if event.kind is EventKind.DML:
            assert event.status is EventStatus.READY
            rows.append(
                (
                    event.table_ref(),
                    event.commit_ts,
                    event.op.value if event.op else None,
                    None if event.before is None else repr(sorted(event.before.items())),
                    None if event.after is None else repr(sorted(event.after.items())),
                    str(event.schema_version),
                    str(event.table_id),
                )
            )
    return rows


def test_avro_and_json_decode_every_dml_to_the_same_row_images() -> None:
    options = CodecOptions(server_time_zone=ZONE)
    for seed in (7, 2024):
        avro_events = _decode_all(seed, SimpleAvroEncoder(ZONE), SimpleAvroDecoder(options))
        json_events = _decode_all(seed, SimpleJsonEncoder(ZONE), SimpleJsonDecoder(options))
        avro_rows, json_rows = _dml(avro_events), _dml(json_events)
        assert len(avro_rows) > 300
        assert avro_rows == json_rows
        kinds = [(e.kind, e.commit_ts, e.ddl_type, e.ddl_query) for e in avro_events]
        assert kinds == [(e.kind, e.commit_ts, e.ddl_type, e.ddl_query) for e in json_events]


def test_avro_and_json_announce_the_same_table_schemas() -> None:
    """Including DATETIME/TIMESTAMP/TIME fsp, which Avro recovers from the display length."""
    options = CodecOptions(server_time_zone=ZONE)
    avro_events = _decode_all(11, SimpleAvroEncoder(ZONE), SimpleAvroDecoder(options))
    json_events = _decode_all(11, SimpleJsonEncoder(ZONE), SimpleJsonDecoder(options))
    avro_schemas = [e.table_schema for e in avro_events if e.table_schema is not None]
    json_schemas = [e.table_schema for e in json_events if e.table_schema is not None]
    assert len(avro_schemas) > 4
    assert avro_schemas == json_schemas
    types = {c.mysql_type for schema in avro_schemas for c in schema.columns}
    assert {"timestamp", "float", "double", "enum", "set"} <= types
