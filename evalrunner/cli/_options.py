"""Options several commands share, declared once."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from evalrunner._next import render
from evalrunner.night._night import NightOptions
from evalrunner.suite._schema import MAX_CELL_RUNS

F = TypeVar("F", bound=Callable[..., Any])
Decorator = Callable[[F], F]

DEFAULT_HISTORY = NightOptions.model_fields["history"].default

GIVEN = "evalrunner.given_locations"
"""Where in ``click.Context.meta`` (shared by a command's context and the group's) the
locations given on the command line are kept, for the commands the library suggests."""


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep a location given on the command line (not a default, not the environment's:
    a suggested command repeats what the user typed)."""
    if param.name and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
        ctx.meta.setdefault(GIVEN, {})[param.name] = (param.opts[0], str(value))
    return value


def say(words: object, ctx: click.Context | None = None) -> str:
    """The library's words (a note, a refusal, a problem) as the CLI shows them: each
    command they suggest with the locations this command was given."""
    ctx = ctx or click.get_current_context(silent=True)
    return render(words, ctx.meta.get(GIVEN) if ctx is not None else None)


suites_dir = click.option(
    "--suites-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="suites",
    envvar="EVALRUNNER_SUITES",
    show_envvar=True,
    show_default=True,
    callback=_remember,
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
        callback=_remember,
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


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Characters a terminal acts on (escape sequences start with ESC, 0x1b; 0x9b is a CSI
on some): all of C0 but newline and tab, DEL, C1."""


def terminal_safe(text: str) -> str:
    """``text`` with the characters a terminal would act on written as ``\\x1b`` and the
    like. A model chooses tool names and answers, an agent its exceptions' messages: printed
    raw, one of them could move the cursor, rewrite a line already shown or retitle the
    window (issue 53, row 9). evalrunner itself prints none."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
