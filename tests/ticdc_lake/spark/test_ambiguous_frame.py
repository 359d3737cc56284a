"""``ambiguous_frame.ambiguous_counts`` reads a row's TIMESTAMP from its typed record where it has one."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as F

from ticdc_lake.ambiguous_times import FOLD0
from ticdc_lake.spark.ambiguous_frame import ambiguous_counts
from ticdc_lake.spark.record_images import VersionLayout, records_from_maps, untyped_from_maps

pytestmark = [pytest.mark.spark]

ZONE = "America/New_York"  # 2024-11-03 05:00Z to 06:00Z is the hour repeated at 06:00Z
LAYOUT = VersionLayout(1, ("id", "at"), ("int", "timestamptz"), ("id",))
TEXTS = [
    "2024-11-03T05:00:00Z",  # ambiguous
    "2024-11-03T05:59:59.999999Z",  # ambiguous
    "2024-11-03T06:00:00Z",
    "2024-11-03T12:00:00Z",
    "0000-00-00 00:00:00",  # a zero TIMESTAMP: NULL in the record, its text untyped
    None,
]


def test_rows_with_records_are_counted_from_their_instants(spark: Any) -> None:
    """Maps whose texts are all replaced by one that is not ambiguous: rows carrying a record are
    still counted from it, a row without one from its map; without the layouts every row is read
    from its (altered) map."""
    rows = [(i, {"id": str(i), "at": text}) for i, text in enumerate(TEXTS)]
    frame = spark.createDataFrame(rows, "id INT, after MAP<STRING,STRING>").withColumn(
        "schema_version", F.lit(Decimal(1)).cast("decimal(20,0)")
    )
    frame = frame.withColumns(
        {"after_record": records_from_maps("after", [LAYOUT]), "after_untyped": untyped_from_maps("after", [LAYOUT])}
    )
    assert ambiguous_counts(frame, ["at"], ZONE, FOLD0) == {"at": 2}  # the maps, as before records
    assert ambiguous_counts(frame, ["at"], ZONE, FOLD0, [LAYOUT]) == {"at": 2}

    altered = frame.withColumn(
        "after",
        F.map_from_arrays(
            F.array(F.lit("id"), F.lit("at")), F.array(F.col("id").cast("string"), F.lit("2024-11-03T12:00:00Z"))
        ),
    )
    unrecorded = frame.where(F.col("id") == 0).withColumn("after_record", F.lit(None).cast("binary"))
    both = altered.unionByName(unrecorded.withColumn("id", F.lit(99)))
    assert ambiguous_counts(both, ["at"], ZONE, FOLD0, [LAYOUT]) == {"at": 3}
    assert ambiguous_counts(both, ["at"], ZONE, FOLD0) == {"at": 1}


def test_a_column_kept_as_string_is_counted_from_its_records_text_where_the_map_is_left_behind(spark: Any) -> None:
    """A TIMESTAMP column the history carries as string (kept as string after a type change): the
    record holds the text as sent, so rows that carry no map are counted from it, as their maps
    would be counted; without the layouts nothing is left to read."""
    layout = VersionLayout(1, ("id", "at"), ("int", "string"), ("id",))
    rows = [(i, {"id": str(i), "at": text}) for i, text in enumerate(TEXTS)]
    frame = spark.createDataFrame(rows, "id INT, after MAP<STRING,STRING>").withColumn(
        "schema_version", F.lit(Decimal(1)).cast("decimal(20,0)")
    )
    frame = frame.withColumns(
        {"after_record": records_from_maps("after", [layout]), "after_untyped": untyped_from_maps("after", [layout])}
    )
    assert ambiguous_counts(frame, ["at"], ZONE, FOLD0) == {"at": 2}  # from the maps
    mapless = frame.withColumn("after", F.lit(None).cast("map<string,string>"))
    assert ambiguous_counts(mapless, ["at"], ZONE, FOLD0, [layout]) == {"at": 2}
    assert ambiguous_counts(mapless, ["at"], ZONE, FOLD0) == {}
