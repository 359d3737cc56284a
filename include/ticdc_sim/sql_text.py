"""Just enough MySQL statement text handling for telling a DDL's TiDB action type.

Quote-aware (``'…'``, ``"…"``, backquoted names with ``````) and comment-aware (``/* … */``,
TiDB's special comments) scanning, without a SQL parser: the simulator produces the statements it
reads, so the shapes are known; a full parser lives on the decoding side.
"""

from __future__ import annotations


def strip_comments(sql: str) -> str:
    """``sql`` without ``/* … */`` comments (TiDB's special comments included) outside quotes."""
    out: list[str] = []
    position = 0
    quote = ""
    while position < len(sql):
        char = sql[position]
        if quote:
            out.append(char)
            if char == "\\" and quote != "`" and position + 1 < len(sql):
                out.append(sql[position + 1])
                position += 1
            elif char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
            out.append(char)
        elif sql.startswith("/*", position):
            end = sql.find("*/", position + 2)
            position = len(sql) if end < 0 else end + 2
            out.append(" ")
            continue
        else:
            out.append(char)
        position += 1
    return "".join(out)


def split_top_level(text: str) -> list[str]:
    """``text`` split at commas outside parentheses and quotes, each part stripped (empty ones dropped)."""
    parts: list[str] = []
    depth = 0
    quote = ""
    start = 0
    position = 0
    while position < len(text):
        char = text[position]
        if quote:
            if char == "\\" and quote != "`":
                position += 1
            elif char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:position].strip())
            start = position + 1
        position += 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def skip_name(text: str, position: int) -> str:
    """What follows the (maybe qualified, maybe backquoted) name starting at ``position``, stripped."""
    while True:
        if text.startswith("`", position):
            end = position + 1
            while True:
                end = text.find("`", end)
                if end < 0:
                    return ""
                if text.startswith("``", end):
                    end += 2
                    continue
                break
            position = end + 1
        else:
            while position < len(text) and not text[position].isspace() and text[position] not in ".,(":
                position += 1
        if text.startswith(".", position):
            position += 1
            continue
        return text[position:].strip()


def rename_pairs(sql: str) -> list[str]:
    """The ``old TO new`` pairs of a ``RENAME TABLE`` statement (one for ``ALTER TABLE … RENAME``)."""
    words = " ".join(strip_comments(sql).split())
    if not words.upper().startswith("RENAME TABLE "):
        return [words]
    return split_top_level(words[len("RENAME TABLE ") :])
