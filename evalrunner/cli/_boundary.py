"""The error boundary: an EvalrunnerError in any command becomes one line and its exit code."""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Any

import click

from evalrunner.errors import EvalrunnerError, EvalrunnerWarning


class ErrorBoundary(click.Group):
    """A click group whose commands' deliberate errors print ``error: <message>`` on stderr.

    The exit code is the error's own (``UserError``: 2, others 1; see
    :mod:`evalrunner.cli._exit`); tracebacks are kept for our own bugs.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", EvalrunnerWarning)
                default = warnings.showwarning
                warnings.showwarning = functools.partial(_show, default)
                return super().invoke(ctx)
        except EvalrunnerError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)


def _show(default: Any, message: Warning | str, category: type[Warning], *args: Any) -> None:
    """Our own warnings as ``warning: <message>`` lines; anyone else's as Python shows them."""
    if issubclass(category, EvalrunnerWarning):
        click.echo(f"warning: {message}", err=True)
    else:
        default(message, category, *args)
