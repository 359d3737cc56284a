"""Canal-JSON without commit TSO: DDL versions by offset, rows by their columns (``schema.untimed_ddl``)."""

from __future__ import annotations

from ticdc_lake.config import CodecOptions
from ticdc_lake.events import EventKind, EventStatus, RawMessage
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import prepared_lookup
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_sim.catalog import column
from ticdc_sim.encoders import encoder_for
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import OperationMix, WorkloadConfig


def _raw(sim: TicdcSimulator, partitions: int) -> list[RawMessage]:
    return [
        RawMessage(m.topic, p, offset, 0, m.key, m.value)
        for p in range(partitions)
        for offset, m in enumerate(sim.partition_log(p))
    ]


def test_an_alter_without_commit_ts_versions_the_rows_after_it() -> None:
    sim = TicdcSimulator(
        seed=7,
        topic="t",
        partitions=2,
        dispatch="index-value",
        workload=WorkloadConfig(tables=1, databases=1, mix=OperationMix(key_update=0)),
        encoder=encoder_for("canal-json", "UTC", enable_tidb_extension=False),
    )
    sim.setup(create_databases=True)
    sim.run_transactions(8)
    database, table = sim.model.tables()[0]
    sim.add_column(database, table, column("added_c", "varchar", length=16, nullable=True))
    sim.run_transactions(8)
    log0 = sim.partition_log(0)
    replayed = len(log0)
    sim.replay(partitions=[0], start=0)  # TiCDC re-sends partition 0 whole: CREATE and ALTER again
    messages = _raw(sim, 2)
    decoder = decoder_for("canal-json", CodecOptions(enable_tidb_extension=False))
    lookup = prepared_lookup(decoder, messages, MemorySchemaLookup())
    ddls = [(m.partition, m.offset) for m in messages if b'"isDdl":true' in m.value]  # type: ignore[operator]
    create, alter = [o for p, o in ddls if p == 0 and o < replayed][-2:]
    events = [e for m in messages for e in decoder.read(m, lookup)]
    versions = {e.ddl_type: e.table_schema.version for e in events if e.kind is EventKind.DDL and e.table_schema}
    assert versions == {"CREATE": create + 1, "ALTER": alter + 1}
    rows = [e for e in events if e.kind is EventKind.DML]
    assert all(e.status is EventStatus.READY for e in rows)
    for e in rows:
        added = "added_c" in (e.column_types or {})
        before_alter = e.position.partition == 0 and e.position.offset < alter
        expected = alter + 1 if added or not before_alter else create + 1
        assert e.schema_version == expected, (e.position, e.column_types)
    for partition in (0, 1):
        seen = [e.schema_version or 0 for e in rows if e.position.partition == partition]
        assert seen == sorted(seen)  # versions only move forward along a partition
    assert {e.schema_version for e in rows if e.position.partition == 1} <= {create + 1, alter + 1}
    with_note = lookup.get(database, table, alter + 1)
    assert with_note is not None
    assert [c.name for c in with_note.columns][-1] == "added_c"
