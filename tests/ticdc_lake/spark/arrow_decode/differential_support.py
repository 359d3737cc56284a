"""Both decode paths of a protocol over the same messages, compared row by row (``test_debezium_differential``,
``test_simple_json_differential`` through :class:`Paths`).

The reference is the Python decoder alone, as the decode worker ran it before the vector path:
``decoder.read`` per message in order, its events made Arrow rows by ``events_to_arrow``, a
:class:`DecodeError` (or any other exception, as the worker words it) a quarantine reason. The
other side is what the worker does now: the vector decoder (:attr:`Paths.vector`) over the whole batch, then
the Python decoder on the messages it did not take, in their order, with the same lookup. Both
sides start from their own deep copy of the lookup (binding with ``infer_missing`` adds to it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import cramjam

from ticdc_lake.config import CodecOptions, Compression, Protocol
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, RawMessage
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.spark.arrow_decode.debezium_batch import DebeziumVectorDecoder
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA, events_to_arrow

PIPELINE = "dbz-diff"
BATCH = "000000000042"
RUN = "run-diff"
TOPIC = "dbz-diff"

Row = dict[str, Any]


@dataclass(frozen=True)
class Paths:
    """The two decode paths of one protocol: its Python decoder and its vector decoder."""

    protocol: Protocol
    vector: Callable[[CodecOptions, str, str], Any]
    #: Whether the worker writes the protocol's image keys in code point order (``decode_arrow.sorts_images``).
    sort_images: bool = False
    #: What the Python decoder is given beyond the options (avro: the landed writer schemas); the
    #: ``vector`` callable is given its own.
    resources: DecodeResources | None = None


DEBEZIUM = Paths(Protocol.DEBEZIUM, DebeziumVectorDecoder)


@dataclass(frozen=True)
class Outcome:
    """What one message decoded to: its ``change_events`` rows, or the quarantine reason."""

    rows: tuple[Row, ...] = ()
    reason: str | None = None


@dataclass(frozen=True)
class Compared:
    """The result of :func:`assert_same`: which messages the vector path took, and the reference."""

    taken: frozenset[int]
    reference: tuple[Outcome, ...]


def statuses(outcomes: Sequence[Outcome]) -> list[str | None]:
    """Each message's ``status`` (of its first row), None where it is quarantined."""
    return [o.rows[0]["status"] if o.rows else None for o in outcomes]


