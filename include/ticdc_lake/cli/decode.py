"""``ticdc-lake decode``: decode raw Kafka messages by hand, the way the decode stage does.

Input: JSON lines, one Kafka message each::

    {"topic": "t", "partition": 0, "offset": 42, "key": <base64 or null>, "value": <base64 or null>,
     "timestamp": <ms, optional>, "headers": [[name, <base64 or null>], ...] or {name: ...} (optional)}

Other fields are ignored, blank lines skipped. The messages are decoded with the decoder the
Spark decode stage uses (:func:`ticdc_lake.protocols.registry.decoder_for` with the codec options
given as ``--option key=value``) in the same two passes: first the messages that may carry table
schemas (DDL, BOOTSTRAP) are decoded to learn them, then every message is decoded against those
schemas and the ones from ``--schema-history`` (``TableSchema`` JSON lines, as in the
``schema_history`` table's ``table_schema`` column).

Output: one JSON line per event on stdout (every :class:`ChangeEvent` field; row images as
objects, table schemas as their JSON). A line that cannot be decoded gives a JSON error line on
stderr (line number, topic, partition, offset, reason); the others are still printed. Exit code
0, 1 when a line could not be decoded, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import binascii
import dataclasses
import json
import sys
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from ticdc_lake.config import CodecOptions, Protocol
from ticdc_lake.errors import ConfigError, DecodeError
from ticdc_lake.events import ChangeEvent, EventFacts, RawMessage
from ticdc_lake.landing.layout import writer_schema_id
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_scan import prepared_lookup
from ticdc_lake.schema.table_schema import TableSchema

EXIT_UNDECODABLE = 1
EXIT_USAGE = 2


class InputLineError(ValueError):
    """One input line is not a raw message (not JSON, a field missing or of the wrong type)."""


def add_parser(sub: Any) -> None:
    """Register ``decode`` on the ``ticdc-lake`` subcommand parsers."""
    parser = sub.add_parser(
        "decode",
        help="decode raw Kafka messages (JSON lines) into normalized events, as the decode stage does",
        description="Decode raw Kafka messages, one JSON line each ({topic, partition, offset, key, value} with "
        "key and value base64 or null; timestamp and headers optional), with the decode stage's decoder, and "
        "print one JSON line per event. Undecodable lines are reported on stderr and the exit code is 1.",
    )
    parser.add_argument("--protocol", required=True, choices=[p.value for p in Protocol], help="the pipeline protocol")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a codec option, as under 'codec:' in the pipeline file (compression=snappy, "
        "server_time_zone=Asia/Shanghai, enable_tidb_extension=false, claim_check_storage_uri=file:///...)",
    )
    parser.add_argument("--schema-history", default=None, metavar="FILE", help="known table schemas, JSON lines")
    parser.add_argument(
        "--writer-schemas",
        default=None,
        metavar="DIR",
        help="avro: a folder of writer schemas named <registry id>.json, as the land task stores them "
        "(<landing_uri>/<pipeline>/schemas/registry)",
    )
    parser.add_argument("file", metavar="FILE", help="raw messages as JSON lines, or - for stdin")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``decode`` command: the exit code."""
    try:
        options = codec_options(args.option)
        lookup = MemorySchemaLookup(read_schema_history(Path(args.schema_history)) if args.schema_history else ())
        resources = DecodeResources(read_writer_schemas(Path(args.writer_schemas)) if args.writer_schemas else {})
        decoder = decoder_for(args.protocol, options, resources)
        lines = _read_lines(args.file)
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return decode_lines(decoder, lines, lookup, sys.stdout, sys.stderr)


def codec_options(pairs: Iterable[str]) -> CodecOptions:
    """``CodecOptions`` from ``key=value`` pairs (``-`` in keys reads as ``_``); ConfigError naming the pair."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option {pair!r}: expected KEY=VALUE, e.g. --option compression=snappy")
        values[key.strip().replace("-", "_")] = value
    try:
        return CodecOptions.model_validate(values)
    except ValidationError as exc:
        known = ", ".join(CodecOptions.model_fields)
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"])
            reason = (
                f"unknown codec option (known: {known})"
                if error["type"] == "extra_forbidden"
                else error["msg"].removeprefix("Value error, ")
            )
            problems.append(f"--option {key}: {reason}")
        raise ConfigError("; ".join(problems)) from None


def read_writer_schemas(folder: Path) -> dict[int, str]:
    """Writer schemas by registry id from ``<id>.json`` files; ConfigError when ``folder`` is no folder."""
    if not folder.is_dir():
        raise ConfigError(
            f"--writer-schemas {folder}: not a folder; pass the land task's <landing_uri>/<pipeline>/schemas/registry"
        )
    schemas = {}
    for path in sorted(folder.iterdir()):
        schema_id = writer_schema_id(path.name)
        if schema_id is not None and path.is_file():
            schemas[schema_id] = path.read_text(encoding="utf-8")
    return schemas


def read_schema_history(path: Path) -> Iterator[TableSchema]:
    """``TableSchema`` JSON lines; ConfigError naming the file and line."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield TableSchema.from_json(line)
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"{path}:{number}: not a table schema JSON line ({type(exc).__name__}: {exc}); "
                    "--schema-history takes the table_schema column of ticdc_system.schema_history, one per line"
                ) from None


