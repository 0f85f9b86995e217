"""Options several commands share, declared once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from evalrunner.night._night import NightOptions
from evalrunner.suite._schema import MAX_RUNS

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
    return click.option("--runs", "-n", type=click.IntRange(min=1, max=MAX_RUNS), help=help)


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
