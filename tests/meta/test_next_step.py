"""The command to run next has one home: ``evalrunner._next.NextStep``, rendered by the CLI.

The rule: outside ``evalrunner/cli/``, no string constant (an f-string's literal parts
included; docstrings, which describe, excluded) holds ``evalrunner`` followed by the name
of one of the CLI's commands as a word (``evalrunner baseline``, ``evalrunner run ...``).
A command the library suggests is a :class:`~evalrunner._next.NextStep` in the message, so
that the CLI can add the locations the user gave and every one is shell-quoted the same
way. Not commands: "evalrunner proxy:" (the program's name as a log prefix), "the
evalrunner proxy" (the thing, not the command), and the report's default title,
"evalrunner report", the one name allowed below.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from paths import REPO

from evalrunner.cli._main import main

PACKAGE = REPO / "evalrunner"
COMMANDS = sorted(main.commands, key=len, reverse=True)
LITERAL = re.compile(rf"(?<!the )\bevalrunner ({'|'.join(map(re.escape, COMMANDS))})\b(?!:)")
NAMES = {("report/_report.py", "evalrunner report"), ("report/_html.py", "evalrunner report")}
"""(file, whole constant) pairs that name something other than a command: the report title."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the constants that are docstrings (a module's, a class's, a function's),
    and of the bare strings after an assignment (attribute docstrings)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                found.add(id(stmt.value))
    return found


def _literals(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def _command_literals() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith("cli/"):
            continue
        for line, text in _literals(path):
            if LITERAL.search(text) and (where, text) not in NAMES:
                found.append(f"evalrunner/{where}:{line}: {text!r}")
    return found


def test_the_rule_knows_the_commands() -> None:
    assert {"run", "baseline", "proxy", "explain"} <= set(COMMANDS)
    assert LITERAL.search("finish it with evalrunner run --suite s")
    assert LITERAL.search("`evalrunner sentinel`")
    assert not LITERAL.search("evalrunner proxy: listening")
    assert not LITERAL.search("evalrunner version 1.0")
    assert not LITERAL.search("an evalrunner runner")
    assert not LITERAL.search("only n=1 is supported by the evalrunner proxy")


def test_no_command_literal_outside_the_cli() -> None:
    found = _command_literals()
    assert found == [], "a command to run next is a NextStep (evalrunner._next):\n" + "\n".join(
        found
    )