def raw(values: Sequence[tuple[bytes | None, bytes | None]], *, partitions: int = 1) -> list[RawMessage]:
    """(key, value) pairs as landed messages, dealt over ``partitions`` partitions of :data:`TOPIC` in
    turn (offsets 0, 1, 2, … in each)."""
    return [
        RawMessage(TOPIC, n % partitions, n // partitions, 1_700_000_000_000 + n, key, value)
        for n, (key, value) in enumerate(values)
    ]


#: (sent, configured) compressions every differential test runs: matching, sent but not configured,
#: configured but not sent. The vector decoders take nothing from a compressed pipeline.
COMPRESSION_PAIRS = [
    (Compression.SNAPPY, Compression.SNAPPY),
    (Compression.LZ4, Compression.LZ4),
    (Compression.SNAPPY, Compression.NONE),
    (Compression.NONE, Compression.LZ4),
]


def compress(data: bytes | None, compression: Compression) -> bytes | None:
    """``data`` as TiCDC's ``large-message-handle-compression`` sends it (snappy block, LZ4 frame)."""
    if data is None or compression is Compression.NONE:
        return data
    if compression is Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    return bytes(cramjam.lz4.compress(data))


def _outcomes(events: Sequence[list[ChangeEvent] | str], paths: Paths) -> list[Outcome]:
    """Per message: its events as ``events_to_arrow`` rows (one batch for all), or its reason."""
    flat = [e for item in events if not isinstance(item, str) for e in item]
    rows = events_to_arrow(PIPELINE, BATCH, RUN, flat, sort_images=paths.sort_images).to_pylist()
    outcomes: list[Outcome] = []
    start = 0
    for item in events:
        if isinstance(item, str):
            outcomes.append(Outcome(reason=item))
            continue
        outcomes.append(Outcome(rows=tuple(rows[start : start + len(item)])))
        start += len(item)
    return outcomes


def _python_read(
    options: CodecOptions, messages: Sequence[RawMessage], lookup: MemorySchemaLookup, paths: Paths
) -> list[list[ChangeEvent] | str]:
    """``decoder.read`` per message in order, each failure worded as ``decode_worker`` quarantines it."""
    decoder = decoder_for(paths.protocol, options, paths.resources)
    results: list[list[ChangeEvent] | str] = []
    for message in messages:
        try:
            results.append(decoder.read(message, lookup))
        except DecodeError as exc:
            results.append(str(exc))
        except Exception as exc:  # as decode_worker words a decoder bug
            results.append(f"{paths.protocol.value}: unexpected {type(exc).__name__} while decoding: {exc}")
    return results


def reference(
    options: CodecOptions, messages: Sequence[RawMessage], lookup: MemorySchemaLookup, paths: Paths = DEBEZIUM
) -> list[Outcome]:
    """The specification: the Python decoder alone, on a copy of ``lookup``."""
    return _outcomes(_python_read(options, messages, copy.deepcopy(lookup), paths), paths)


def vector_then_python(
    options: CodecOptions, messages: Sequence[RawMessage], lookup: MemorySchemaLookup, paths: Paths = DEBEZIUM
) -> tuple[list[bool], list[Outcome], list[Row]]:
    """(taken per message, outcome per message, the vector rows as returned) as the worker decodes a
    batch: the vector path first, then the Python decoder on the rest, on one copy of ``lookup``."""
    mine = copy.deepcopy(lookup)
    result = paths.vector(options, PIPELINE, RUN).decode(BATCH, list(messages), mine)
    taken = list(result.taken)
    assert len(taken) == len(messages), f"{len(taken)} taken flags for {len(messages)} messages"
    vector_rows: list[Row] = []
    if result.events is not None:
        assert result.events.schema.equals(EVENTS_ARROW_SCHEMA), result.events.schema
        vector_rows = result.events.to_pylist()
    assert len(vector_rows) == sum(taken), f"{len(vector_rows)} vector rows for {sum(taken)} taken messages"
    rest = [m for m, took in zip(messages, taken, strict=True) if not took]
    python = iter(_outcomes(_python_read(options, rest, mine, paths), paths))
    rows = iter(vector_rows)
    outcomes = [Outcome(rows=(next(rows),)) if took else next(python) for took in taken]
    return taken, outcomes, vector_rows


def assert_same(
    options: CodecOptions,
    messages: Sequence[RawMessage],
    lookup: MemorySchemaLookup,
    *,
    taken: int | Collection[int],
    may_take: Collection[int] = (),
    paths: Paths = DEBEZIUM,
) -> Compared:
    """Decode ``messages`` both ways and require the same rows and reasons for every message.

    ``taken``: how many messages (an int) or exactly which (their indexes) the vector path must
    take, so a test where it silently takes nothing fails; ``may_take``: indexes it may take or
    leave (with ``taken`` a collection), e.g. mutations it can prove equal.
    """
    expected = reference(options, messages, lookup, paths)
    took, outcomes, vector_rows = vector_then_python(options, messages, lookup, paths)
    taken_now = frozenset(n for n, t in enumerate(took) if t)
    for n in sorted(taken_now):
        spec = expected[n]
        assert spec.reason is None, (
            f"message {n} taken by the vector path, but the reference quarantines it: {spec.reason}"
        )
        assert len(spec.rows) == 1, (
            f"message {n} taken by the vector path, but the reference gives {len(spec.rows)} events"
        )
    # The vector rows, in message order, are the reference rows of the taken messages, every column.
    wanted = [expected[n].rows[0] for n in sorted(taken_now)]
    if vector_rows != wanted:
        pairs = zip(sorted(taken_now), vector_rows, wanted, strict=True)
        n, row, spec_row = next((n, got, want) for n, got, want in pairs if got != want)
        columns = {c: (spec_row[c], row[c]) for c in spec_row if spec_row[c] != row[c]}
        raise AssertionError(f"vector row of message {n} differs (column: (reference, vector)): {columns!r:.2000}")
    differences = [
        (n, messages[n].value, spec, got)
        for n, (spec, got) in enumerate(zip(expected, outcomes, strict=True))
        if spec != got
    ]
    assert not differences, _describe(differences[:3], len(differences))
    if isinstance(taken, int):
        assert len(taken_now) == taken, f"{len(taken_now)} messages taken, expected {taken}: {sorted(taken_now)[:50]}"
    else:
        required = frozenset(taken)
        unexpected = taken_now - required - frozenset(may_take)
        assert not unexpected, f"taken but not expected: {sorted(unexpected)[:30]}"
        assert required <= taken_now, f"expected but not taken: {sorted(required - taken_now)[:30]}"
    return Compared(taken_now, tuple(expected))


def _describe(differences: list[tuple[int, bytes | None, Outcome, Outcome]], count: int) -> str:
    lines = [f"{count} message(s) decode differently (reference first):"]
    for n, value, spec, got in differences:
        lines.append(f"message {n}: {value!r:.400}")
        lines.append(f"  reference: {spec}")
        lines.append(f"  vector+python: {got}")
    return "\n".join(lines)
