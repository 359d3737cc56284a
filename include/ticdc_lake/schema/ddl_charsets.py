"""TiDB's character sets: default collations, bytes per character, and how a column settles them."""

from __future__ import annotations

BINARY = "binary"

#: TiDB's default collation per character set (TiDB uses the ``_bin`` ones by default).
DEFAULT_COLLATIONS = {
    "utf8mb4": "utf8mb4_bin",
    "utf8": "utf8_bin",
    "latin1": "latin1_bin",
    "ascii": "ascii_bin",
    "binary": "binary",
    "gbk": "gbk_bin",
    "gb18030": "gb18030_bin",
}
_MAXLEN = {"utf8mb4": 4, "utf8": 3, "latin1": 1, "ascii": 1, "binary": 1, "gbk": 2, "gb18030": 4}
#: Longest names first, so that ``utf8mb4_general_ci`` is not read as ``utf8``.
_BY_PREFIX = sorted([*DEFAULT_COLLATIONS, "utf8mb3"], key=len, reverse=True)


def normalize_charset(name: str | None) -> str | None:
    """Lower case; ``utf8mb3`` is TiDB's alias of ``utf8``."""
    if name is None:
        return None
    lowered = name.lower()
    return "utf8" if lowered == "utf8mb3" else lowered


def normalize_collation(name: str | None) -> str | None:
    if name is None:
        return None
    lowered = name.lower()
    return "utf8" + lowered.removeprefix("utf8mb3") if lowered.startswith("utf8mb3_") else lowered


def charset_of_collation(collation: str) -> str | None:
    """The character set a collation belongs to (``utf8mb4_general_ci`` → ``utf8mb4``), if known."""
    for charset in _BY_PREFIX:
        if collation == charset or collation.startswith(charset + "_"):
            return normalize_charset(charset)
    return None


def charset_maxlen(charset: str | None) -> int:
    """Bytes per character; TiDB's default ``utf8mb4`` when the character set is unknown."""
    return _MAXLEN.get(charset or "utf8mb4", 4)


def resolve_charset(
    charset: str | None,
    collation: str | None,
    default_charset: str | None,
    default_collation: str | None,
    binary_attribute: bool = False,
) -> tuple[str | None, str | None]:
    """(charset, collation) of a textual column, MySQL's rules.

    The column's own CHARACTER SET / COLLATE win; a collation alone names its character set;
    a character set alone takes its default collation (the ``_bin`` one with the ``BINARY``
    attribute); a column with neither takes the table's defaults. ``None`` means unknown (the
    table's or database's default, which the DDL text does not carry).
    """
    charset, collation = normalize_charset(charset), normalize_collation(collation)
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    if charset is None and collation is None:
        charset = normalize_charset(default_charset)
        if charset is None and default_collation is not None:
            charset = charset_of_collation(normalize_collation(default_collation) or "")
        table_collation = normalize_collation(default_collation)
        if table_collation is not None and charset_of_collation(table_collation) == charset and not binary_attribute:
            collation = table_collation
    if collation is None and charset is not None:
        collation = _bin_collation(charset) if binary_attribute else DEFAULT_COLLATIONS.get(charset)
    return charset, collation


def _bin_collation(charset: str) -> str:
    return BINARY if charset == BINARY else f"{charset}_bin"