def decode_lines(decoder: Decoder, lines: Iterable[str], known: MemorySchemaLookup, out: TextIO, err: TextIO) -> int:
    """Decode raw-message JSON lines into event lines on ``out``; errors on ``err``. The exit code."""
    parsed: list[tuple[int, RawMessage | InputLineError]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed.append((number, parse_raw_message(line)))
        except InputLineError as exc:
            parsed.append((number, exc))
    messages = [message for _, message in parsed if isinstance(message, RawMessage)]
    # Copy the known schemas, then add what the messages announce, with their DDL folded in order.
    lookup = prepared_lookup(decoder, messages, MemorySchemaLookup(known.as_mapping().values()))
    failed = False
    for number, message in parsed:
        if isinstance(message, InputLineError):
            failed = True
            _write(err, {"line": number, "error": f"not a raw message: {message}"})
            continue
        try:
            events = decoder.read(message, lookup)
        except DecodeError as exc:
            failed = True
            _write(err, _error(number, message, str(exc)))
            continue
        except Exception as exc:  # a decoder bug: reported like the decode stage quarantines it
            failed = True
            _write(err, _error(number, message, f"{decoder.protocol}: unexpected {type(exc).__name__}: {exc}"))
            continue
        for event in events:
            _write(out, event_json(event))
    return EXIT_UNDECODABLE if failed else 0


def parse_raw_message(line: str) -> RawMessage:
    """One input JSON line as a :class:`RawMessage`; InputLineError naming the field."""
    try:
        doc = json.loads(line)
    except ValueError as exc:
        raise InputLineError(f"invalid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise InputLineError("expected a JSON object with topic, partition, offset, key and value")
    topic = doc.get("topic")
    if not isinstance(topic, str):
        raise InputLineError(f"'topic' must be a string, got {topic!r}")
    return RawMessage(
        topic=topic,
        partition=_integer(doc, "partition", required=True),
        offset=_integer(doc, "offset", required=True),
        timestamp_ms=_integer(doc, "timestamp", required=False),
        key=_bytes(doc.get("key"), "key"),
        value=_bytes(doc.get("value"), "value"),
        headers=_headers(doc.get("headers")),
    )


def event_json(event: ChangeEvent) -> dict[str, Any]:
    """Every field of ``event`` as JSON values: enums by value, table schemas as their JSON, and of
    the protocol facts (``facts``) only those the message set (not None, not false), so a plain row
    prints ``"facts": {}``."""
    result: dict[str, Any] = {}
    for item in dataclasses.fields(event):
        value = getattr(event, item.name)
        if isinstance(value, TableSchema):
            value = json.loads(value.to_json())
        elif isinstance(value, Enum):
            value = value.value
        elif isinstance(value, EventFacts):
            value = {k: v for k, v in dataclasses.asdict(value).items() if v is not None and v is not False}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        result[item.name] = value
    return result


def _integer(doc: dict[str, Any], field: str, *, required: bool) -> int:
    value = doc.get(field)
    if value is None and not required:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputLineError(f"'{field}' must be a non-negative integer, got {value!r}")
    return value


def _bytes(value: object, field: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputLineError(f"'{field}' must be base64 text or null, got {value!r}")
    try:
        return binascii.a2b_base64(value.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise InputLineError(f"'{field}' is not standard base64 ({exc})") from None


def _headers(value: object) -> tuple[tuple[str, bytes | None], ...]:
    if value is None:
        return ()
    pairs = list(value.items()) if isinstance(value, dict) else value
    if not isinstance(pairs, list) or not all(
        isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[0], str) for pair in pairs
    ):
        raise InputLineError("'headers' must be [[name, base64 or null], ...] or {name: base64 or null}")
    return tuple((name, _bytes(data, f"headers.{name}")) for name, data in pairs)


def _error(number: int, message: RawMessage, reason: str) -> dict[str, Any]:
    return {
        "line": number,
        "topic": message.topic,
        "partition": message.partition,
        "offset": message.offset,
        "error": reason,
    }


def _write(stream: TextIO, doc: dict[str, Any]) -> None:
    stream.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")


def _read_lines(file: str) -> list[str]:
    if file == "-":
        return sys.stdin.readlines()
    with open(file, encoding="utf-8") as handle:
        return handle.readlines()
