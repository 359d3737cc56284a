"""The typed MERGE source read from records equals the one typed from text maps, in Spark.

Images of canonical texts (every edge text of every type, seeded random ones, absent columns) are
typed for target columns twice: from the text map by ``merge_sql.typed_projection`` (apply's path
for rows decoded before records), and from the record carrier (``record_images``, shown equal to
what decode writes in ``test_record_images``) by ``record_projection``. Values and the count of
unrepresentable values must be equal row by row, for targets of the carried type, of a wider
type, of a narrower one, and string targets (a column kept as string that the history did not
foresee), where Spark's rendering of decimals, floats and date-times may differ from the text
sent, and is counted.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from pyspark.sql import functions as F

from tests.ticdc_lake.spark.arrow_decode.typed_image_cases import EDGE_TEXTS, random_texts
from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, typed_projection
from ticdc_lake.schema.type_mapping import is_lossless_widening
from ticdc_lake.spark.record_images import VersionLayout, records_from_maps, untyped_from_maps
from ticdc_lake.spark.record_projection import (
    FROM_RECORD_COLUMN,
    RENDERED_COLUMN,
    carried_projection,
    record_projection,
    renders_nothing,
)

pytestmark = [pytest.mark.spark]

COUNT = 300
#: Carried type → target types other than itself to read it into.
TARGETS = {
    "int": ["long", "string", "decimal(12,0)"],
    "long": ["int", "string"],
    "float": ["double", "string"],
    "double": ["string", "float"],
    "date": ["string", "timestamp"],
    "timestamp": ["string", "date"],
    "timestamptz": ["string"],
    "binary": ["string"],
    "string": ["int", "date", "binary"],
}
#: Carried types whose text Spark renders exactly as the canonical text (no rendered count).
EXACT = {"int", "long", "date", "binary", "string"}


def _pairs() -> list[tuple[str, str]]:
    """(carried type, target type): each type into itself, into the other types above, decimals widened."""
    pairs = [(kind, kind) for kind in sorted(EDGE_TEXTS)]
    pairs += [(carried, target) for carried, targets in TARGETS.items() for target in targets]
    for kind in (k for k in sorted(EDGE_TEXTS) if k.startswith("decimal(")):
        precision, scale = (int(p) for p in kind[8:-1].split(","))
        pairs += [(kind, f"decimal({min(precision + 3, 38)},{scale})"), (kind, "string"), (kind, "long")]
    return list(dict.fromkeys(pairs))  # decimal(38,10) widens to itself


def _frame(spark: Any, layout: VersionLayout) -> Any:
    rng = np.random.default_rng(5)
    columns = []
    for i, kind in enumerate(layout.types):
        edges = EDGE_TEXTS[kind]
        texts = (edges * (40 // len(edges) + 1))[:40] + random_texts(kind, COUNT - 40, seed=30 + i)
        columns.append([t if rng.random() > 0.1 else "<absent>" for t in texts])
    rows = [
        (
            n,
            Decimal(layout.version),
            {name: col[n] for name, col in zip(layout.names, columns, strict=True) if col[n] != "<absent>"},
        )
        for n in range(COUNT)
    ]
    frame = spark.createDataFrame(rows, "n INT, schema_version DECIMAL(20,0), after MAP<STRING, STRING>")
    return frame.select(
        "n",
        "after",
        records_from_maps("after", [layout]).alias("record"),
        untyped_from_maps("after", [layout]).alias("untyped"),
    )


def test_records_read_into_every_target_type_give_what_the_text_maps_give(spark: Any) -> None:
    """Per (carried, target) pair, one column: exact pairs give the map path's values and
    unrepresentable counts with nothing rendered; the others count every value Spark rendered."""
    pairs = _pairs()
    names = tuple(f"{carried} -> {target}" for carried, target in pairs)
    layout = VersionLayout(7, names, tuple(carried for carried, _ in pairs), ())
    frame = _frame(spark, layout)
    items = []
    for i, (name, (_, target)) in enumerate(zip(names, pairs, strict=True)):
        column = [TargetColumn(name, target)]
        by_map = typed_projection("after", column)
        by_record = record_projection("record", "untyped", layout, column)
        items += [
            F.expr(by_map[0]).alias(f"m{i}"),
            F.expr(by_map[1]).alias(f"mb{i}"),
            by_record[0].alias(f"r{i}"),
            by_record[1].alias(f"rb{i}"),
            by_record[2].alias(f"rr{i}"),
        ]
    read = frame.select(*items)
    checks = []
    for i in range(len(pairs)):
        differing = ~F.col(f"m{i}").eqNullSafe(F.col(f"r{i}")) | (F.col(f"mb{i}") != F.col(f"rb{i}"))
        checks += [F.count(F.when(differing, 1)), F.sum(f"rr{i}")]
    totals = read.agg(*checks, F.sum(F.expr(" + ".join(f"mb{i}" for i in range(len(pairs)))))).first()
    assert totals is not None
    wrong = {}
    for i, pair in enumerate(pairs):
        rows, rendered = int(totals[2 * i]), int(totals[2 * i + 1] or 0)
        if (_exact(pair) and (rows, rendered) != (0, 0)) or (not _exact(pair) and rendered == 0):
            wrong[pair] = (rows, rendered)
    # Exact pairs: no differing row and nothing rendered; the others count what Spark rendered.
    assert wrong == {}
    assert totals[-1] > 0  # the zero dates and the values beyond int are there


def _widens(carried: str, target: str) -> bool:
    # float -> double goes through the text: the map path types the sent text ("3.14" -> 3.14).
    return is_lossless_widening(carried, target) and carried != "float"


def _exact(pair: tuple[str, str]) -> bool:
    carried, target = pair
    return carried == target or carried in EXACT or _widens(carried, target)


def _differing(got: Any, want: Any, columns: list[TargetColumn]) -> int:
    """Rows (joined on ``n``) where any typed value or the unrepresentable count differs."""
    joined = got.alias("g").join(want.alias("w"), "n")
    names = [c.name for c in columns] + [BAD_VALUES_COLUMN]
    differs = F.lit(False)
    for name in names:
        differs = differs | ~F.col(f"g.`{name}`").eqNullSafe(F.col(f"w.`{name}`"))
    return int(joined.where(differs).count())


def test_net_changes_are_typed_from_their_records_where_their_layout_renders_nothing(spark: Any) -> None:
    """``carried_projection``: a row with a record of a listed version reads the record (its map is
    emptied here, so a read of the map would give NULLs), a version of the same layout too (one
    ``from_avro``); a row without a record, or of a version not listed, reads its map. Every row
    equals ``typed_projection`` of the full map."""
    kinds = tuple(sorted(EDGE_TEXTS))
    names = tuple(f"c_{kind}" for kind in kinds)
    layout = VersionLayout(7, names, kinds, ())
    frame = _frame(spark, layout)
    part = F.col("n") % 4
    from_record = part.isin(0, 1)
    net = frame.select(
        "n",
        "after",
        F.when(from_record, F.map_filter("after", lambda k, v: F.lit(False))).otherwise(F.col("after")).alias("image"),
        F.when(part == 3, F.lit(None)).otherwise(F.col("record")).alias("record"),
        "untyped",
        F.when(part == 1, 8).when(part == 2, 9).otherwise(7).cast("decimal(20,0)").alias("schema_version"),
    )
    columns = [TargetColumn(name, kind) for name, kind in zip(names, kinds, strict=True)]
    got = net.select("n", *carried_projection(columns, [layout, replace(layout, version=8)]))
    want = net.select("n", *[F.expr(item) for item in typed_projection("after", columns)])
    assert got.where(F.col(BAD_VALUES_COLUMN) > 0).count() > 0  # zero dates and the like, from records too
    assert _differing(got, want, columns) == 0
    # Read through the emptied maps instead, the rows that have records differ.
    assert _differing(net.select("n", *carried_projection(columns, [])), want, columns) > 0


def test_a_layout_that_would_render_values_is_read_from_the_maps(spark: Any) -> None:
    """A version whose carried DOUBLE the target holds as string (a target changed outside the
    pipeline): Spark's text of the double may differ from the text sent, so its rows keep the
    map's exact text while there is one."""
    layout = VersionLayout(7, ("d", "i"), ("double", "int"), ())
    frame = _frame(spark, layout)
    net = frame.select(
        "n", "after", F.col("after").alias("image"), "record", "untyped", F.lit(7).alias("schema_version")
    )
    columns = [TargetColumn("d", "string"), TargetColumn("i", "int")]
    want = net.select("n", *[F.expr(item) for item in typed_projection("after", columns)])
    assert not renders_nothing(layout, columns)
    assert _differing(net.select("n", *carried_projection(columns, [layout])), want, columns) == 0
    # The record's own reading renders some doubles differently: the fallback is what keeps them.
    rendered = net.select("n", *record_projection("record", "untyped", layout, columns)[:-1])
    assert _differing(rendered, want, columns) > 0


