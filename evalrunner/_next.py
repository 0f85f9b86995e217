"""What to run next: the command a message suggests, as a value, rendered in one place.

A refusal, a note or a result that says what to run next carries a :class:`NextStep`
inside a :class:`Said` (a ``str``, so it reads, compares and pickles as the words it
shows). Outside the CLI (the Python API's exception text, the pytest plugin, the proxy's
HTTP bodies) it renders as itself; the CLI renders the same value once more with the
locations the user gave (``--suites-dir``, ``--baselines``), so that the command it
suggests goes to the files the user meant. No module writes ``evalrunner <command>`` by
hand (``tests/meta/test_next_step.py``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Locations = Mapping[str, Sequence[str]]
"""The locations a user gave, by option name (``suites_dir``), as the words to repeat."""

BOTH = ("suites_dir", "baselines_dir")


class Placeholder(str):
    """A word the user fills in (``<a night's results directory>``, ``[--from ANOTHER ...]``):
    shown as it is, not shell-quoted."""


def _quoted(word: str) -> str:
    return word if isinstance(word, Placeholder) else shlex.quote(word)


@dataclass(frozen=True)
class NextStep:
    """A command to run next: ``evalrunner COMMAND [PATHS] [--suite SUITE] [OPTIONS]``."""

    command: str
    """The CLI's command (``baseline``, ``run``)."""
    suite: str | None = None
    """The suite it is for, if it takes one."""
    options: tuple[str, ...] = ()
    """The words after the suite (and the locations), one shell word each."""
    paths: tuple[str, ...] = ()
    """Positional arguments, right after the command."""
    locations: tuple[str, ...] = BOTH
    """The given locations it repeats (a run that compares nothing needs no baselines)."""

    def render(self, given: Locations | None = None) -> str:
        """The command, shell-quoted, with the ``given`` locations it takes after the suite."""
        words = ["evalrunner", self.command, *self.paths]
        if self.suite is not None:
            words += ["--suite", self.suite]
        for name in self.locations:
            words += (given or {}).get(name, ())
        return " ".join(_quoted(w) for w in [*words, *self.options])

    def __str__(self) -> str:
        return self.render()


class Said(str):
    """Words with the commands they suggest kept as :class:`NextStep` values.

    ``str(said)`` is the text with each step rendered as itself; :meth:`render` adds the
    locations given. Parts that are ``Said`` themselves are flattened into this one.
    """

    parts: tuple[str | NextStep, ...]

    def __new__(cls, *parts: str | NextStep) -> Said:
        flat = tuple(
            p for part in parts for p in (part.parts if isinstance(part, Said) else (part,))
        )
        said = super().__new__(cls, _join(flat, None))
        said.parts = flat
        return said

    def render(self, given: Locations | None = None) -> str:
        return _join(self.parts, given)


def _join(parts: Sequence[str | NextStep], given: Locations | None) -> str:
    return "".join(p if isinstance(p, str) else p.render(given) for p in parts)


def render(said: object, given: Locations | None = None) -> str:
    """``said`` (words, a :class:`Said` or :class:`NextStep`, or an exception holding a
    ``Said``) as a person reads it, each command with the ``given`` locations it takes."""
    if isinstance(said, BaseException) and len(said.args) == 1:
        said = said.args[0] if isinstance(said.args[0], Said) else said
    return said.render(given) if isinstance(said, Said | NextStep) else str(said)


def each(flag: str, values: Sequence[str]) -> tuple[str, ...]:
    """``flag`` before each of ``values``, as words: ``--model a --model b``."""
    return tuple(w for v in values for w in (flag, v))
