"""DDL applied to Iceberg in commit-TSO order, in segments, on real Spark (several tables per run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ticdc_lake.spark.apply_lake import ApplyLake
from ticdc_lake.spark.apply_job import run_apply

pytestmark = [pytest.mark.spark]

WATERMARK = 1000


def _create(lake: ApplyLake, ts: int, table: str, columns: str) -> None:
    lake.ddl(ts, "shop", table, "CREATE", f"CREATE TABLE {table} ({columns})")


def _default_policy_events(lake: ApplyLake) -> None:
    # ADD COLUMN with a default: existing rows get it, later rows carry their own value.
    _create(lake, 100, "added", "id INT PRIMARY KEY, a INT")
    lake.dml(110, "shop", "added", "I", {"id": 1, "a": 1})
    lake.ddl(120, "shop", "added", "ALTER", "ALTER TABLE added ADD COLUMN c INT NOT NULL DEFAULT 7 AFTER id")
    lake.dml(130, "shop", "added", "I", {"id": 2, "a": 2, "c": 9})
    # A multi-spec ALTER: DROP, CHANGE (rename + widening), MODIFY to an incompatible type.
    _create(lake, 100, "multi", "id INT PRIMARY KEY, a INT, b VARCHAR(10), n INT")
    lake.dml(110, "shop", "multi", "I", {"id": 1, "a": 5, "b": "x", "n": 42})
    query = "ALTER TABLE multi DROP COLUMN b, CHANGE COLUMN a a2 BIGINT, MODIFY n VARCHAR(20)"
    lake.ddl(120, "shop", "multi", "ALTER", query)
    lake.dml(130, "shop", "multi", "I", {"id": 2, "a2": 6, "n": "43x"})
    # DROP / ADD PRIMARY KEY: identifier fields follow; rows in between use the whole row as key.
    _create(lake, 100, "keys", "id INT NOT NULL, v INT, PRIMARY KEY (id)")
    lake.dml(110, "shop", "keys", "I", {"id": 1, "v": 1})
    lake.ddl(120, "shop", "keys", "ALTER", "ALTER TABLE keys DROP PRIMARY KEY")
    lake.dml(130, "shop", "keys", "I", {"id": 2, "v": 2})
    lake.ddl(140, "shop", "keys", "ALTER", "ALTER TABLE keys ADD PRIMARY KEY (id)")
    lake.dml(150, "shop", "keys", "U", {"id": 1, "v": 5}, {"id": 1, "v": 1})
    # RENAME TABLE with DML before and after in the same run.
    _create(lake, 100, "old", "id INT PRIMARY KEY, v INT")
    lake.dml(110, "shop", "old", "I", {"id": 1, "v": 1})
    lake.ddl(140, "shop", "new", "RENAME", "RENAME TABLE old TO new")
    lake.dml(150, "shop", "new", "I", {"id": 2, "v": 2})
    # TRUNCATE inside one run.
    _create(lake, 100, "trunc", "id INT PRIMARY KEY")
    lake.dml(110, "shop", "trunc", "I", {"id": 1})
    lake.dml(111, "shop", "trunc", "I", {"id": 2})
    lake.ddl(120, "shop", "trunc", "TRUNCATE", "TRUNCATE TABLE trunc")
    lake.dml(130, "shop", "trunc", "I", {"id": 3})
    # DROP TABLE (kept), and DROP + CREATE of one name.
    _create(lake, 100, "gone", "id INT PRIMARY KEY")
    lake.dml(110, "shop", "gone", "I", {"id": 1})
    lake.ddl(130, "shop", "gone", "ERASE", "DROP TABLE gone")
    _create(lake, 100, "again", "id INT PRIMARY KEY, v INT")
    lake.dml(110, "shop", "again", "I", {"id": 1, "v": 1})
    lake.ddl(120, "shop", "again", "ERASE", "DROP TABLE again")
    _create(lake, 130, "again", "id INT PRIMARY KEY, z VARCHAR(5)")
    lake.dml(140, "shop", "again", "I", {"id": 5, "z": "z"})
    # Databases.
    lake.ddl(100, "made", None, "CREATE", "CREATE DATABASE made")
    lake.ddl(100, "brief", None, "CREATE", "CREATE DATABASE brief")
    lake.ddl(150, "brief", None, "ERASE", "DROP DATABASE brief")
    # DROP DATABASE drops its tables too (kept, marked dropped, under the default policy).
    lake.ddl(100, "doomed", None, "CREATE", "CREATE DATABASE doomed")
    lake.ddl(101, "doomed", "t", "CREATE", "CREATE TABLE doomed.t (id INT PRIMARY KEY)")
    lake.dml(110, "doomed", "t", "I", {"id": 1})
    lake.ddl(160, "doomed", None, "ERASE", "DROP DATABASE doomed")


def test_every_ddl_kind_under_default_policies(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    lake = ApplyLake(spark, lake_home, tmp_path)
    _default_policy_events(lake)
    lake.land(WATERMARK)
    run_apply(spark, lake.config, lake.pipeline, "run-1")

    assert lake.columns("shop", "added") == [("id", "int"), ("c", "int"), ("a", "int")]
    assert lake.content("shop", "added") == [(1, 7, 1), (2, 9, 2)]
    assert lake.identifier("shop", "added") == "[id]"
    assert lake.columns("shop", "multi") == [("id", "int"), ("a2", "bigint"), ("n", "string")]
    assert lake.content("shop", "multi") == [(1, 5, "42"), (2, 6, "43x")]
    assert lake.columns("shop", "keys") == [("id", "int"), ("v", "int")]
    assert lake.content("shop", "keys") == [(1, 5), (2, 2)]
    assert lake.identifier("shop", "keys") == "[id]"
    assert not lake.exists("shop", "old")
    assert lake.content("shop", "new") == [(1, 1), (2, 2)]
    assert lake.content("shop", "trunc") == [(3,)]
    assert lake.content("shop", "gone") == [(1,)]
    assert not lake.exists("shop", "gone__dropped_130")
    assert lake.columns("shop", "again") == [("id", "int"), ("z", "string")]
    assert lake.content("shop", "again") == [(5, "z")]
    assert lake.content("shop", "again__dropped_120") == [(1, 1)]
    namespaces = {r[0] for r in spark.sql("SHOW NAMESPACES IN lake").collect()}
    assert lake.namespace("made") in namespaces
    assert lake.namespace("brief") not in namespaces
    assert lake.content("doomed", "t") == [(1,)]
    assert lake.namespace("doomed") in namespaces
    assert spark.sql(f"SHOW TBLPROPERTIES {lake.table('doomed', 't')} ('ticdc.dropped-at')").first()[1] == "160"

    ledger = lake.ledger("run-1")
    assert ledger["shop.added"] == (
        "APPLIED",
        "DDL CREATE at 100 (CREATE TABLE); DDL ALTER at 120 (ADD COLUMN c (existing rows: '7'))",
    )
    assert ledger["shop.multi"][0] == "APPLIED"
    assert ledger["shop.multi"][1] == (
        "DDL CREATE at 100 (CREATE TABLE); DDL ALTER at 120 (DROP COLUMN b, RENAME COLUMN a TO a2, "
        "COLUMN a2 TYPE long, COLUMN n KEPT AS STRING, "
        "column 'n' kept as string (int -> string, on_incompatible_type_change))"
    )
    assert ledger["shop.gone"] == (
        "APPLIED",
        "DDL CREATE at 100 (CREATE TABLE); DDL ERASE at 130 (DROP TABLE (kept), kept with its data "
        "(on_drop_table: keep); a later CREATE of the name moves it to gone__dropped_130)",
    )
    assert (ledger["shop.again"][1] or "").endswith(
        f"DDL CREATE at 130 (CREATE TABLE, the dropped table kept under this name moved to "
        f"lake.{lake.namespace('shop')}.again__dropped_120)"
    )
    assert {k: v[0] for k, v in ledger.items()} == dict.fromkeys(
        [
            "shop.added",
            "shop.multi",
            "shop.keys",
            "shop.old",
            "shop.new",
            "shop.trunc",
            "shop.gone",
            "shop.again",
            "doomed.t",
        ],
        "APPLIED",
    )

    # A re-run over the same landed events is a no-op.
    run_apply(spark, lake.config, lake.pipeline, "run-2")
    assert {v[0] for v in lake.ledger("run-2").values()} == {"NOOP"}
    assert lake.content("shop", "added") == [(1, 7, 1), (2, 9, 2)]
    assert lake.content("shop", "new") == [(1, 1), (2, 2)]
    assert lake.content("shop", "again") == [(5, "z")]


def test_fail_and_drop_policies_and_a_crash_inside_a_ddl(spark: Any, lake_home: Path, tmp_path: Path) -> None:
    lake = ApplyLake(
        spark, lake_home, tmp_path, policies={"on_incompatible_type_change": "fail", "on_drop_table": "drop"}
    )
    _create(lake, 100, "strict", "id INT PRIMARY KEY, n INT")
    lake.dml(110, "shop", "strict", "I", {"id": 1, "n": 1})
    _create(lake, 100, "gone", "id INT PRIMARY KEY")
    lake.dml(110, "shop", "gone", "I", {"id": 1})
    _create(lake, 100, "crashy", "id INT PRIMARY KEY, a INT")
    lake.dml(110, "shop", "crashy", "I", {"id": 1, "a": 1})
    lake.land(115)
    run_apply(spark, lake.config, lake.pipeline, "run-1")
    # A crash inside ADD COLUMN: the column was added, the default fill and the position were not.
    spark.sql(f"ALTER TABLE {lake.table('shop', 'crashy')} ADD COLUMN c INT")

    lake.ddl(120, "shop", "strict", "ALTER", "ALTER TABLE strict MODIFY n VARCHAR(20)")
    lake.dml(130, "shop", "strict", "I", {"id": 2, "n": "x"})
    lake.ddl(140, "shop", "strict2", "RENAME", "RENAME TABLE strict TO strict2")
    lake.ddl(130, "shop", "gone", "ERASE", "DROP TABLE gone")
    _create(lake, 100, "bad", "id INT PRIMARY KEY")
    lake.dml(110, "shop", "bad", "I", {"id": 1})
    lake.ddl(120, "shop", "bad", "ALTER", "ALTER TABLE bad FROBNICATE x", schema_error="sqlglot cannot parse it")
    lake.dml(130, "shop", "bad", "I", {"id": 2})
    lake.ddl(120, "shop", "crashy", "ALTER", "ALTER TABLE crashy ADD COLUMN c INT DEFAULT 3")
    lake.dml(130, "shop", "crashy", "I", {"id": 2, "a": 2, "c": 4})
    _create(lake, 100, "other", "id INT PRIMARY KEY")
    lake.dml(130, "shop", "other", "I", {"id": 1})
    # DROP DATABASE under on_drop_table: drop purges its tables and the namespace.
    lake.ddl(120, "doomed", None, "CREATE", "CREATE DATABASE doomed")
    lake.ddl(121, "doomed", "t", "CREATE", "CREATE TABLE doomed.t (id INT PRIMARY KEY)")
    lake.dml(130, "doomed", "t", "I", {"id": 1})
    lake.ddl(160, "doomed", None, "ERASE", "DROP DATABASE doomed")
    lake.land(WATERMARK, "run-2")
    summary = run_apply(spark, lake.config, lake.pipeline, "run-2")

    assert lake.content("shop", "strict") == [(1, 1)]
    assert lake.columns("shop", "strict") == [("id", "int"), ("n", "int")]
    held = (
        "DDL ALTER at commit ts 120 on shop.strict ('ALTER TABLE strict MODIFY n VARCHAR(20)'): column 'n' changes "
        "from Iceberg type int to string, which Iceberg cannot do in place; set "
        "policies.on_incompatible_type_change to keep_as_string to keep the column as text"
    )
    assert lake.ledger("run-2")["shop.strict"] == ("HELD", held)
    assert set(summary.held) == {"shop.strict", "shop.strict2", "shop.bad"}
    assert lake.ledger("run-2")["shop.strict2"] == ("HELD", "DDL RENAME at commit ts 140 waits for shop.strict")
    assert not lake.exists("shop", "strict2")
    assert lake.content("shop", "bad") == [(1,)]
    assert lake.ledger("run-2")["shop.bad"] == (
        "HELD",
        "DDL CREATE at 100 (CREATE TABLE); DDL ALTER at commit ts 120 on shop.bad ('ALTER TABLE bad FROBNICATE x'): "
        "its schema could not be derived: sqlglot cannot parse it",
    )
    assert not lake.exists("shop", "gone")
    assert not lake.exists("shop", "gone__dropped_130")
    assert lake.columns("shop", "crashy") == [("id", "int"), ("a", "int"), ("c", "int")]
    assert lake.content("shop", "crashy") == [(1, 1, 3), (2, 2, 4)]
    assert lake.content("shop", "other") == [(1,)]
    assert not lake.exists("doomed", "t")
    assert lake.namespace("doomed") not in {r[0] for r in spark.sql("SHOW NAMESPACES IN lake").collect()}
