"""Options several commands share, declared once."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from evalrunner.night._night import NightOptions
from evalrunner.suite._schema import MAX_CELL_RUNS

F = TypeVar("F", bound=Callable[..., Any])
Decorator = Callable[[F], F]

DEFAULT_HISTORY = NightOptions.model_fields["history"].default

suites_dir = click.option(
    "--suites-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="suites",
    envvar="EVALRUNNER_SUITES",
    show_envvar=True,
    show_default=True,
    help="Directory holding suite YAML files.",
)

suite_name = click.option(
    "--suite", "suite_name", required=True, help="Suite name (suites/NAME.yaml) or path."
)

history = click.option(
    "--history",
    default=DEFAULT_HISTORY,
    show_default=True,
    help="Run history location: a path or fsspec URL.",
)


def baselines_dir(help: str | None = None) -> Decorator[Any]:
    return click.option(
        "--baselines",
        "baselines_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=NightOptions.model_fields["baselines_dir"].default,
        show_default=True,
        help=help,
    )


def runs(help: str) -> Decorator[Any]:
    return click.option("--runs", "-n", type=click.IntRange(min=1, max=MAX_CELL_RUNS), help=help)


def rows(help: str) -> Decorator[Any]:
    return click.option("--rows", type=click.IntRange(min=1), help=help)


def models(help: str) -> Decorator[Any]:
    return click.option("--model", "models", multiple=True, help=help)


def scenarios(help: str) -> Decorator[Any]:
    return click.option("--scenario", "scenarios", multiple=True, help=help)


def out(help: str) -> Decorator[Any]:
    return click.option("--out", type=click.Path(file_okay=False, path_type=Path), help=help)


def gate(help: str) -> Decorator[Any]:
    return click.option("--gate/--no-gate", default=True, show_default=True, help=help)


def positive(
    flag: str, default: int | None, help: str, *, shown: int | None = None
) -> Decorator[Any]:
    """A whole-number option of at least 1, with its default shown.

    ``default=None`` with ``shown``: the value is None unless given (so a resumed
    night can tell an option given from one left out), and help shows ``shown``.
    """
    return click.option(
        flag,
        type=click.IntRange(min=1),
        default=default,
        # A shown text would print in parentheses, "(5)", as if it were not the value.
        show_default=shown is None,
        help=help if shown is None else f"{help} Default: {shown}.",
    )


def given(names: Sequence[str]) -> list[str]:
    """The options among ``names`` that were given on the command line, as words, in the
    order of ``names``: what a suggested command must repeat."""
    ctx = click.get_current_context()
    params = {p.name: p for p in ctx.command.params}
    words: list[str] = []
    for name in names:
        if ctx.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        param = params[name]
        value = ctx.params[name]
        if isinstance(param, click.Option) and param.is_flag:
            if param.secondary_opts:  # --x/--no-x
                words.append(param.opts[0] if value else param.secondary_opts[0])
            elif value:
                words.append(param.opts[0])
        else:
            words += [param.opts[0], str(value)]
    return words


def locations(names: Sequence[str] = ("suites_dir", "baselines_dir")) -> str:
    """The locations given on the command line, as words after ``--suite NAME`` in every
    command a command suggests (a hint without them accepted a night into the default
    baselines, not the ones compared with); empty when none was given."""
    words = given(names)
    return " " + shlex.join(words) if words else ""


def with_locations(text: str, suite: str, where: str, command: str = "baseline") -> str:
    """``text`` (the library's words, which name the suite alone) with ``where`` after
    each ``COMMAND --suite SUITE`` it suggests."""
    if not where:
        return text
    said = f"{command} --suite {suite}{where}"  # a function: a path's backslash is no escape
    return re.sub(rf"{command} --suite {re.escape(suite)}(?![\w.-])", lambda _: said, text)
