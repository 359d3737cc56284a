"""Open Protocol column values: type texts, canonical values, Go unquoting (docs/type-mapping.md, protocols.md)."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

import pytest

from ticdc_lake.protocols.open_framing import JsonNumberText
from ticdc_lake.protocols.open_values import canonical_value, column_type_text, go_unquote

UTC = ZoneInfo("UTC")
SHANGHAI = ZoneInfo("Asia/Shanghai")
BINARY, UNSIGNED = 1, 128

TYPE_TEXTS = [
    (1, 0, "tinyint"), (1, UNSIGNED, "tinyint unsigned"), (2, 0, "smallint"), (3, BINARY | UNSIGNED, "int unsigned"),
    (4, 0, "float"), (5, UNSIGNED, "double unsigned"), (7, BINARY, "timestamp"), (8, UNSIGNED, "bigint unsigned"),
    (9, 0, "mediumint"), (10, BINARY, "date"), (11, 0, "time"), (12, 0, "datetime"), (13, UNSIGNED, "year"),
    (14, 0, "date"), (15, 0, "varchar"), (15, BINARY, "varbinary"), (16, UNSIGNED, "bit"), (225, 0, "vector"),
    (245, BINARY, "json"), (246, 0, "decimal"), (246, UNSIGNED, "decimal unsigned"), (247, 0, "enum"),
    (248, 0, "set"), (249, 0, "tinytext"), (249, BINARY, "tinyblob"), (250, 0, "mediumtext"),
    (250, BINARY, "mediumblob"), (251, 0, "longtext"), (251, BINARY, "longblob"), (252, 0, "text"),
    (252, BINARY, "blob"), (253, 0, "var_string"), (253, BINARY, "varbinary"), (254, 0, "char"),
    (254, BINARY, "binary"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "flags", "text"), TYPE_TEXTS)
def test_column_type_text(code: int, flags: int, text: str) -> None:
    assert column_type_text(code, flags) == text


def test_unsupported_and_unknown_type_codes() -> None:
    with pytest.raises(ValueError, match="geometry") as info:
        column_type_text(255, 0)
    assert str(info.value) == (
        "MySQL type code 255 (geometry) is not supported by the decoder; exclude the table from the pipeline "
        "(target.exclude) or ask for the type to be supported"
    )
    with pytest.raises(ValueError, match=r"\(NULL\)") as info:
        column_type_text(6, 0)
    assert str(info.value).startswith("MySQL type code 6 (NULL) is not supported")
    with pytest.raises(ValueError, match="unknown MySQL type code 100") as info:
        column_type_text(100, 0)
    assert str(info.value) == (
        "unknown MySQL type code 100: not a code TiCDC sends (docs/type-mapping.md lists them); "
        "exclude the table from the pipeline (target.exclude) or ask for the type to be supported"
    )


VALUES = [
    (1, 0, -128, "-128"),
    (1, UNSIGNED, 255, "255"),
    (2, 0, 32767, "32767"),
    (9, UNSIGNED, 16777215, "16777215"),
    (3, UNSIGNED, 4294967295, "4294967295"),
    (8, 0, -9223372036854775808, "-9223372036854775808"),
    (8, UNSIGNED | BINARY, 18446744073709551615, "18446744073709551615"),
    (13, UNSIGNED, 2023, "2023"),
    (13, 0, 0, "0"),
    (16, UNSIGNED, 18446744073709551615, "18446744073709551615"),
    (16, UNSIGNED, 65, "65"),
    (4, 0, JsonNumberText("3.14"), "3.14"),
    (4, 0, JsonNumberText("1e-07"), "1e-07"),
    (5, 0, JsonNumberText("2.718281828459045"), "2.718281828459045"),
    (5, 0, JsonNumberText("1e+21"), "1e+21"),
    (5, 0, 90, "90"),
    (246, 0, "179394.233300", "179394.233300"),
    (246, 0, "-0.10", "-0.10"),
    (10, BINARY, "2023-11-30", "2023-11-30"),
    (10, BINARY, "0000-00-00", "0000-00-00"),
    (14, 0, "2023-11-30", "2023-11-30"),
    (12, BINARY, "2023-11-30 12:34:56.123", "2023-11-30 12:34:56.123"),
    (11, BINARY, "-838:59:59.000000", "-838:59:59.000000"),
    (7, BINARY, "1973-12-30 15:30:00", "1973-12-30T15:30:00Z"),
    (7, BINARY, "0000-00-00 00:00:00", "0000-00-00 00:00:00"),
    (245, BINARY, '{"k": "v"}', '{"k": "v"}'),
    (225, 0, "[1,2,3]", "[1,2,3]"),
    (247, 0, 2, "2"),
    (247, 0, 0, "0"),
    (248, 0, 5, "5"),
    (15, 0, "日本語 \\x00", "日本語 \\x00"),
    (254, 0, "abc", "abc"),
    (253, 0, "", ""),
    (15, BINARY, '\\x00\\"\\\\\\xff\\xfe', "ACJc//4="),
    (254, BINARY, "abc", "YWJj"),
    (254, BINARY, "", ""),
    (252, 0, "5pel5pys6Kqe8J+Zgg==", "日本語🙂"),
    (249, 0, "", ""),
    (252, BINARY, "//4AgA==", "//4AgA=="),
    (251, BINARY, "QR==", "QQ=="),
]


@pytest.mark.parametrize(("code", "flags", "value", "text"), VALUES)
def test_canonical_values(code: int, flags: int, value: object, text: str) -> None:
    assert canonical_value(code, flags, value, UTC) == text


def test_timestamp_is_server_local_time() -> None:
    assert canonical_value(7, BINARY, "2024-01-01 08:00:00.250", SHANGHAI) == "2024-01-01T00:00:00.250Z"
    assert canonical_value(7, BINARY, "2024-01-01 00:00:00", SHANGHAI) == "2023-12-31T16:00:00Z"


BAD_VALUES = [
    (1, 0, 128, "128 is outside the range -128..127"),
    (1, UNSIGNED, -1, "-1 is outside the range 0..255"),
    (8, UNSIGNED, 18446744073709551616, "18446744073709551616 is outside the range 0..18446744073709551615"),
    (8, 0, "1", 'expected a JSON integer, got string "1"'),
    (3, 0, True, "expected a JSON integer, got true"),
    (3, 0, JsonNumberText("1.5"), "expected a JSON integer, got number 1.5"),
    (13, 0, 2156, "2156 is outside the range 0..2155"),
    (247, 0, -1, "-1 is outside the range 0..18446744073709551615"),
    (4, 0, "3.14", 'expected a JSON number, got string "3.14"'),
    (246, 0, JsonNumberText("1.5"), "expected a JSON string, got number 1.5"),
    (246, 0, "1e5", "'1e5' is not a decimal number"),
    (10, 0, "2023-13-01", "'2023-13-01' is not a DATE value YYYY-MM-DD"),
    (7, 0, "2023-02-29 00:00:00", "'2023-02-29 00:00:00' is not a valid time in UTC (day is out of range for month)"),
    (252, 0, "not base64!", "'not base64!' is not standard padded base64 (Only base64 data is allowed)"),
    (252, 0, "/w==", "the base64 text decodes to bytes that are not UTF-8 ('utf-8' codec can't decode byte 0xff "
     "in position 0: invalid start byte)"),
    (15, BINARY, "a\\qb", "invalid escape \\q at character 1 in Go-quoted string"),
    (15, BINARY, 'a"b', "unescaped '\"' at character 1 in Go-quoted string"),
    (15, BINARY, "ab\\", "Go-quoted string ends with a lone backslash at character 2"),
    (15, BINARY, "\\x4", "escape \\x at character 0 needs 2 hex digits, got '4'"),
    (15, 0, 5, "expected a JSON string, got number 5"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "flags", "value", "reason"), BAD_VALUES)
def test_bad_values(code: int, flags: int, value: object, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)) as info:
        canonical_value(code, flags, value, UTC)
    assert str(info.value) == reason


GO_QUOTED = [
    ("plain", b"plain"),
    ("日本", "日本".encode()),
    ("\\x00\\x01\\xff", b"\x00\x01\xff"),
    ('\\"\\\\', b'"\\'),
    ("\\a\\b\\f\\n\\r\\t\\v", b"\x07\x08\x0c\n\r\t\x0b"),
    ("\\u00a0\\u200b", "\u00a0\u200b".encode()),
    ("\\U0001f600", "\U0001f600".encode()),
    ("\\377\\000", b"\xff\x00"),
    ("'", b"'"),
    ("", b""),
]


@pytest.mark.parametrize(("quoted", "raw"), GO_QUOTED)
def test_go_unquote(quoted: str, raw: bytes) -> None:
    assert go_unquote(quoted) == raw


@pytest.mark.parametrize(
    ("quoted", "reason"),
    [
        ("\\'", "invalid escape \\' at character 0 in Go-quoted string"),
        ("a\nb", "unescaped '\\n' at character 1 in Go-quoted string"),
        ("\\ud800", "escape \\ud800 at character 0 is not a valid rune"),
        ("\\U00110000", "escape \\U00110000 at character 0 is not a valid rune"),
        ("\\400", "invalid octal escape \\400 at character 0 in Go-quoted string"),
        ("\\12", "invalid octal escape \\12 at character 0 in Go-quoted string"),
        ("x\ud800", "lone surrogate at character 1 in Go-quoted string"),
    ],
)
def test_go_unquote_rejects(quoted: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)) as info:
        go_unquote(quoted)
    assert str(info.value) == reason
