"""The error boundary: an EvalrunnerError in any command becomes one line and its exit code."""

from __future__ import annotations

import sys
from typing import Any

import click

from evalrunner.errors import EvalrunnerError


class ErrorBoundary(click.Group):
    """A click group whose commands' deliberate errors print ``error: <message>`` on stderr.

    The exit code is the error's own (``UserError``: 2, others 1; see
    :mod:`evalrunner.cli._exit`); tracebacks are kept for our own bugs.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EvalrunnerError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
