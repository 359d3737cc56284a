"""Arrow ``binary_view`` arrays over slices of one buffer: many byte ranges of a block as one array, no copy."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: Bytes a view holds inline; a longer value is its first 4 bytes, a buffer index and an offset.
_INLINE = 12


def binary_views(
    data: pa.Buffer | bytes | None, start: np.ndarray, stop: np.ndarray, count: int, valid: np.ndarray | None = None
) -> pa.Array:
    """``data[start[i]:stop[i]]`` for each i, as a ``binary_view`` array over ``data`` (no copy);
    null where ``valid`` is False (the range is then ignored)."""
    if valid is not None:
        start, stop = np.where(valid, start, 0), np.where(valid, stop, 0)
    length = (stop - start).astype(np.int32)
    views = np.zeros((count, 4), dtype=np.int32)
    views[:, 0] = length
    buffer = pa.py_buffer(data) if isinstance(data, bytes) else data
    if buffer is None or count == 0 or buffer.size == 0:
        return pa.array([b""] * count, pa.binary_view())
    raw = np.frombuffer(buffer, dtype=np.uint8)
    reach = np.arange(_INLINE)
    heads = raw[np.minimum(start[:, None] + reach, len(raw) - 1)]
    heads *= reach < length[:, None]
    views[:, 1:] = heads.view(np.int32).reshape(count, 3)
    long = length > _INLINE
    views[long, 2] = 0
    views[long, 3] = start[long].astype(np.int32)
    mask = None if valid is None or valid.all() else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.binary_view(), count, [mask, pa.py_buffer(views.tobytes()), buffer])
