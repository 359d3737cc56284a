"""Arrow ``binary_view`` arrays over slices of buffers: many byte ranges of blocks as one array, no copy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

#: Bytes a view holds inline; a longer value is its first 4 bytes, a buffer index and an offset.
_INLINE = 12

#: Byte ranges of one buffer: (the buffer, starts, stops, which ranges are valid or None for all).
Ranges = tuple[pa.Buffer | bytes, np.ndarray, np.ndarray, np.ndarray | None]


def binary_views(
    data: pa.Buffer | bytes | None, start: np.ndarray, stop: np.ndarray, count: int, valid: np.ndarray | None = None
) -> pa.Array:
    """``data[start[i]:stop[i]]`` for each i, as a ``binary_view`` array over ``data`` (no copy);
    null where ``valid`` is False (the range is then ignored)."""
    buffer = pa.py_buffer(data) if isinstance(data, bytes) else data
    if buffer is None or count == 0 or buffer.size == 0:
        return pa.array([b""] * count, pa.binary_view())
    return joined_views([(buffer, start, stop, valid)])


def joined_views(pieces: Sequence[Ranges]) -> pa.Array:
    """The ranges of every piece, in order, as one ``binary_view`` array over all their buffers (no
    copy): a ``binary`` array of several blocks' ranges is then one cast, one copy of their bytes."""
    rows = [
        _view_rows(np.frombuffer(buffer, dtype=np.uint8), start, stop, valid, index)
        for index, (buffer, start, stop, valid) in enumerate(pieces)
    ]
    views = np.concatenate(rows) if len(rows) > 1 else rows[0]
    valid = [np.ones(len(p[1]), dtype=bool) if p[3] is None else p[3] for p in pieces]
    every = np.concatenate(valid) if len(valid) > 1 else valid[0]
    mask = None if every.all() else pa.array(every).buffers()[1]
    buffers = [pa.py_buffer(b) if isinstance(b, bytes) else b for b, _, _, _ in pieces]
    return pa.Array.from_buffers(pa.binary_view(), len(views), [mask, pa.py_buffer(views.tobytes()), *buffers])


def _view_rows(
    raw: np.ndarray, start: np.ndarray, stop: np.ndarray, valid: np.ndarray | None, index: int
) -> np.ndarray:
    """The 16-byte views (as 4 int32 each) of ``raw[start:stop]`` per row, long ones pointing into
    variadic buffer ``index``; a null row (``valid`` False) is an empty view."""
    count = len(start)
    if valid is not None:
        start, stop = np.where(valid, start, 0), np.where(valid, stop, 0)
    length = (stop - start).astype(np.int32)
    views = np.zeros((count, 4), dtype=np.int32)
    views[:, 0] = length
    if count == 0 or len(raw) == 0:
        return views
    reach = np.arange(_INLINE)
    heads = raw[np.minimum(start[:, None] + reach, len(raw) - 1)]
    heads *= reach < length[:, None]
    views[:, 1:] = heads.view(np.int32).reshape(count, 3)
    long = length > _INLINE
    views[long, 2] = index
    views[long, 3] = start[long].astype(np.int32)
    return views
