"""Open Protocol framing cut for a whole batch at once (``open_framing.split_batch``, vectorized).

One Kafka message is a batch of events: the key is ``u64be(1)`` then ``u64be(len) + key JSON`` per
event, the value ``u64be(len) + value JSON`` per event (``open_framing``). :func:`cut_items` walks
the length prefixes of every message together, one numpy step per item number (never a Python
step per message), and returns every event's key and value texts in message order. A message is
``ok`` only where ``split_batch`` would split it without error into at least one and at most
:data:`MAX_ITEMS` events (a message it would refuse, an empty batch and a longer one are not ok:
their messages go to the Python decoder).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ticdc_lake.arrow_views import binary_views
from ticdc_lake.protocols.open_framing import BATCH_VERSION

#: Events per message walked at most (TiCDC's ``max-batch-size`` is 16 by default).
MAX_ITEMS = 256
_PREFIX = 8
_SHIFTS = np.arange(56, -8, -8, dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class Items:
    """The events of the ok messages, in message order and, within one, in batch order."""

    #: Per message: its framing is cut (see the module docstring).
    ok: np.ndarray
    #: Per event: the index of its message in the batch, and its index in the message (``idx``).
    message: np.ndarray
    index: np.ndarray
    #: Per event: the key and value item bytes (``binary_view`` over the batch's own buffers).
    keys: pa.Array
    values: pa.Array


def cut_items(keys: pa.BinaryArray, values: pa.BinaryArray) -> Items:
    """The events of every message whose key items and value items pair up (see the module docstring)."""
    key_starts, key_ends = _bounds(keys)
    value_starts, value_ends = _bounds(values)
    key_raw = _raw(keys)
    ok = keys.is_valid().to_numpy(zero_copy_only=False) & values.is_valid().to_numpy(zero_copy_only=False)
    ok &= key_ends - key_starts >= _PREFIX
    ok[ok] &= _numbers(key_raw, key_starts[ok]) == BATCH_VERSION
    key_cut = _walk(key_raw, np.where(ok, key_starts + _PREFIX, key_ends), key_ends, ok)
    value_cut = _walk(_raw(values), value_starts, value_ends, ok)
    ok &= key_cut.ok & value_cut.ok & (key_cut.counts == value_cut.counts) & (key_cut.counts > 0)
    key_rows, value_rows = np.flatnonzero(ok[key_cut.message]), np.flatnonzero(ok[value_cut.message])
    return Items(
        ok=ok,
        message=key_cut.message[key_rows],
        index=key_cut.index[key_rows],
        keys=binary_views(keys.buffers()[2], key_cut.starts[key_rows], key_cut.stops[key_rows], len(key_rows)),
        values=binary_views(
            values.buffers()[2], value_cut.starts[value_rows], value_cut.stops[value_rows], len(value_rows)
        ),
    )


@dataclass(frozen=True, slots=True)
class _Cut:
    ok: np.ndarray
    counts: np.ndarray
    #: Per item, in message order: its message, its index, its body's start and stop in the buffer.
    message: np.ndarray
    index: np.ndarray
    starts: np.ndarray
    stops: np.ndarray


def _walk(raw: np.ndarray, cursor: np.ndarray, ends: np.ndarray, ok: np.ndarray) -> _Cut:
    """The length-prefixed items from ``cursor`` to ``ends`` of every ok message (``split_items``)."""
    ok = ok.copy()
    cursor = cursor.copy()
    counts = np.zeros(len(ok), dtype=np.int64)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for number in range(MAX_ITEMS + 1):
        active = np.flatnonzero(ok & (cursor < ends))
        if not len(active):
            break
        if number == MAX_ITEMS:
            ok[active] = False
            break
        left = ends[active] - cursor[active] - _PREFIX
        short = left < 0
        ok[active[short]] = False
        active, left = active[~short], left[~short]
        lengths = _numbers(raw, cursor[active])
        long = lengths > left.astype(np.uint64)
        ok[active[long]] = False
        active, lengths = active[~long], lengths[~long].astype(np.int64)
        body = cursor[active] + _PREFIX
        found.append((active, np.full(len(active), number), body, body + lengths))
        counts[active] += 1
        cursor[active] = body + lengths
    parts = [np.concatenate(part) if found else np.zeros(0, np.int64) for part in zip(*found, strict=True)] or [
        np.zeros(0, np.int64)
    ] * 4
    message, index, starts, stops = parts
    order = np.lexsort((index, message))
    return _Cut(ok, counts, message[order], index[order], starts[order], stops[order])


def _numbers(raw: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The big-endian uint64 at each offset ``at`` of ``raw`` (8 bytes there, checked by the caller)."""
    if not len(at):
        return np.zeros(0, dtype=np.uint64)
    octets = raw[at[:, None] + np.arange(_PREFIX)].astype(np.uint64)
    numbers: np.ndarray = np.bitwise_or.reduce(octets << _SHIFTS, axis=1)
    return numbers


def _bounds(values: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's start and end offset in the array's data buffer (a null: empty)."""
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset : values.offset + len(values) + 1]
    wide = offsets.astype(np.int64)
    return wide[:-1], wide[1:]


def _raw(values: pa.BinaryArray) -> np.ndarray:
    data = values.buffers()[2]
    return np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
