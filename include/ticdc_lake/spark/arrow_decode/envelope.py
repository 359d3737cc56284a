"""Whole-batch cuts of TiCDC's compact JSON envelope ``{"payload":P,"schema":S}`` (no Python step per message).

:func:`cut_envelopes` finds, for every message of an Arrow batch at once, the payload text P and the
schema text S of the envelope as TiCDC writes it (``payload`` first, no whitespace), the same cut
:func:`ticdc_lake.protocols.debezium_envelope.split_envelope` makes one message at a time: P runs
up to the first ``,"schema":`` after the ``{"payload":`` prefix, S from there to the closing brace.
A first ``,"schema":`` that lies inside P (a column named ``schema`` in a row image) leaves a P
that is not one JSON value, so reading it fails and the message takes the Python decoder; the
caller never trusts a cut it has not read back (``debezium_batch``).

Slices are views on the batch's own bytes (Arrow ``binary_view``): nothing is copied until the
caller casts them (the payloads, to read them) or hashes them (the schemas, to group the rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.arrow_views import binary_views

PAYLOAD_FIRST = b'{"payload":'
THEN_SCHEMA = b',"schema":'
#: Bytes below this are control characters, which JSON forbids raw in strings (a payload holding one
#: is left to the Python decoder, which says where; ``pyarrow.json`` would refuse the whole group).
_FIRST_PRINTABLE = 0x20
_BACKSLASH = 0x5C
_LETTER_U = 0x75


@dataclass(frozen=True, slots=True)
class Envelopes:
    """The cut of every message of a batch; where ``ok`` is False the two texts are empty."""

    ok: np.ndarray
    payloads: pa.Array  # binary_view
    schemas: pa.Array  # binary_view


def cut_envelopes(values: pa.BinaryArray) -> Envelopes:
    """The payload and schema texts of ``values`` (nulls and other shapes: ``ok`` False)."""
    count = len(values)
    shaped = pc.and_kleene(
        pc.starts_with(values, pattern=PAYLOAD_FIRST.decode()), pc.ends_with(values, pattern="}")
    ).fill_null(False)
    found = pc.find_substring(values, pattern=THEN_SCHEMA.decode()).fill_null(-1).to_numpy(zero_copy_only=False)
    lengths = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    ok = shaped.to_numpy(zero_copy_only=False) & (found > len(PAYLOAD_FIRST))
    ok &= found + len(THEN_SCHEMA) < lengths - 1  # a schema text of at least one byte
    starts = _starts(values)
    payload_start = np.where(ok, starts + len(PAYLOAD_FIRST), 0)
    payload_stop = np.where(ok, starts + found, 0)
    schema_start = np.where(ok, starts + found + len(THEN_SCHEMA), 0)
    schema_stop = np.where(ok, starts + lengths - 1, 0)
    data = values.buffers()[2]
    payloads = binary_views(data, payload_start, payload_stop, count)
    schemas = binary_views(data, schema_start, schema_stop, count)
    return Envelopes(ok, payloads, schemas)


def _starts(values: pa.BinaryArray) -> np.ndarray:
    """The byte offset of each value in the array's data buffer."""
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)
    return offsets[values.offset : values.offset + len(values)].astype(np.int64)


@dataclass(frozen=True, slots=True)
class TextMarks:
    """Per text: whether it holds a raw control character, a ``\\u`` escape, a backslash at all."""

    controls: np.ndarray
    unicode_escapes: np.ndarray
    backslashes: np.ndarray


def text_marks(texts: pa.StringArray) -> TextMarks:
    """:class:`TextMarks` of every text, from one pass over the array's bytes. Backslashes pair left to
    right, as JSON reads them: a ``u`` after an escaped backslash (``\\\\u``) is plain text, not a
    ``\\u`` escape."""
    count = len(texts)
    controls, escapes, backslashes = (np.zeros(count, dtype=bool) for _ in range(3))
    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32)[texts.offset : texts.offset + count + 1]
    data = texts.buffers()[2]
    if data is None or offsets[-1] == offsets[0]:
        return TextMarks(controls, escapes, backslashes)
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
    marked = np.flatnonzero((raw < _FIRST_PRINTABLE) | (raw == _BACKSLASH))  # few, usually
    if len(marked):
        rows = np.searchsorted(offsets - offsets[0], marked, side="right") - 1
        control = raw[marked] < _FIRST_PRINTABLE
        controls[rows[control]] = True
        slash = ~control
        at, owner = marked[slash], rows[slash]
        backslashes[owner] = True
        # Index of each backslash in its run of consecutive backslashes (within one text): the even
        # ones escape the next character.
        steps = np.arange(len(at))
        starts = np.ones(len(at), dtype=bool)
        starts[1:] = (at[1:] != at[:-1] + 1) | (owner[1:] != owner[:-1])
        in_run = steps - np.maximum.accumulate(np.where(starts, steps, 0))
        after = np.minimum(at + 1, len(raw) - 1)
        inside = at + 1 < offsets[owner + 1] - offsets[0]  # not a text's last byte
        escapes[owner[(in_run % 2 == 0) & inside & (raw[after] == _LETTER_U)]] = True
    return TextMarks(controls, escapes, backslashes)
