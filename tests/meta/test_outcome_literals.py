"""Outcomes are named in one module: ``suite/_record.py``, where ``Outcome`` and its table of
traits (``OUTCOME_TRAITS``) live.

Everywhere else the code asks a trait (``record.measured``, ``traits.fails_command``) or
names a member (``Outcome.SKIPPED``), so adding an outcome is one row of that table plus its
rule in ``live/_classify.py``, and no string switch elsewhere is left to find by grep. This
test fails naming file:line for any string constant spelling an outcome outside that module.
"""

from __future__ import annotations

import ast
from pathlib import Path

from paths import REPO

from evalrunner.suite._record import OUTCOMES

HOME = "evalrunner/suite/_record.py"

# The same words with other meanings: not outcomes, so not in the table.
OTHER_MEANINGS = {
    ("evalrunner/core/_diff.py", "crashed"): "a trajectory's shape field (the agent raised)",
    ("evalrunner/core/_shape.py", "crashed"): "an ATIF trajectory's extra key",
    ("evalrunner/core/_steps.py", "crashed"): "an ATIF trajectory's extra key",
    ("evalrunner/frozen/_session.py", "failed"): "the frozen session file's key: failed tests",
    ("evalrunner/report/_junit.py", "skipped"): "JUnit's element and count, and a case's end",
    ("evalrunner/report/_junit.py", "passed"): "how a JUnit case ended",
    ("evalrunner/suite/_judge.py", "passed"): "a word of the judge's verdict",
}


def _literals(path: Path) -> list[tuple[int, str]]:
    """(line, value) of each string constant in ``path`` that spells an outcome."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    words = set(OUTCOMES)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words
    ]


def _allowed(name: str, word: str) -> bool:
    return name == HOME or (name, word) in OTHER_MEANINGS


def test_outcomes_are_named_in_one_module() -> None:
    found = []
    for path in sorted((REPO / "evalrunner").rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        found += [
            f"{name}:{line}: {word!r}" for line, word in _literals(path) if not _allowed(name, word)
        ]
    assert not found, (
        "outcome string literals outside suite/_record.py (ask a trait of OUTCOME_TRAITS, or "
        "name an Outcome member):\n" + "\n".join(found)
    )


def test_the_exceptions_still_hold() -> None:
    # An entry that no longer matches anything is stale: drop it, so the set stays true.
    for name, word in OTHER_MEANINGS:
        assert word in {w for _, w in _literals(REPO / name)}, (
            f"{name} no longer spells {word!r}: drop it from OTHER_MEANINGS"
        )
