"""ARCHITECTURE.md's rule → module table names code that exists, and no file cites a document
the repository does not hold.

Both tests are static (imports and text only, no JVM): the table's modules are imported, the
``ticdc_lake.spark`` ones included, which loads pyspark's Python code but starts no Spark.
"""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
RULES_HEADING = "## Correctness rules and where they live"
#: A table row whose second and third cells are one backticked name each.
ROW = re.compile(r"^\|(?P<rule>[^|]+)\|\s*`(?P<module>[\w.]+)`\s*\|\s*`(?P<function>[\w.]+)`\s*\|\s*$")

#: Citations of documents outside the repository: the shared design document and protocol
#: reference by name and section, and any path into the shared folder next to the repository.
OUTSIDE = re.compile(
    r"\.\./shared"
    r"|/work/shared"
    r"|ARCHITECTURE\.md\s*§"
    r"|ARCHITECTURE\s*(?:§|\d+(?:\.\d+)*\b)"
    r"|REFERENCE(?:\.md)?\s*§"
    r"|\bREFERENCE\.md"
    r"|shared ARCHITECTURE"
    r"|seed doc \d+"
    r"|\bseeds/\d"
)
TEXT_SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".txt", ".in", ".json", ".sql"}
TEXT_NAMES = {"Makefile", "Dockerfile"}


def _rules() -> list[tuple[str, str, str]]:
    """(rule, module, function) of every row of the rule → module table."""
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    start = lines.index(RULES_HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    table = [line for line in lines[start:end] if line.startswith("|")]
    assert table[0] == "| rule | module | function |", table[0]
    assert set(table[1]) <= {"|", "-"}, table[1]
    rows = []
    for line in table[2:]:
        match = ROW.match(line)
        assert match, f"ARCHITECTURE.md: a rule row must name one module and one function: {line}"
        rows.append((match["rule"].strip(), match["module"], match["function"]))
    return rows


RULES = _rules()


def test_the_table_has_one_row_per_rule() -> None:
    assert len(RULES) >= 15
    assert len({rule for rule, _, _ in RULES}) == len(RULES)


@pytest.mark.parametrize(("rule", "module", "function"), RULES, ids=[f"{m}.{f}" for _, m, f in RULES])
def test_each_rule_names_a_module_that_defines_the_function(rule: str, module: str, function: str) -> None:
    assert module.startswith("ticdc_lake."), f"{module}: the rules live in the domain library"
    loaded = importlib.import_module(module)
    target: object = loaded
    for part in function.split("."):
        assert hasattr(target, part), f"{module} defines no {function} (rule: {rule})"
        target = getattr(target, part)
    assert callable(target), f"{module}.{function} is not a function (rule: {rule})"
    owner = loaded if "." not in function else getattr(loaded, function.split(".")[0])
    assert getattr(owner, "__module__", module) == module, f"{module}.{function} is imported, not defined there"


def test_every_link_of_the_page_opens_a_file_of_the_repository() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)\)", text)
    assert "docs/exactly-once.md" in targets
    assert [t for t in targets if not (ROOT / t).exists()] == []


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    files = [ROOT / name for name in listed.split("\0") if name]
    return [f for f in files if f.is_file() and (f.suffix in TEXT_SUFFIXES or f.name in TEXT_NAMES)]


def _citations(text: str) -> list[str]:
    """``<line number>: <line>`` of each citation, found across line breaks too (``ARCHITECTURE`` / ``4.4``)."""
    lines = text.splitlines()
    numbers = [text.count("\n", 0, match.start()) + 1 for match in OUTSIDE.finditer(text)]
    return [f"{number}: {lines[number - 1].strip()}" for number in numbers]


def test_no_file_cites_a_document_outside_the_repository() -> None:
    here = Path(__file__).resolve()
    citations = [
        f"{path.relative_to(ROOT)}:{citation}"
        for path in _tracked_text_files()
        if path.resolve() != here
        for citation in _citations(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert citations == []


@pytest.mark.parametrize(
    "line",
    [
        "see ../shared/protocols/REFERENCE.md",
        'VECTORS = Path("/work/shared/protocols/tiflow-vectors")',
        "(ARCHITECTURE 4.4)",
        "ARCHITECTURE §4.5",
        "(REFERENCE §0.3 lists the codes TiCDC sends)",
        "REFERENCE §2.1/§2.6",
        "The contracts are in the shared ARCHITECTURE document",
        "seed doc 003: FLOAT maps to Avro `double`",
        "(seeds/000_8d782687f6690f6e.txt), verbatim",
    ],
)
def test_the_citation_pattern_catches_each_form_seen_before(line: str) -> None:
    assert OUTSIDE.search(line)


def test_a_citation_broken_across_lines_is_found_on_its_first_line() -> None:
    text = "intro\n**per-partition Kafka offset order**, weaker than the apply of ARCHITECTURE\n4.4 (watermarks).\n"
    assert _citations(text) == ["2: **per-partition Kafka offset order**, weaker than the apply of ARCHITECTURE"]


@pytest.mark.parametrize(
    "line",
    [
        "Read [ARCHITECTURE.md](ARCHITECTURE.md) first.",
        "FOREIGN KEY (a) REFERENCES p (id)",
        "docs/type-mapping.md lists the type names TiCDC sends",
    ],
)
def test_the_citation_pattern_leaves_our_own_documents_alone(line: str) -> None:
    assert not OUTSIDE.search(line)
