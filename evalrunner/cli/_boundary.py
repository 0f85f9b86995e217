"""The error boundary: an EvalrunnerError in any command becomes one line and its exit code."""

from __future__ import annotations

import errno
import functools
import sys
import warnings
from typing import Any

import click

from evalrunner.cli._exit import STORAGE_FULL
from evalrunner.cli._options import say
from evalrunner.errors import EvalrunnerError, EvalrunnerWarning, UserError


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
            click.echo(f"error: {say(exc, ctx)}", err=True)
            sys.exit(exc.exit_code)
        except OSError as exc:
            # A directory the user cannot write or a full disk is the machine's answer, not
            # our bug: one line naming the file. Any other OSError keeps its traceback.
            if exc.errno not in _REFUSED or not exc.filename:
                raise
            click.echo(
                f"error: {exc.filename}: {exc.strerror}; give this user access to it, free "
                "some space, or choose another location",
                err=True,
            )
            sys.exit(UserError.exit_code)


_REFUSED = STORAGE_FULL | {errno.EACCES, errno.EPERM}
"""What the file system says when it refuses a write: permissions, space, a read-only mount."""


def _show(default: Any, message: Warning | str, category: type[Warning], *args: Any) -> None:
    """Our own warnings as ``warning: <message>`` lines; anyone else's as Python shows them."""
    if issubclass(category, EvalrunnerWarning):
        click.echo(f"warning: {message}", err=True)
    else:
        default(message, category, *args)
