"""TiCDC's large-message handling seen from the consumer: claim-check and handle-key-only.

When a row message is larger than ``max-message-bytes``, a changefeed with
``large-message-handle-option`` set sends a small message instead (docs/protocols.md, "Large messages"):

* ``claim-check``: TiCDC first writes the whole original message to ``claim-check-storage-uri`` as
  ``<uuid>.json`` (``pkg/sink/kafka/claimcheck/claim_check.go``, ``WriteMessage``): the JSON of
  ``common.ClaimCheckMessage`` ``{"key": base64 | null, "value": base64}``
  (``pkg/sink/codec/common/message.go``), or the raw value bytes with ``claim-check-raw-value=true``
  (not allowed for Open, ``pkg/config/large_message.go``). The value is already compressed with
  ``large-message-handle-compression``. The Kafka message then names the object's full URI:
  Simple ``claimCheckLocation``, Open key ``ccl``, Canal-JSON ``_tidb.claimCheckLocation``. Like
  TiCDC's own decoders (``simple/decoder.go`` ``assembleClaimCheckRowChangedEvent``,
  ``open/open_protocol_decoder.go`` ``assembleEventFromClaimCheckStorage``,
  ``canal/canal_json_decoder.go``) the consumer keeps only the file name and reads it from its own
  configured storage, ``codec.claim_check_storage_uri``. :class:`ClaimCheckReader` does that;
  each decoder then decodes the stored message with itself and :func:`adopt` checks the result.
* ``handle-key-only``: only the handle-key columns are sent, flagged (Simple ``handleKeyOnly``,
  Open key ``ohk``, Canal-JSON ``_tidb.onlyHandleKey``). TiCDC's consumer reads the row from the
  upstream TiDB at the commit ts (``common.MustSnapshotQuery``); this library has no upstream
  connection, so such a message is a :func:`handle_key_only_error` (quarantined).

Debezium and Avro support neither (an oversize message fails the changefeed).
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, Op, RawMessage, SourcePosition

_RAW_HINT = "if the changefeed sets claim-check-raw-value=true, set the pipeline's codec.claim_check_raw_value: true"


@dataclass(frozen=True, slots=True)
class ClaimCheckObject:
    """One original Kafka message as TiCDC stored it."""

    #: Where it was read from (for messages).
    address: str
    key: bytes | None
    value: bytes


class ClaimCheckReader:
    """Reads claim-check objects from ``codec.claim_check_storage_uri`` with ``pyarrow.fs``.

    Picklable: the filesystem is opened on first use in each process (Spark workers), never
    pickled; ``s3://`` settings come from that process's environment (:mod:`ticdc_lake.object_store`).
    A decoder that never meets a claim-check message never opens it.
    """

    def __init__(self, protocol: str, options: CodecOptions) -> None:
        self.protocol = protocol
        self.storage_uri = options.claim_check_storage_uri
        self.raw_value = options.claim_check_raw_value
        self._filesystem: Any = None
        self._base = ""

    def __getstate__(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "storage_uri": self.storage_uri, "raw_value": self.raw_value}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.protocol = state["protocol"]
        self.storage_uri = state["storage_uri"]
        self.raw_value = state["raw_value"]
        self._filesystem = None
        self._base = ""

    def fetch(self, location: object, where: str, field: str) -> ClaimCheckObject:
        """The message stored for ``location`` (the reference in ``field`` of ``where``)."""
        if not isinstance(location, str) or not location:
            raise DecodeError(
                self.protocol, f"field '{field}' of {where} must be a non-empty claim-check location, got {location!r}"
            )
        if self.storage_uri is None:
            raise DecodeError(
                self.protocol,
                f"{where} is a claim-check reference ({field} {location!r}), but codec.claim_check_storage_uri is "
                "not set: set it to where the changefeed's claim-check-storage-uri can be read (file:///abs/path "
                "or s3://bucket/prefix) so the original message can be fetched",
            )
        name = location.rsplit("/", 1)[-1]
        if name in ("", ".", "..") or any(ord(c) < 0x20 or c in "\\\x7f" for c in name):
            raise DecodeError(
                self.protocol, f"claim-check location {location!r} in field '{field}' of {where} names no file"
            )
        address = f"{self.storage_uri.rstrip('/')}/{name}"
        data = self._read(name, address, location, where)
        return self._parse(data, address)

    def _read(self, name: str, address: str, location: str, where: str) -> bytes:
        filesystem, base = self._open()
        try:
            with filesystem.open_input_stream(f"{base}/{name}") as stream:
                data: bytes = stream.read()
                return data
        except FileNotFoundError:
            raise DecodeError(
                self.protocol,
                f"claim-check object {address} does not exist (location {location!r} of {where}); check that "
                "codec.claim_check_storage_uri names the changefeed's claim-check-storage-uri and that no "
                "lifecycle rule deleted the object",
            ) from None
        except OSError as exc:
            raise DecodeError(
                self.protocol,
                f"claim-check object {address} (location {location!r} of {where}) cannot be read: {exc}; check "
                "codec.claim_check_storage_uri and the storage credentials (AWS_* environment variables for s3://, "
                "docs/object-storage.md)",
            ) from None

    def _open(self) -> tuple[Any, str]:
        if self._filesystem is None:
            from ticdc_lake.object_store import open_uri

            assert self.storage_uri is not None
            try:
                self._filesystem, path = open_uri(self.storage_uri)
            except (ValueError, OSError) as exc:
                raise DecodeError(
                    self.protocol,
                    f"codec.claim_check_storage_uri {self.storage_uri!r} cannot be opened: {exc}; use "
                    "file:///abs/path, /abs/path or s3://bucket/prefix",
                ) from None
            self._base = path.rstrip("/")
        return self._filesystem, self._base

    def _parse(self, data: bytes, address: str) -> ClaimCheckObject:
        if self.raw_value:
            if data.startswith(b'{"key":'):
                raise DecodeError(
                    self.protocol,
                    f'claim-check object {address} holds TiCDC\'s {{"key", "value"}} JSON, but '
                    "codec.claim_check_raw_value is true; set it to false to match the changefeed's "
                    "claim-check-raw-value",
                )
            return ClaimCheckObject(address, None, data)
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise DecodeError(
                self.protocol,
                f'claim-check object {address} is not TiCDC\'s {{"key", "value"}} JSON ({exc}); {_RAW_HINT}',
            ) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("value"), str):
            raise DecodeError(
                self.protocol,
                f'claim-check object {address} is not TiCDC\'s {{"key", "value"}} JSON (no base64 string '
                f"'value'); {_RAW_HINT}",
            )
        key = doc.get("key")
        if key is not None and not isinstance(key, str):
            raise DecodeError(self.protocol, f"field 'key' of claim-check object {address} must be base64 or null")
        return ClaimCheckObject(
            address,
            None if key is None else _base64(key, "key", address, self.protocol),
            _base64(doc["value"], "value", address, self.protocol),
        )


def _base64(text: str, field: str, address: str, protocol: str) -> bytes:
    try:
        return binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise DecodeError(
            protocol, f"field '{field}' of claim-check object {address} is not standard base64 ({exc})"
        ) from None


@dataclass(frozen=True, slots=True)
class Reference:
    """A claim-check reference as the Kafka message states it."""

    location: object
    #: The field that holds it (``claimCheckLocation``, ``ccl``, ``_tidb.claimCheckLocation``).
    field: str
    #: The message (and event) it is in, for error messages.
    where: str
    position: SourcePosition
    database: str
    table: str
    commit_ts: int
    #: The operation, where the reference states it (Simple, Canal-JSON).
    op: Op | None = None


def resolve(
    reader: ClaimCheckReader,
    decode_stored: Callable[[RawMessage], list[ChangeEvent]],
    message: RawMessage,
    reference: Reference,
) -> list[ChangeEvent]:
    """Fetch the object ``reference`` names, decode it with ``decode_stored`` and :func:`adopt` the result.

    ``decode_stored`` is the decoder's own decode that refuses further references. Its errors are
    prefixed with the object's address.
    """
    stored = reader.fetch(reference.location, reference.where, reference.field)
    inner = replace(message, key=stored.key, value=stored.value)
    try:
        events = decode_stored(inner)
    except DecodeError as exc:
        raise DecodeError(reader.protocol, f"claim-check object {stored.address}: {exc.reason}") from None
    return adopt(events, stored, reference, reader.protocol)


def adopt(
    events: list[ChangeEvent], stored: ClaimCheckObject, reference: Reference, protocol: str
) -> list[ChangeEvent]:
    """The events decoded from ``stored``, checked against ``reference`` and placed at its position.

    The object must hold one row change of the referenced table and commit ts (and operation, when
    the reference states it): anything else means the storage URI points at another changefeed.
    """
    event = events[0] if len(events) == 1 else None
    op = reference.op
    found = None
    if event is not None and event.kind is EventKind.DML:
        found = (event.database, event.table, event.commit_ts, event.op if op is not None else None)
    if event is None or found != (reference.database, reference.table, reference.commit_ts, op):
        wanted = _row_change(op, reference.database, reference.table, reference.commit_ts)
        raise DecodeError(
            protocol,
            f"claim-check object {stored.address} holds {_describe(events)}, but the message refers to {wanted}; "
            "codec.claim_check_storage_uri must name this changefeed's claim-check-storage-uri",
        )
    event.position = reference.position
    event.claim_check = True
    return [event]


def _describe(events: list[ChangeEvent]) -> str:
    if len(events) != 1:
        return f"{len(events)} events"
    event = events[0]
    if event.kind is not EventKind.DML:
        return f"a {event.kind.value} event"
    return _row_change(event.op, event.database, event.table, event.commit_ts)


def _row_change(op: Op | None, database: str | None, table: str | None, commit_ts: int) -> str:
    what = "a row change" if op is None else ("a DELETE" if op is Op.DELETE else f"an {op.name}")
    return f"{what} of {database}.{table} at commit ts {commit_ts}"


def nested_reference_error(protocol: str, where: str) -> DecodeError:
    """A claim-check object that is itself a reference: TiCDC stores only original messages."""
    return DecodeError(
        protocol,
        f"{where} is itself a claim-check reference; TiCDC stores only original messages there, so this "
        "object was not written by the changefeed",
    )


def handle_key_only_error(protocol: str, database: str, table: str, commit_ts: int, marker: str) -> DecodeError:
    """The reason a handle-key-only message is quarantined; ``marker`` names the flag and where it is."""
    return DecodeError(
        protocol,
        f"handle-key-only message for {database}.{table} at commit ts {commit_ts}: the full row must be read "
        "from the upstream TiDB, which is not configured; TiCDC sent only the handle-key columns "
        f"({marker}) because the row was larger than max-message-bytes. Set the changefeed's "
        "large-message-handle-option to claim-check (and the pipeline's codec.claim_check_storage_uri) or raise "
        "its max-message-bytes; this row must be recovered from TiDB at that commit ts",
    )
