"""Whole-column typing of canonical texts (``typed_columns``) against the specification
(``typed_values.typed_value``), value by value: the same typed value, or NULL and flagged where
the type cannot hold the text. Spark's own ``try_cast`` is the reference in
``test_typed_records_spark.py``."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tests.ticdc_lake.spark.arrow_decode.typed_image_cases import EDGE_TEXTS, random_texts, storage_values
from ticdc_lake.spark.arrow_decode.typed_columns import arrow_type, typed_column
from ticdc_lake.typed_values import UNREPRESENTABLE, typed_value

TYPES = sorted(EDGE_TEXTS)


def _expected(text: str | None, iceberg_type: str) -> tuple[object, bool]:
    if text is None:
        return None, False
    value = typed_value(text, iceberg_type)
    if value is UNREPRESENTABLE:
        return None, True
    if iceberg_type == "float":  # a float column holds float32
        return pa.array([value], pa.float32()).to_pylist()[0], False
    return value, False


def _check(texts: list[str | None], iceberg_type: str, array: pa.Array) -> None:
    typed = typed_column(array, iceberg_type)
    assert typed.values.type == arrow_type(iceberg_type)
    assert len(typed.values) == len(texts) == len(typed.unrepresentable)
    got = list(zip(storage_values(typed.values), typed.unrepresentable.tolist(), strict=True))
    expected = [_expected(text, iceberg_type) for text in texts]
    differences = [(t, g, e) for t, g, e in zip(texts, got, expected, strict=True) if g != e]
    assert differences == []


@pytest.mark.parametrize("iceberg_type", TYPES)
def test_edge_texts_type_as_the_specification_says(iceberg_type: str) -> None:
    texts = EDGE_TEXTS[iceberg_type]
    _check(texts, iceberg_type, pa.array(texts, pa.string()))


@pytest.mark.parametrize("iceberg_type", TYPES)
def test_random_canonical_texts_of_a_sliced_array(iceberg_type: str) -> None:
    texts = random_texts(iceberg_type, 3000, seed=14)
    _check(texts[7:2907], iceberg_type, pa.array(texts, pa.string()).slice(7, 2900))


def test_unrepresentable_values_are_flagged_and_null() -> None:
    typed = typed_column(pa.array(["2024-01-01", "0000-00-00", None, "2023-02-31"]), "date")
    assert typed.unrepresentable.tolist() == [False, True, False, True]
    assert typed.values.null_count == 3


def test_a_text_outside_the_canonical_form_goes_through_the_specification() -> None:
    # a value the strict form does not take (19 digits, a rounded decimal) takes the per-value path
    texts = ["1234567890123456789", "5", None]
    assert storage_values(typed_column(pa.array(texts), "long").values) == [1234567890123456789, 5, None]
    typed = typed_column(pa.array(["0.005", "1.00", "x"]), "decimal(12,2)")
    assert [str(v) for v in typed.values.to_pylist()] == ["0.01", "1.00", "None"]
    assert typed.unrepresentable.tolist() == [False, False, True]


def test_all_null_and_empty_columns() -> None:
    assert typed_column(pa.array([None, None], pa.string()), "date").values.to_pylist() == [None, None]
    assert typed_column(pa.array(["", "", None]), "binary").values.to_pylist() == [b"", b"", None]
    assert len(typed_column(pa.array([], pa.string()), "long").values) == 0


def test_an_iceberg_type_without_an_arrow_type_is_named() -> None:
    with pytest.raises(ValueError, match=r"^no Arrow type for Iceberg type 'uuid'$"):
        typed_column(pa.array(["x"]), "uuid")


def test_when_arrow_refuses_a_strict_text_the_specification_converts_the_column(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(values: pa.Array, target: pa.DataType) -> pa.Array:
        raise pa.ArrowInvalid("refused")

    monkeypatch.setattr(pc, "cast", refuse)  # the module typed_columns calls
    texts = ["3.25", "-1e3", None, "x"]
    typed = typed_column(pa.array(texts), "double")
    assert typed.values.to_pylist() == [3.25, -1000.0, None, None]
    assert typed.unrepresentable.tolist() == [False, False, False, True]