def test_a_rendering_layout_whose_map_was_left_behind_is_read_from_its_record_and_counted(spark: Any) -> None:
    """The same version, where apply left a row's map behind (``net_change_frame``: the row is keyed
    and typed by its record): that row is typed from its record, Spark's text of its doubles, and
    the values rendered are counted (``RENDERED_COLUMN``) as ``record_projection`` counts them; a
    row that kept its map still reads the map's exact text, counting nothing rendered."""
    layout = VersionLayout(7, ("d", "i"), ("double", "int"), ())
    frame = _frame(spark, layout)
    left = F.col("n") % 2 == 0
    net = frame.select(
        "n",
        F.when(~left, F.col("after")).alias("image"),
        "record",
        "untyped",
        F.lit(7).cast("decimal(20,0)").alias("schema_version"),
    )
    columns = [TargetColumn("d", "string"), TargetColumn("i", "int")]
    items = carried_projection(columns, [layout])
    got = net.select("n", *items)
    by_map = frame.select("n", *[F.expr(item) for item in typed_projection("after", columns)])
    by_record = frame.select("n", *record_projection("record", "untyped", layout, columns))
    kept, gone = got.where(F.col("n") % 2 == 1), got.where(F.col("n") % 2 == 0)
    assert _differing(kept, by_map.where(F.col("n") % 2 == 1), columns) == 0
    assert _differing(gone, by_record.where(F.col("n") % 2 == 0), columns) == 0
    assert _differing(gone, by_map.where(F.col("n") % 2 == 0), columns) > 0  # some doubles render differently
    sums = got.groupBy((F.col("n") % 2).alias("kept")).agg(
        F.sum(RENDERED_COLUMN).alias("rendered"), F.sum(FROM_RECORD_COLUMN).alias("from_record"), F.count("n")
    )
    found = {int(r["kept"]): (int(r["rendered"]), int(r["from_record"]), int(r[3])) for r in sums.collect()}
    want_rendered = by_record.where(F.col("n") % 2 == 0).agg(F.sum(RENDERED_COLUMN)).first()
    assert want_rendered is not None
    assert int(want_rendered[0]) > 0
    assert found[1] == (0, 0, COUNT // 2)
    assert found[0] == (int(want_rendered[0]), COUNT // 2, COUNT // 2)
