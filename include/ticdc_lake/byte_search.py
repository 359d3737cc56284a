"""Whether a byte string holds another, fast on large texts (whole blocks of landed records).

``needle in text`` runs CPython's own search: about 1.8 GB/s here over Debezium JSON (probably
because a quote, the last byte of a quoted name, is so frequent there that its skip table rarely
skips). The C library's ``memmem`` (glibc 2.36 here) searched the same blocks at 4.6 GB/s
(docs/design.md, "The schema pass's block test"). On one message the call into the C library
takes back what the faster search saves (a 2.9 KB Debezium message: 2.06 against 2.18 µs for the
whole block test), so texts under :data:`LARGE` bytes keep ``in``; where the C library has no
``memmem`` (or none can be loaded), every text does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

#: Texts at least this long are searched with ``memmem`` where the C library has one.
LARGE = 64 * 1024


def _load_memmem() -> Callable[..., int | None] | None:
    try:
        library = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        memmem = library.memmem
    except (OSError, AttributeError):
        return None
    memmem.restype = ctypes.c_void_p
    memmem.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return memmem


_MEMMEM = _load_memmem()


def contains(text: bytes | bytearray, needle: bytes) -> bool:
    """``needle in text``. ``memmem`` gets only ``bytes`` (ctypes passes their buffers without
    copying them); a ``bytearray`` is searched with ``in``."""
    if _MEMMEM is None or len(text) < LARGE or not needle or type(text) is not bytes or type(needle) is not bytes:
        return needle in text
    return _MEMMEM(text, len(text), needle, len(needle)) is not None
