"""The key range of a MERGE source as literals on the target side of the join (file pruning)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from ticdc_lake.apply.merge_sql import TargetColumn, bound_literal, merge_statement


def test_the_source_key_range_is_added_to_the_condition_on_the_target_side_only() -> None:
    columns = [TargetColumn("id", "long"), TargetColumn("v", "string")]
    sql = merge_statement("`c`.`d`.`t`", "src", columns, ["id"], bounds={"id": ("5", "90")})
    assert sql.splitlines()[0] == (
        "MERGE INTO `c`.`d`.`t` t USING src s ON t.`id` = s.`id` AND t.`id` >= 5 AND t.`id` <= 90"
    )
    assert sql == merge_statement("`c`.`d`.`t`", "src", columns, ["id"], {"id": ("5", "90")})


def test_no_bounds_keeps_the_plain_key_condition() -> None:
    columns = [TargetColumn("id", "long")]
    assert merge_statement("t", "s", columns, ["id"], bounds={}) == merge_statement("t", "s", columns, ["id"])


def test_literals_only_for_types_whose_literal_equals_the_stored_value() -> None:
    assert bound_literal(-7, "int") == "-7"
    assert bound_literal(2**63 - 1, "long") == str(2**63 - 1)
    assert bound_literal(Decimal("18446744073709551615"), "decimal(20,0)") == (
        "CAST('18446744073709551615' AS DECIMAL(20,0))"
    )
    assert bound_literal("it's", "string") == "'it\\'s'"
    assert bound_literal(True, "int") is None
    assert bound_literal(1.5, "double") is None
    assert bound_literal(date(2026, 1, 1), "date") is None
    assert bound_literal(None, "long") is None
    assert bound_literal(b"\x00", "binary") is None
