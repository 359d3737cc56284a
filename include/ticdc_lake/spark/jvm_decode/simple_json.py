"""Simple JSON DML decoded in the JVM, verified against the Python decoder's rules (docs/design.md, Decode).

The Python decoder (:mod:`ticdc_lake.protocols.simple_json`) is the specification. This module
decodes a message here only where Spark SQL can show that the specification gives exactly these
values; every other message falls back to it unchanged. Every check is a plain column expression
(no VARIANT, no higher-order function), so Spark code-generates the whole classification. A
message is decoded here when all of:

* its value is valid UTF-8 and its text matches :data:`MESSAGE`: one JSON object, no whitespace
  but after its closing brace, the members TiCDC's encoder writes in its order (``version`` the
  integer 1, ``database`` and ``table`` strings, ``tableID`` at most 18 digits, ``type`` INSERT,
  UPDATE or DELETE, ``commitTs``, ``buildTs``, ``schemaVersion``, ``handleKeyOnly`` only
  ``false``, ``data``, ``old``; nothing else, so no claim-check reference, no key twice), every
  string escaping only what JSON allows and no UTF-16 surrogate (Python keeps a lone one, Jackson
  does not), and every value of ``data``/``old`` a JSON string, null, or a
  ``{"location":..,"value":..}`` object of strings (a TIMESTAMP);
* ``from_json`` with a fixed schema (``data``/``old`` as ``MAP<STRING, STRING>``, exact because
  the values are strings) reads ``commitTs`` and ``schemaVersion`` (not 0) as 64-bit integers;
  ``data`` is there exactly for INSERT and UPDATE, ``old`` exactly for UPDATE and DELETE;
* its (database, table, schemaVersion) is one of the run's known table versions (at most
  :data:`MAX_TABLE_VERSIONS`, newest first; the others fall back), each row image holds exactly
  the schema's columns (in code point order, as TiCDC sends them), and every value is null or
  already in canonical form for its column (:func:`column_spec`: a regular expression and bounds;
  TIMESTAMP an object in UTC; unsupported types only null);
* as many ``{"location":`` objects are in the text as TIMESTAMP values were read as objects (a
  string holding the same text reads the same through the map).

The values are then the texts as sent (ENUM indexes and SET bitmasks named from the column's
members, TIMESTAMP as ISO-8601 UTC), which is what the specification returns for such texts. The
checks of all table versions are one ``CASE`` on the message's key, built on the driver from the
schema lookup.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ticdc_lake.canonical import INTEGER_BITS, YEAR_BOUNDS, bit_bounds, integer_bounds
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_lake.schema.type_mapping import is_binary_type
from ticdc_lake.spark.jvm_decode.contract import EVENT_COLUMNS, IMAGE_COLUMNS

log = logging.getLogger(__name__)

#: Column kinds of :func:`column_spec`; ``fallback``: any non-null value falls back to Python.
TEXT_TYPES = frozenset(
    {"char", "varchar", "var_string", "tinytext", "text", "mediumtext", "longtext", "json", "vector"}
)
#: SET columns with more members than this fall back (the bitmask must fit a signed 64-bit integer).
MAX_SET_MEMBERS = 62
#: Table versions the per-version check covers (one CASE branch each, newest versions first); the
#: messages of other versions fall back to Python.
MAX_TABLE_VERSIONS = 64

#: A JSON string: unescaped characters but quote, backslash and controls, or a JSON escape other
#: than a UTF-16 surrogate. Possessive, so long strings never backtrack.
_STR = r'"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u(?![dD][89a-fA-F])[0-9a-fA-F]{4}))*+"'
_VALUE = rf'(?:{_STR}|null|\{{"location":{_STR},"value":{_STR}\}})'
_ROW = rf"\{{(?:{_STR}:{_VALUE}(?:,{_STR}:{_VALUE})*+)?\}}"
_UINT = r"(?:0|[1-9][0-9]{0,18})"
#: The whole text of a message the JVM may decode (Java regular expression).
MESSAGE = (
    rf'^\{{"version":1,"database":{_STR},"table":{_STR}(?:,"tableID":(?:0|[1-9][0-9]{{0,17}}))?'
    rf',"type":"(?:INSERT|UPDATE|DELETE)","commitTs":{_UINT}(?:,"buildTs":-?(?:0|[1-9][0-9]*+))?'
    rf',"schemaVersion":{_UINT}(?:,"handleKeyOnly":false)?(?:,"data":{_ROW})?(?:,"old":{_ROW})?\}}[ \t\n\r]*+\z'
)
ENVELOPE = (
    "database STRING, table STRING, tableID BIGINT, type STRING, commitTs BIGINT, schemaVersion BIGINT, "
    "data MAP<STRING, STRING>, old MAP<STRING, STRING>"
)
#: A TIMESTAMP object as ``from_json`` writes it back, per the server zone's names of UTC.
_TS_OBJECT = r'^\{{"location":"(?:{names})","value":"'
_OBJECT_MARK = ':{"location":'

#: Patterns end in ``\z``: Java's ``$`` also matches before a final line terminator.
_INTEGER = r"^(0|-?[1-9][0-9]{0,19})\z"
_UNSIGNED = r"^(0|[1-9][0-9]{0,17})\z"
#: Finite by construction: at most 308 integer digits in fixed notation (Go writes extreme floats
#: that way), or a short mantissa with a two-digit exponent.
_FLOAT = r"^-?([0-9]{1,308}(\.[0-9]+)?|[0-9]{1,30}(\.[0-9]{1,30})?[eE][-+]?[0-9]{1,2})\z"
_DECIMAL = r"^-?[0-9]+(\.[0-9]+)?\z"
#: 309 integer digits: finite when the first 17 are at most DBL_MAX's (what Go writes for it).
_FLOAT_309 = r"^-?[0-9]{309}(\.[0-9]+)?\z"
_MAX_DOUBLE_DIGITS = "17976931348623157"
#: Standard padded base64 whose unused padding bits are zero (the only form returned as sent).
_BASE64 = r"^([A-Za-z0-9+/]{4})*+([A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?\z"
_DATE = r"[0-9]{4}-(0[0-9]|1[0-2])-([0-2][0-9]|3[01])"
_CLOCK = r"[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
_DATETIME = _DATE + r" ([01][0-9]|2[0-3]):" + _CLOCK
_TIME = r"^-?[0-9]{2,3}:" + _CLOCK + r"\z"
#: TIMESTAMP wall time of a real date (year 0001 or later, the calendar checked apart), read in UTC.
_TIMESTAMP = r"(?!0000)(" + _DATETIME + ")"

Spec = tuple[str, Decimal | None, Decimal | None, list[str] | None]


def column_spec(column: ColumnSchema) -> Spec:
    """(kind, low, high, elements) of one column, in the order the Python decoder picks its converter."""
    mysql_type = column.mysql_type
    bounds: tuple[int, int] | None = None
    if mysql_type in INTEGER_BITS:
        bounds = integer_bounds(mysql_type, column.unsigned)
    elif mysql_type == "year":
        bounds = YEAR_BOUNDS
    elif mysql_type == "bit":
        bounds = bit_bounds(column.length)
    if bounds is not None:
        return "int", Decimal(bounds[0]), Decimal(bounds[1]), None
    if is_binary_type(mysql_type):
        return "binary", None, None, None
    if mysql_type in TEXT_TYPES:
        return "text", None, None, None
    simple = {"float": "float", "double": "float", "decimal": "decimal", "numeric": "decimal"}
    if mysql_type in simple:
        return simple[mysql_type], None, None, None
    if mysql_type in ("date", "datetime", "time", "timestamp"):
        return mysql_type, None, None, None
    if mysql_type == "enum" and column.elements is not None:
        return "enum", None, None, list(column.elements)
    if mysql_type == "set" and column.elements is not None and len(column.elements) <= MAX_SET_MEMBERS:
        return "set", None, None, list(column.elements)
    return "fallback", None, None, None


def table_versions(lookup: MemorySchemaLookup) -> list[tuple[str, str, int, TableSchema]]:
    """The table versions the check covers: newest version of each table first, at most
    :data:`MAX_TABLE_VERSIONS` (logged when some are left to Python)."""
    known = [(d, t, v, s) for (d, t, v), s in lookup.as_mapping().items() if 1 <= v < 2**63]
    newest: dict[tuple[str, str], int] = {}
    for database, table, version, _ in known:
        newest[(database, table)] = max(version, newest.get((database, table), 0))
    known.sort(key=lambda k: (k[2] != newest[(k[0], k[1])], -k[2], k[0], k[1]))
    if len(known) > MAX_TABLE_VERSIONS:
        log.info(
            "decode: %d table versions known; the JVM checks the first %d (newest of each table first), "
            "messages of the other %d decode in Python",
            len(known),
            MAX_TABLE_VERSIONS,
            len(known) - MAX_TABLE_VERSIONS,
        )
    return known[:MAX_TABLE_VERSIONS]


def decode_simple_json(
    spark: SparkSession, messages: DataFrame, lookup: MemorySchemaLookup, codec: CodecOptions
) -> DataFrame | None:
    """``messages`` with the event and image columns (``contract``) set where decoded here, NULL where
    the message falls back; None: all fall back."""
    del spark  # the checks are literals of one expression; no frame of specs is needed
    if codec.compression is not Compression.NONE:
        return None
    versions = table_versions(lookup)
    if not versions:
        return None
    utc_names = ["UTC", *(("", "Local") if codec.server_time_zone == "UTC" else ())]
    text = F.when(F.expr("value IS NOT NULL AND is_valid_utf8(value)"), F.col("value").cast("string"))
    parsed = messages.withColumn("_text", text).withColumn(
        "_doc", F.when(F.col("_text").rlike(MESSAGE), F.from_json(F.col("_text"), ENVELOPE))
    )
    doc = F.col("_doc")
    data, old = doc["data"], doc["old"]
    kind = doc["type"]
    branch = reduce(
        lambda acc, item: acc.when(
            (doc["database"] == item[1][0]) & (doc["table"] == item[1][1]) & (doc["schemaVersion"] == item[1][2]),
            F.lit(item[0]),
        ),
        enumerate(versions[1:], start=1),
        F.when(
            (doc["database"] == versions[0][0])
            & (doc["table"] == versions[0][1])
            & (doc["schemaVersion"] == versions[0][2]),
            F.lit(0),
        ),
    )
    keyed = parsed.withColumn("_branch", branch)
    b = F.col("_branch")
    plans = [_VersionPlan(schema, utc_names) for *_, schema in versions]
    objects = (F.length("_text") - F.length(F.replace(F.col("_text"), F.lit(_OBJECT_MARK), F.lit("")))) / len(
        _OBJECT_MARK
    )
    checks = _by_branch(b, [p.ok(data, old, objects) for p in plans], F.lit(False))
    op = F.when(kind == "INSERT", "I").when(kind == "UPDATE", "U").when(kind == "DELETE", "D")
    shape = (
        F.when(op == "I", data.isNotNull() & old.isNull())
        .when(op == "U", data.isNotNull() & old.isNotNull())
        .when(op == "D", data.isNull() & old.isNotNull())
    )
    ok = (
        doc.isNotNull()
        & doc["database"].isNotNull()
        & doc["table"].isNotNull()
        & doc["commitTs"].isNotNull()
        & (doc["schemaVersion"] > 0)
        & shape
        & checks
    )
    event = {
        "idx": F.lit(0),
        "kind": F.lit("DML"),
        "commit_ts": doc["commitTs"],
        "database": doc["database"],
        "table": doc["table"],
        "table_id": doc["tableID"],
        "op": op,
        "schema_version": doc["schemaVersion"],
        "before": _by_branch(b, [p.texts(old) for p in plans], old),
        "after": _by_branch(b, [p.texts(data) for p in plans], data),
    }
    taken = F.coalesce(ok, F.lit(False))
    decoded: DataFrame = keyed.select(
        *messages.columns,
        *(F.when(taken, event[name]).cast(kind).alias(name) for name, kind in (*EVENT_COLUMNS, *IMAGE_COLUMNS)),
    )
    return decoded


def _by_branch(branch: Column, values: list[Column], otherwise: Column) -> Column:
    """``CASE branch WHEN 0 THEN values[0] ...``; ``otherwise`` when every value is it (no CASE)."""
    if all(v is otherwise for v in values):
        return otherwise
    return reduce(
        lambda acc, item: acc.when(branch == item[0], item[1]),
        enumerate(values[1:], start=1),
        F.when(branch == 0, values[0]),
    ).otherwise(otherwise)


class _VersionPlan:
    """The checks and canonical texts of one table version's row images."""

    def __init__(self, schema: TableSchema, utc_names: list[str]) -> None:
        self.columns = sorted(schema.columns, key=lambda c: c.name)
        self.specs = [column_spec(c) for c in self.columns]
        self.names = F.array(*(F.lit(c.name) for c in self.columns))
        self.ts_pattern = _TS_OBJECT.format(names="|".join(utc_names)) + _TIMESTAMP + r'"\}\z'
        self.renamed = any(s[0] in ("enum", "set", "timestamp") for s in self.specs)

    def ok(self, data: Column, old: Column, objects: Column) -> Column:
        ts = [i for i, s in enumerate(self.specs) if s[0] == "timestamp"]
        read_objects = F.lit(0)
        for image in (data, old):
            for i in ts:
                read_objects = read_objects + F.coalesce(_at(image, i).startswith("{").cast("int"), F.lit(0))
        return self._image_ok(data) & self._image_ok(old) & (read_objects == objects)

    def _image_ok(self, image: Column) -> Column:
        values = [_at(image, i).isNull() | self._value_ok(_at(image, i), s) for i, s in enumerate(self.specs)]
        return image.isNull() | _all([F.map_keys(image) == self.names, *values])

    def _value_ok(self, v: Column, spec: Spec) -> Column:
        """The existing rule of each kind (regular expression and bounds) as a plain column."""
        kind, low, high, elements = spec
        digits = F.regexp_extract(v, "^-?([0-9]+)", 1)
        if kind == "text":
            return F.lit(True)
        if kind == "int":
            return v.rlike(_INTEGER) & v.try_cast("decimal(20,0)").between(F.lit(low), F.lit(high))
        if kind == "float":
            return v.rlike(_FLOAT) | (v.rlike(_FLOAT_309) & (F.substring(digits, 1, 17) <= _MAX_DOUBLE_DIGITS))
        if kind == "timestamp":
            return v.rlike(self.ts_pattern) & F.try_to_date(F.substring(_ts_value(v), 1, 10), "yyyy-MM-dd").isNotNull()
        if kind == "time":
            return v.rlike(_TIME) & (digits.try_cast("int") <= 838)
        if kind == "enum" and elements is not None:
            return v.rlike(_UNSIGNED) & (v.try_cast("bigint") <= len(elements))
        if kind == "set" and elements is not None:
            return v.rlike(_UNSIGNED) & (v.try_cast("bigint") < F.lit(2 ** len(elements)))
        pattern = _PATTERNS.get(kind)
        return v.rlike(pattern) if pattern is not None else F.lit(False)

    def texts(self, image: Column) -> Column:
        """The image with its canonical texts (the values as sent but for ENUM, SET and TIMESTAMP)."""
        if not self.renamed:
            return image
        values = (self._text(_at(image, i), s) for i, s in enumerate(self.specs))
        return F.when(image.isNotNull(), F.map_from_arrays(self.names, F.array(*values)))

    @staticmethod
    def _text(v: Column, spec: Spec) -> Column:
        kind, _, _, elements = spec
        if kind == "timestamp":
            value = _ts_value(v)
            return F.concat(F.substring(value, 1, 10), F.lit("T"), F.substring(value, 12, 64), F.lit("Z"))
        if kind == "enum" and elements is not None:
            members = F.array(*(F.lit(e) for e in elements))
            return F.when(v == "0", F.lit("")).otherwise(F.try_element_at(members, v.try_cast("int")))
        if kind == "set" and elements is not None:
            mask = v.try_cast("bigint")
            bits = (F.when((F.shiftright(mask, i) % 2) == 1, F.lit(e)) for i, e in enumerate(elements))
            return F.when(v.isNotNull(), F.concat_ws(",", *bits))
        return v


#: Kinds whose rule is one regular expression.
_PATTERNS = {
    "decimal": _DECIMAL,
    "binary": _BASE64,
    "date": "^" + _DATE + r"\z",
    "datetime": "^" + _DATETIME + r"\z",
}


def _ts_value(v: Column) -> Column:
    return F.regexp_extract(v, '"value":"([^"]*)"', 1)


def _all(checks: list[Column]) -> Column:
    """Every check true, as ``CASE WHEN NOT c1 THEN false ... ELSE true END``: Spark generates each
    branch of a CASE as a method of its own where an AND chain is one method, which the JIT leaves
    interpreted beyond 8,000 bytes of bytecode (measured 1.4 times the CPU for this check)."""
    failed = [~F.coalesce(c, F.lit(False)) for c in checks]  # a null check fails, as in an AND chain
    if not failed:
        return F.lit(True)
    return reduce(lambda acc, f: acc.when(f, F.lit(False)), failed[1:], F.when(failed[0], F.lit(False))).otherwise(
        F.lit(True)
    )


def _at(image: Column, i: int) -> Column:
    """The (i+1)-th value of a row image whose keys are the schema's names in order."""
    return F.element_at(F.map_values(image), i + 1)
