"""``encoder_for`` and the Go text helpers the Debezium, Canal-JSON and Open encoders share."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ticdc_lake.protocols.open_values import go_unquote
from ticdc_sim.canal_json_encoder import CanalJsonEncoder
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.encoders import encoder_for, supported_protocols
from ticdc_sim.go_text import (
    Members,
    RawJson,
    dumps,
    easyjson_string,
    encoding_json_float,
    format_float_e,
    go_quote_bytes,
    jsoniter_float,
    jsoniter_string,
)
from ticdc_sim.open_encoder import OpenEncoder
from ticdc_sim.simple_avro_encoder import SimpleAvroEncoder
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder
from ticdc_sim.simulator import MessageKind, TicdcSimulator


@pytest.mark.parametrize(
    ("protocol", "kind"),
    [
        ("simple-json", SimpleJsonEncoder),
        ("simple-avro", SimpleAvroEncoder),
        ("debezium", DebeziumEncoder),
        ("canal-json", CanalJsonEncoder),
        ("open", OpenEncoder),
    ],
)
def test_encoder_for_every_protocol(protocol: str, kind: type) -> None:
    encoder = encoder_for(protocol, "Asia/Shanghai")
    assert isinstance(encoder, kind)
    assert encoder.protocol == protocol
    assert protocol in supported_protocols()


def test_encoder_for_passes_options() -> None:
    debezium = encoder_for("debezium", disable_schema=True, enable_tidb_extension=False)
    assert isinstance(debezium, DebeziumEncoder)
    assert (debezium.disable_schema, debezium.has_watermark) == (True, False)
    canal = encoder_for("canal-json", "UTC", content_compatible=True)
    assert isinstance(canal, CanalJsonEncoder)
    assert (canal.content_compatible, canal.only_output_updated_columns, canal.has_watermark) == (True, True, True)


def test_encoder_for_refuses_unknown_protocols_and_options() -> None:
    with pytest.raises(ValueError, match=r"no encoder for protocol 'maxwell'; supported: simple-json, ") as raised:
        encoder_for("maxwell")
    assert all(protocol in str(raised.value) for protocol in ("simple-avro", "debezium", "canal-json", "open"))
    with pytest.raises(ValueError, match=r"'open': unsupported encoder options \['disable_schema'\]"):
        encoder_for("open", disable_schema=True)


def test_canal_ddl_goes_to_partition_zero_only() -> None:
    simulator = TicdcSimulator(seed=1, partitions=3, encoder=encoder_for("canal-json"))
    simulator.setup(create_databases=True)
    simulator.run_transactions(5)
    ddl_partitions = {m.partition for m in simulator.messages() if m.kind == MessageKind.DDL}
    watermark_partitions = {m.partition for m in simulator.messages() if m.kind == MessageKind.WATERMARK}
    assert (ddl_partitions, watermark_partitions) == ({0}, {0, 1, 2})


# ------------------------------------------------------------------------------ Go text helpers
def _numpy_e(value: float, bits: int) -> str:
    single = np.float32(value) if bits == 32 else np.float64(value)
    return str(np.format_float_scientific(single, unique=True, trim="-", exp_digits=2))


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 0))
def test_go_e_format_matches_numpy_shortest_digits(value: float) -> None:
    assert format_float_e(value, 64) == _numpy_e(value, 64)
    single = float(np.float32(value)) if abs(value) < 3.4e38 else 1.0
    if single != 0:
        assert format_float_e(single, 32) == _numpy_e(single, 32)


def test_json_float_forms() -> None:
    """encoding/json shortens ``e-07`` to ``e-7``; jsoniter does not; both switch at 1e-6 and 1e21."""
    cases = [
        (1e-7, 64, "1e-7", "1e-07"),
        (1e-6, 64, "0.000001", "0.000001"),
        (1e21, 64, "1e+21", "1e+21"),
        (1e20, 64, "100000000000000000000", "100000000000000000000"),
        (123456789.125, 32, "123456790", "123456790"),
        (1.5e-45, 32, "1e-45", "1e-45"),
        (9.999999974752427e-07, 32, "0.000001", "0.000001"),  # float32(1e-6) is not below float32(1e-6)
        (-2.5e-5, 64, "-0.000025", "-0.000025"),
    ]
    for value, bits, go_json, jsoniter in cases:
        assert (encoding_json_float(value, bits), jsoniter_float(value, bits)) == (go_json, jsoniter), value


def test_string_escapers() -> None:
    text = 'a<b>&"\\\n\r\t\x08\x0c\x00\x7f\u2028é'
    assert jsoniter_string(text) == '"a<b>&\\"\\\\\\n\\r\\t\\u0008\\u000c\\u0000\x7f\u2028é"'
    assert easyjson_string(text) == '"a\\u003cb\\u003e\\u0026\\"\\\\\\n\\r\\t\\u0008\\u000c\\u0000\x7f\\u2028é"'
    assert json.loads(jsoniter_string(text)) == json.loads(easyjson_string(text)) == text


def test_dumps_keeps_order_duplicates_and_raw_numbers() -> None:
    document = {"b": [1, None, True], "a": Members([("x", RawJson("1e-07")), ("x", "y")])}
    assert dumps(document, jsoniter_string) == '{"b":[1,null,true],"a":{"x":1e-07,"x":"y"}}'
    with pytest.raises(TypeError, match="format floats first"):
        dumps({"f": 1.5}, jsoniter_string)


def test_go_quote_matches_strconv_quote() -> None:
    assert go_quote_bytes(b'ab"\\') == 'ab\\"\\\\'
    assert go_quote_bytes(b"\x00\x07\x08\x0b\x1b\x7f") == "\\x00\\a\\b\\v\\x1b\\x7f"
    assert go_quote_bytes("é東🚀".encode()) == "é東🚀"
    assert go_quote_bytes(b"\xc2\xa0\xc2\xad\xe2\x80\xa8") == "\\u00a0\\u00ad\\u2028"
    assert go_quote_bytes(b"\xff\xfe\xed\xa0\x80\xc0\xaf") == "\\xff\\xfe\\xed\\xa0\\x80\\xc0\\xaf"
    assert go_quote_bytes("\U000e0001".encode()) == "\\U000e0001"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_go_quote_round_trips_through_go_unquote(data: bytes) -> None:
    assert go_unquote(go_quote_bytes(data)) == data
