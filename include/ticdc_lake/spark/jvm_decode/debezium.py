"""Debezium row changes decoded in the JVM by the project's own decoder (docs/jvm-decoder.md).

``ticdclake.decode.DebeziumRowDecoder`` (``include/jvm/decoder``, built by ``make jars``) reads
each landed message with Jackson's streaming parser and returns its row change with the typed
record carrier, exactly as the decode workers make it from the Python decoders' events, or NULL
where it cannot vouch for that (then the Python decoder, the specification, decodes the message).
This module hands it the run's schema versions and their image layouts (:func:`version_plan`) and
turns what it returns into the event and carrier columns of the JVM decoder contract (``contract``).
"""

from __future__ import annotations

import json
import uuid

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.schema.type_mapping import is_binary_type
from ticdc_lake.spark.arrow_decode.image_records import image_layout
from ticdc_lake.spark.jvm_decode.contract import CARRIER_COLUMNS, EVENT_COLUMNS

#: The decoder's class (``include/jvm/decoder``).
DECODER_CLASS = "ticdclake.decode.DebeziumRowDecoder"


#: TiDB types whose Debezium values the JVM decoder converts itself, with the Iceberg types it carries
#: them in: the integers and YEAR (BIGINT UNSIGNED is carried as a decimal), the non-binary text types,
#: JSON, ENUM and SET, DATE, DATETIME, TIMESTAMP, TIME, BIT(1) and, with the TiDB extension (which
#: says a text is base64 of a binary column), the binary types.
_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year"})
_TEXTS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json", "enum", "set"})
_CARRIED = {"date": "date", "datetime": "timestamp", "timestamp": "timestamptz", "time": "string"}


def decodes_version(schema: TableSchema, carried: tuple[str, ...] | None, tidb_extension: bool = True) -> bool:
    """Whether the JVM decoder takes the row changes of this version as TiCDC sends them: it has a
    layout, and every column is of a type the decoder converts (:data:`_INTEGERS`, :data:`_TEXTS`,
    :data:`_CARRIED`, BIT(1)), carried as the decoder writes it."""
    layout = image_layout(schema, carried)
    if layout is None:
        return False
    for column, kind in zip(schema.columns, layout.types, strict=True):
        mysql_type = column.mysql_type
        integer = mysql_type in _INTEGERS and not (mysql_type == "bigint" and column.unsigned)
        if integer:
            ok = kind in ("int", "long")
        elif mysql_type == "bit":
            ok = (column.length or 1) == 1 and kind == "long"  # BIT(1) is a Connect boolean
        elif is_binary_type(mysql_type):
            ok = tidb_extension and kind == "binary"
        else:
            ok = kind == ("string" if mysql_type in _TEXTS else _CARRIED.get(mysql_type))
        if not ok:
            return False
    return True


def takes_every_version(lookup: MemorySchemaLookup, options: CodecOptions) -> bool:
    """Whether the JVM decoder takes the row changes of every version the run knows (and it knows one):
    then the decode stage takes the JVM path by default (docs/jvm-decoder.md, "When it runs")."""
    versions = lookup.as_mapping()
    extension = options.enable_tidb_extension
    return bool(versions) and all(decodes_version(s, lookup.carried.get(key), extension) for key, s in versions.items())


def version_plan(lookup: MemorySchemaLookup) -> str:
    """Every schema version of the lookup, ascending per table, with the layout its images are
    carried in (``image_records.image_layout``; null where it has none), as the decoder reads it."""
    versions = []
    for (database, table, version), schema in sorted(lookup.as_mapping().items()):
        layout = image_layout(schema, lookup.carried.get((database, table, version)))
        versions.append(
            {
                "database": database,
                "table": table,
                "version": version,
                "layout": None
                if layout is None
                else {
                    "names": list(layout.names),
                    "types": list(layout.types),
                    "key": list(layout.key),
                    "fingerprint": layout.fingerprint,
                },
            }
        )
    return json.dumps({"versions": versions}, separators=(",", ":"))


def decode_debezium(
    spark: SparkSession, messages: DataFrame, lookup: MemorySchemaLookup, options: CodecOptions
) -> DataFrame | None:
    """``messages`` with the event and carrier columns (``contract``): the row change and its carrier
    where the decoder vouched for the message, NULL (``kind`` too) where the Python decoder takes it.
    None where the codec options rule the decoder out (compressed messages)."""
    if options.compression is not Compression.NONE:
        return None
    name = f"ticdc_lake_debezium_{uuid.uuid4().hex}"
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    getattr(jvm, DECODER_CLASS).register(spark._jsparkSession, name, version_plan(lookup))
    decoded = messages.withColumn("_decoded", F.call_function(name, F.col("key"), F.col("value")))
    row = F.col("_decoded")
    found = {
        "idx": F.lit(0),
        "kind": F.lit("DML"),
        "commit_ts": row["commit_ts"],
        "database": row["database"],
        "table": row["table"],
        "table_id": F.lit(None),
        "op": row["op"],
        "schema_version": row["schema_version"],
        **{name: row[name] for name, _ in CARRIER_COLUMNS},
    }
    columns = (*EVENT_COLUMNS, *CARRIER_COLUMNS)
    taken = row.isNotNull()
    return decoded.select(
        *messages.columns, *(F.when(taken, found[name]).cast(kind).alias(name) for name, kind in columns)
    )
