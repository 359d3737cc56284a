"""``ticdc-lake decode``: raw messages as JSON lines in, one JSON line per event out."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import cramjam
import pytest

from ticdc_lake.cli.main import main

VECTORS = Path(__file__).with_name("simple_json_messages.jsonl")
PROJECT = Path(__file__).resolve().parents[3]
TS = 447984084414103554
VERSION = 447984074911121426
ORDER = {"id": "1", "note": "日本語", "placed": "2024-01-01T00:00:00Z"}
VERSION_ERROR = {
    "line": 5,
    "topic": "tidb-orders",
    "partition": 2,
    "offset": 104,
    "error": "simple-json: unsupported protocol version number 2 in field 'version'; this decoder reads Simple "
    "protocol version 1",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    code = main(["decode", *argv])
    captured = capsys.readouterr()
    return code, _lines(captured.out), _lines(captured.err)


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def line(value: bytes | None, offset: int = 0, **extra: Any) -> str:
    doc = {"topic": "t", "partition": 0, "offset": offset, "key": None, **extra}
    doc["value"] = None if value is None else base64.b64encode(value).decode()
    return json.dumps(doc)


def write(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "messages.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_every_event_is_printed_and_bad_lines_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, events, errors = run(capsys, "--protocol", "simple-json", str(VECTORS))
    assert code == 1
    assert [(e["kind"], e["op"], e["position"]["offset"]) for e in events] == [
        ("DML", "I", 100),
        ("BOOTSTRAP", None, 101),
        ("DML", "U", 102),
        ("WATERMARK", None, 103),
    ]
    insert = events[0]
    assert insert == {
        "kind": "DML",
        "position": {"topic": "tidb-orders", "partition": 2, "offset": 100, "index": 0},
        "commit_ts": TS,
        "database": "shop",
        "table": "orders",
        "table_id": 112,
        "op": "I",
        "schema_version": VERSION,
        "before": None,
        "after": ORDER,
        "column_types": None,
        "ddl_type": None,
        "ddl_query": None,
        "table_schema": None,
        "pre_table_schema": None,
        "handle_key_only": False,
        "claim_check": False,
        "status": "READY",
        "pending_payload": None,
        "facts": {},
        "schema_error": None,
        "pending_reason": None,
        "unknown_columns": None,
    }
    assert events[1]["table_schema"]["version"] == VERSION
    assert [c["name"] for c in events[1]["table_schema"]["columns"]] == ["id", "note", "placed"]
    assert (events[2]["before"], events[2]["after"]) == (ORDER, {"id": "1", "note": "paid", "placed": None})
    assert errors == [VERSION_ERROR]


def test_all_good_lines_exit_zero_and_stdin_works(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = VECTORS.read_text(encoding="utf-8").splitlines()[:4]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(good) + "\n\n"))
    code, events, errors = run(capsys, "--protocol", "simple-json", "-")
    assert (code, len(events), errors) == (0, 4, [])


def test_schema_history_resolves_rows_without_a_bootstrap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = VECTORS.read_text(encoding="utf-8").splitlines()
    code, events, _ = run(capsys, "--protocol", "simple-json", str(VECTORS))
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps(events[1]["table_schema"]) + "\n\n", encoding="utf-8")
    only_dml = write(tmp_path, lines[0])
    code, events, errors = run(capsys, "--protocol", "simple-json", only_dml)
    assert (code, events[0]["status"], events[0]["after"], errors) == (0, "PENDING", None, [])
    code, events, errors = run(capsys, "--protocol", "simple-json", "--schema-history", str(history), only_dml)
    assert (code, events[0]["status"], events[0]["after"], errors) == (0, "READY", ORDER, [])


def test_codec_options_reach_the_decoder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"isDdl": False, "type": "TIDB_WATERMARK", "_tidb": {"watermarkTs": TS}}
    packed = bytes(cramjam.snappy.compress_raw(json.dumps(doc).encode()))
    file = write(tmp_path, line(packed, headers=[["h", "eA=="]], timestamp=5))
    code, events, errors = run(capsys, "--protocol", "canal-json", "--option", "compression=snappy", file)
    assert (code, [(e["kind"], e["commit_ts"]) for e in events], errors) == (0, [("WATERMARK", TS)], [])
    code, events, errors = run(capsys, "--protocol", "canal-json", file)
    assert (code, events) == (1, [])
    assert errors == [
        {
            "line": 1,
            "topic": "t",
            "partition": 0,
            "offset": 0,
            "error": "canal-json: the value is a snappy block, but codec.compression is none: the changefeed "
            "compresses its messages (large-message-handle-compression=snappy); set the pipeline's "
            "codec.compression to snappy",
        }
    ]


def test_claim_check_through_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stored = {"isDdl": False, "type": "TIDB_WATERMARK", "_tidb": {"watermarkTs": TS}}
    row = {
        "id": 0,
        "database": "shop",
        "table": "orders",
        "pkNames": ["id"],
        "isDdl": False,
        "type": "DELETE",
        "mysqlType": {"id": "int", "note": "varchar"},
        "data": [{"id": "1", "note": "long text"}],
        "old": None,
        "_tidb": {"commitTs": TS},
    }
    claims = tmp_path / "claims"
    claims.mkdir()
    value = base64.b64encode(json.dumps(row).encode()).decode()
    (claims / "a.json").write_text(json.dumps({"key": None, "value": value}))  # as TiCDC's claimcheck writes it
    reference = {**row, "data": [{"id": "1"}], "_tidb": {"commitTs": TS, "claimCheckLocation": "s3://b/cf/a.json"}}
    file = write(tmp_path, line(json.dumps(reference).encode(), offset=7), line(json.dumps(stored).encode(), 8))
    option = f"claim_check_storage_uri=file://{claims}"
    code, events, errors = run(capsys, "--protocol", "canal-json", "--option", option, file)
    assert (code, errors) == (0, [])
    assert (events[0]["claim_check"], events[0]["before"], events[0]["position"]["offset"]) == (
        True,
        {"id": "1", "note": "long text"},
        7,
    )


def test_input_lines_that_are_not_raw_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = write(
        tmp_path,
        "not json",
        "[1]",
        json.dumps({"topic": "t", "partition": "0", "offset": 1}),
        json.dumps({"topic": "t", "partition": 0, "offset": 1, "value": "%%%"}),
        json.dumps({"topic": "t", "partition": 0, "offset": 1, "headers": 5}),
        json.dumps({"partition": 0, "offset": 1}),
    )
    code, events, errors = run(capsys, "--protocol", "simple-json", file)
    assert (code, events) == (1, [])
    assert errors == [
        {"line": 1, "error": "not a raw message: invalid JSON (Expecting value: line 1 column 1 (char 0))"},
        {"line": 2, "error": "not a raw message: expected a JSON object with topic, partition, offset, key and value"},
        {"line": 3, "error": "not a raw message: 'partition' must be a non-negative integer, got '0'"},
        {"line": 4, "error": "not a raw message: 'value' is not standard base64 (Only base64 data is allowed)"},
        {
            "line": 5,
            "error": "not a raw message: 'headers' must be [[name, base64 or null], ...] or {name: base64 or null}",
        },
        {"line": 6, "error": "not a raw message: 'topic' must be a string, got None"},
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--option", "compresion=lz4"],
            "error: --option compresion: unknown codec option (known: enable_tidb_extension, compression, "
            "claim_check_storage_uri, claim_check_raw_value, server_time_zone)",
        ),
        (
            ["--option", "server-time-zone=Mars/Base"],
            "error: --option server_time_zone: unknown IANA time zone 'Mars/Base'",
        ),
        (
            ["--option", "compression=zstd"],
            "error: --option compression: Input should be 'none', 'snappy' or 'lz4'",
        ),
        (
            ["--option", "compression"],
            "error: --option 'compression': expected KEY=VALUE, e.g. --option compression=snappy",
        ),
    ],
)
def test_bad_options_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code = main(["decode", "--protocol", "simple-json", *argv, str(VECTORS)])
    assert (code, capsys.readouterr().err.strip()) == (2, message)


def test_missing_files_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decode", "--protocol", "simple-json", str(tmp_path / "nope.jsonl")]) == 2
    assert "No such file or directory" in capsys.readouterr().err
    bad = tmp_path / "history.jsonl"
    bad.write_text('{"database": "shop"}\n', encoding="utf-8")
    assert main(["decode", "--protocol", "simple-json", "--schema-history", str(bad), str(VECTORS)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {bad}:1: not a table schema JSON line (KeyError: 'columns'); --schema-history takes the "
        "table_schema column of ticdc_system.schema_history, one per line"
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["decode", "--protocol", "nope", str(VECTORS)])
    assert exit_info.value.code == 2


def test_the_installed_command(tmp_path: Path) -> None:
    command = PROJECT / ".venv" / "bin" / "ticdc-lake"
    if not command.exists():
        pytest.skip("the project is not installed in .venv")
    done = subprocess.run(
        [str(command), "decode", "--protocol", "simple-json", str(VECTORS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert [json.loads(text)["kind"] for text in done.stdout.splitlines()] == ["DML", "BOOTSTRAP", "DML", "WATERMARK"]
    assert [json.loads(text) for text in done.stderr.splitlines()] == [VERSION_ERROR]


def test_avro_reads_writer_schemas_from_a_landed_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], schema_registry_url: str
) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
    from ticdc_sim.avro_confluent_encoder import AvroConfluentEncoder
    from ticdc_sim.model import DmlOp, RowChange

    client = SchemaRegistryClient({"url": schema_registry_url})
    topic = f"cli-avro-{tmp_path.name}".replace("_", "-")
    encoder = AvroConfluentEncoder(
        "UTC", register=lambda subject, text: client.register_schema(subject, Schema(text, "AVRO")), topic=topic
    )
    schema = TableSchema(
        "shop",
        "orders",
        (ColumnSchema("id", "bigint", nullable=False), ColumnSchema("note", "varchar", length=20)),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
        table_id=7,
        version=1,
    )
    change = RowChange(DmlOp.INSERT, "shop", "orders", None, {"id": 9, "note": "日本語"})
    encoded = encoder.encode_row(change, schema, TS, 1)
    assert encoded.key is not None
    ids = {int.from_bytes(part[1:5], "big") for part in (encoded.key, encoded.value)}
    folder = tmp_path / "registry"
    folder.mkdir()
    for schema_id in ids:
        text = client.get_schema(schema_id).schema_str
        assert text is not None
        (folder / f"{schema_id}.json").write_text(text)
    doc = {
        "topic": topic,
        "partition": 0,
        "offset": 3,
        "key": base64.b64encode(encoded.key).decode(),
        "value": base64.b64encode(encoded.value).decode(),
    }
    messages = write(tmp_path, json.dumps(doc))

    code, events, errors = run(capsys, "--protocol", "avro", "--writer-schemas", str(folder), messages)
    assert (code, errors) == (0, [])
    assert [(e["kind"], e["op"], e["commit_ts"], e["after"]) for e in events] == [
        ("DML", "I", TS, {"id": "9", "note": "日本語"})
    ]

    code, events, errors = run(capsys, "--protocol", "avro", messages)
    assert (code, events) == (1, [])
    assert "re-run land or check the registry" in errors[0]["error"]


def test_ddl_text_is_folded_in_commit_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Canal-JSON sends DDL as SQL only: an ALTER's event carries the schema after the CREATE and itself."""
    from ticdc_sim.canal_json_encoder import CanalJsonEncoder
    from ticdc_sim.catalog import column
    from ticdc_sim.simulator import TicdcSimulator

    sim = TicdcSimulator(seed=3, partitions=1, encoder=CanalJsonEncoder("UTC"))
    sim.setup()
    database, table = sim.model.tables()[0]
    sim.add_column(database, table, column("priority", "int", nullable=False, default="3"))
    ddl = [m for m in sim.take() if m.kind == "DDL"]
    path = write(tmp_path, *(line(m.value, offset=i, key=None) for i, m in enumerate(ddl)))
    code, events, errors = run(capsys, "--protocol", "canal-json", path)
    assert (code, errors) == (0, [])
    alter = next(e for e in events if e["table"] == table and e["ddl_type"] == "ALTER")
    before = [c.name for c in sim.model.schema_history(database, table)[0][1].columns]
    assert [c["name"] for c in alter["pre_table_schema"]["columns"]] == before
    assert [c["name"] for c in alter["table_schema"]["columns"]] == [*before, "priority"]
    assert alter["table_schema"]["source"] == "canal-json-ddl"
