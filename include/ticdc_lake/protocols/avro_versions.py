"""Table versions of the ``avro`` protocol: the registry's writer schemas read with the avro parser.

The rule is schema knowledge (:mod:`ticdc_lake.schema.avro_registry`); this module gives it what
only the protocol knows: how to read a writer schema's text (``avro_confluent``) and which rows
name a table whose DDL the stream carries under its upstream name (``avro_names``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ticdc_lake.canonical import zone_info
from ticdc_lake.errors import DecodeError
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.avro_registry import WriterColumn, WriterSchemaUse, writer_versions
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema


def registry_versions(
    lookup: MemorySchemaLookup,
    uses: Iterable[WriterSchemaUse],
    resources: DecodeResources,
    zone: str,
    offset_ordered: bool = False,
) -> list[TableSchema]:
    """:func:`~ticdc_lake.schema.avro_registry.writer_versions` over the writer schemas landed in
    ``resources``, read in ``zone``, added to ``lookup`` and returned; rows that name a table
    whose DDL the stream carries (by its sanitized name, or ambiguously) give none.
    """
    from ticdc_lake.protocols.avro_confluent import parse_writer_schema  # fastavro loads only for avro
    from ticdc_lake.protocols.avro_names import UpstreamNames

    names = UpstreamNames(lookup.as_mapping().values())

    def own(use: WriterSchemaUse) -> bool:
        try:  # rows name the table as sanitized; DDL and baseline by its upstream name (avro_names)
            return names.table(use.database, use.table, "a row") is None
        except DecodeError:
            return False  # two upstream tables share the name: the decode pass quarantines the rows

    def columns(schema_id: int) -> Sequence[WriterColumn] | None:
        text = resources.writer_schemas.get(schema_id)
        if text is None:
            return None  # the decode pass quarantines its rows with the reason
        try:
            return parse_writer_schema(schema_id, text, zone_info(zone)).columns
        except ValueError:
            return None  # likewise

    schemas = lookup.as_mapping().values()
    found = writer_versions(schemas, [use for use in uses if own(use)], columns, offset_ordered)
    for schema in found:
        lookup.add(schema)
    return found
