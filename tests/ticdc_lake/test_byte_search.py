"""``byte_search.contains`` answers exactly as ``in`` does, on short texts and on the large ones it
hands to the C library's ``memmem``."""

from __future__ import annotations

import random
import sys

import pytest

from ticdc_lake import byte_search
from ticdc_lake.byte_search import LARGE, contains


def test_the_c_library_search_is_used_on_linux() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("memmem is looked up in the C library; a platform without it searches with `in`")
    assert byte_search._MEMMEM is not None


@pytest.mark.parametrize("size", [0, 5, LARGE - 1, LARGE, 3 * LARGE + 7])
def test_contains_agrees_with_in_wherever_the_needle_is(size: int) -> None:
    rng = random.Random(size)
    text = bytes(rng.choice(b'{}":,ab') for _ in range(size))
    needle = b'"ddl"'
    assert contains(text, needle) is (needle in text)
    for at in {0, size // 2, max(size - len(needle), 0)}:
        placed = text[:at] + needle + text[at + len(needle) :]
        assert contains(placed, needle) is True
        assert contains(placed, b'"ddl":') is (b'"ddl":' in placed)
    assert contains(text + b'"dd', needle) is (needle in text + b'"dd')  # cut at the very end: not there
    assert contains(text, b"") is True


def test_contains_finds_a_needle_only_at_the_end_of_a_large_text() -> None:
    text = b'"' * (2 * LARGE) + b"ddl"
    assert contains(text, b'"ddl') is True
    assert contains(text, b'"ddl"') is False


def test_contains_searches_a_bytearray_with_in() -> None:
    """ctypes takes only ``bytes`` for the text; a ``bytearray`` must not raise (the schema pass
    would read the exception as a damaged file)."""
    text = b"x" * LARGE + b'"ddl"'
    assert contains(bytearray(text), b'"ddl"') is True
    assert contains(bytearray(text[:-1]), b'"ddl"') is False
