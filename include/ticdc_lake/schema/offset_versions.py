"""Schema versions of rows without commit TSO (offset-ordered pipelines), decided per partition.

Canal-JSON and avro without the TiDB extension give every row commit TSO 0, so "the newest version
not after the row's TSO" finds only the first version. Apply orders such rows by Kafka offset per
partition and needs each row's version to only move forward along its partition
(``docs/offset-ordered-apply.md``). The rule, plain data so the decode driver can broadcast it:

* ``avro``: a row's version is the largest of: the version of its own value writer schema
  (version = the registry id, ``schema.avro_registry``), the versions of the rows of its table at
  lower offsets in its partition among this run's messages (the *change points* the first pass
  found, ``WriterSchemaUse``), and the table's newest version known before this run (the *floor*).
  A tombstone (delete: key only, no value schema) takes the same without its own; with nothing
  before it, the version of the next change point, else the table's newest version.

So versions only move forward along a partition, also across runs, and a row re-sent by TiCDC's
at-least-once replay after the table changed binds to the newer version: its image is applied
under the newer columns (an added column is NULL until the newer copies that follow set it, a
dropped one is ignored), which is what re-applying the ordered suffix converges to. A delete
needs only the key columns.

Limits: a schema that returns to an earlier identical one (ADD then DROP of a column) gets the
earlier registry id back, which is older than the floor: such rows bind to the newer version and
keep its columns (the dropped column stays, NULL in the rows written after the drop).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from ticdc_lake.schema.avro_registry import REGISTRY_SOURCE, WRITER_SCHEMA_ID, WriterSchemaUse
from ticdc_lake.schema.table_schema import TableSchema

Slot = tuple[str, str, str, int]


@dataclass(slots=True)
class OffsetVersions:
    """What binding offset-ordered rows needs (module docstring); picklable."""

    #: (database, table, value writer schema id) -> version.
    writer: dict[tuple[str, str, int], int] = field(default_factory=dict)
    #: (database, table) -> the newest version known before this run.
    floor: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (database, table) -> the newest version known.
    newest: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (database, table, topic, partition) -> sorted (offset, running maximum version) of this
    #: run's change points.
    points: dict[Slot, list[tuple[int, int]]] = field(default_factory=dict)

    def version_of(self, slot: Slot, offset: int, value_schema_id: int | None, key_schema_id: int | None) -> int | None:
        """The version of the offset-ordered row at ``offset`` of ``slot`` (database, table, topic,
        partition) written with these writer schemas, or None when the rule has no answer (the
        caller falls back to the version in effect at TSO 0)."""
        if value_schema_id is not None:
            own = self.writer.get((slot[0], slot[1], value_schema_id))
            if own is None:
                return None
            return max(own, self._before(slot, offset + 1) or own)
        if key_schema_id is None:
            return None
        return self._before(slot, offset) or self._after(slot, offset)

    def _before(self, slot: Slot, offset: int) -> int | None:
        """The largest of the floor and the change points of ``slot`` below ``offset``."""
        floor = self.floor.get((slot[0], slot[1]))
        points = self.points.get(slot) or []
        index = bisect_left(points, (offset, -1))
        found = [v for v in (floor, points[index - 1][1] if index else None) if v is not None]
        return max(found) if found else None

    def _after(self, slot: Slot, offset: int) -> int | None:
        points = self.points.get(slot) or []
        index = bisect_left(points, (offset, -1))
        return points[index][1] if index < len(points) else self.newest.get((slot[0], slot[1]))


def offset_versions(
    before: Iterable[TableSchema], schemas: Collection[TableSchema], uses: Iterable[WriterSchemaUse]
) -> OffsetVersions:
    """The rule's data from the versions known ``before`` this run, every known version now
    (``schemas``) and this run's change points (``uses``)."""
    result = OffsetVersions()
    for versions, newest in ((before, result.floor), (schemas, result.newest)):
        for schema in versions:
            if schema.version is not None:
                name = (schema.database, schema.table)
                newest[name] = max(newest.get(name, schema.version), schema.version)
    for schema in schemas:
        schema_id = schema.extra.get(WRITER_SCHEMA_ID)
        if schema.source == REGISTRY_SOURCE and schema_id is not None and schema.version is not None:
            result.writer[(schema.database, schema.table, int(schema_id))] = schema.version
    points: dict[Slot, dict[int, int]] = {}
    for use in uses:
        version = result.writer.get((use.database, use.table, use.schema_id))
        if version is not None:
            points.setdefault((use.database, use.table, use.topic, use.partition), {})[use.offset] = version
    for slot, found in points.items():
        running: list[tuple[int, int]] = []
        for offset, version in sorted(found.items()):
            running.append((offset, max(version, running[-1][1]) if running else version))
        result.points[slot] = running
    return result
