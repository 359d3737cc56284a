"""``envelope.text_marks`` against a per-text reading of the same bytes, as JSON pairs backslashes."""

from __future__ import annotations

import random

import pyarrow as pa

from ticdc_lake.spark.arrow_decode.envelope import text_marks


def _reference(text: str) -> tuple[bool, bool, bool]:
    """(control character, ``\\u`` escape, backslash) of one text, read left to right."""
    controls = any(ord(c) < 0x20 for c in text)
    escape = False
    position = 0
    while position < len(text):
        if text[position] == "\\":
            escape |= text[position + 1 : position + 2] == "u"
            position += 2  # the escaped character is never an escape itself
        else:
            position += 1
    return controls, escape, "\\" in text


def test_escaped_backslashes_before_u_are_not_escapes() -> None:
    texts = ["a\\\\u00e9", "a\\u00e9", "a\\\\\\u00e9", "x", "C:\\\\users\\\\u", "\\\\", "\\u", "", "a\x01"]
    marks = text_marks(pa.array(texts))
    assert marks.unicode_escapes.tolist() == [False, True, True, False, False, False, True, False, False]
    assert marks.backslashes.tolist() == [True, True, True, False, True, True, True, False, False]
    assert marks.controls.tolist() == [False] * 8 + [True]


def test_random_texts_match_the_reference() -> None:
    rng = random.Random(5)
    alphabet = ["\\", "u", "a", '"', "\x1f", "é"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 9))) for _ in range(3_000)]
    array = pa.array(texts)
    for piece in (array, array.slice(7, 2_000)):  # an offset into the buffers too
        marks = text_marks(piece)
        expected = [_reference(t) for t in piece.to_pylist()]
        assert marks.controls.tolist() == [e[0] for e in expected]
        assert marks.unicode_escapes.tolist() == [e[1] for e in expected]
        assert marks.backslashes.tolist() == [e[2] for e in expected]
