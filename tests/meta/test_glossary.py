"""The glossary (docs/architecture.md, "## Glossary") defines each term once."""

from __future__ import annotations

import re
from collections import Counter

from paths import REPO

# An entry's head: `- **term**: ...` at the start of a line, not nested.
_HEAD = re.compile(r"^- \*\*(.+?)\*\*:", re.M)
# A definition anywhere in the glossary, nested lists and later paragraphs included.
_DEFINITION = re.compile(r"\*\*(.+?)\*\*:")


def _glossary() -> str:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    return text.split("\n## Glossary\n", 1)[1].split("\n## ", 1)[0]


def _terms(head: str) -> list[str]:
    """`dataset / row` defines two terms; case and outer spaces do not make a term new."""
    return [term.strip().casefold() for term in head.split(" / ")]


def defined_twice(glossary: str) -> list[str]:
    """Terms that head two entries, or that two `**term**:` definitions define."""
    heads = Counter(term for head in _HEAD.findall(glossary) for term in _terms(head))
    definitions = Counter(term for found in _DEFINITION.findall(glossary) for term in _terms(found))
    return sorted(
        {t for t, n in heads.items() if n > 1} | {t for t, n in definitions.items() if n > 1}
    )


def test_each_glossary_term_is_defined_once() -> None:
    glossary = _glossary()
    assert len(_HEAD.findall(glossary)) >= 10, "docs/architecture.md: the glossary has no entries"
    twice = defined_twice(glossary)
    assert twice == [], (
        f"docs/architecture.md's glossary defines these terms more than once: {', '.join(twice)}; "
        "give each word one entry (one meaning), and name the other meaning otherwise"
    )


def test_a_term_defined_twice_is_found() -> None:
    assert defined_twice("- **plan**: power planning.\n- **Plan**: the schedule.\n") == ["plan"]
    assert defined_twice("- **dataset / row**: a file.\n- **row**: one input.\n") == ["row"]
    nested = "- **recording**: two formats:\n  - **script**: one.\n  - **Script**: two.\n"
    assert defined_twice(nested) == ["script"]
    assert defined_twice("- **cell**: one scenario × model, a **run** each.\n") == []
