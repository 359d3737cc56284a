"""``binary_view`` arrays over byte ranges of one or several buffers (``ticdc_lake.arrow_views``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ticdc_lake.arrow_views import binary_views, joined_views


def test_views_of_one_buffer_are_its_ranges() -> None:
    data = bytes(range(256)) * 4
    start = np.array([0, 5, 100, 3, 1000], dtype=np.int64)
    stop = np.array([0, 17, 140, 15, 1024], dtype=np.int64)  # empty, 12 bytes (inline), long, inline, long
    valid = np.array([True, True, True, False, True])
    views = binary_views(data, start, stop, len(start), valid=valid)
    assert views.type == pa.binary_view()
    expected = [data[a:b] if ok else None for a, b, ok in zip(start, stop, valid, strict=True)]
    assert views.to_pylist() == expected
    assert views.cast(pa.binary()).to_pylist() == expected


def test_joined_views_take_each_piece_from_its_own_buffer_in_order() -> None:
    rng = np.random.default_rng(7)
    pieces = []
    expected: list[bytes | None] = []
    for index in range(5):
        data = rng.integers(0, 256, size=3000 + index, dtype=np.uint8).tobytes()
        start = rng.integers(0, 2000, size=40)
        stop = start + rng.integers(0, 40, size=40)
        valid = None if index % 2 else rng.random(40) > 0.2
        pieces.append((data, start, stop, valid))
        expected += [
            data[a:b] if valid is None or valid[row] else None
            for row, (a, b) in enumerate(zip(start.tolist(), stop.tolist(), strict=True))
        ]
    joined = joined_views(pieces)
    assert joined.to_pylist() == expected
    assert joined.cast(pa.binary()).to_pylist() == expected
    assert joined_views(pieces[1:2]).to_pylist() == expected[40:80]
