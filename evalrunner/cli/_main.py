"""The ``evalrunner`` command: a thin click layer over the Python API.

One module per command; shared options in :mod:`._options`; exit codes in
:mod:`._exit`; every deliberate error becomes one line in :mod:`._boundary`.
"""

from __future__ import annotations

import os
import sys
import threading

import click

from evalrunner._heap import exit_without_collecting
from evalrunner._litellm import prepare
from evalrunner.cli import _exit
from evalrunner.cli._baseline import baseline
from evalrunner.cli._boundary import ErrorBoundary
from evalrunner.cli._compare import compare
from evalrunner.cli._explain import explain_cmd
from evalrunner.cli._init import init
from evalrunner.cli._list import list_cmd
from evalrunner.cli._plan import plan_cmd
from evalrunner.cli._proxy import proxy
from evalrunner.cli._report import report
from evalrunner.cli._run import run
from evalrunner.cli._sentinel import sentinel_cmd
from evalrunner.cli._serve import serve_local
from evalrunner.cli._trajectory import diff_cmd, show
from evalrunner.cli._validate import validate

__all__ = ["command", "main"]


@click.group(cls=ErrorBoundary)
@click.version_option(package_name="evalrunner")
def main() -> None:
    """Tell when an LLM agent's behaviour changed.

    Frozen mode runs in pytest (see the README); live mode runs suites against
    model endpoints: `evalrunner run --suite NAME`.
    """
    # Before any agent module is imported (validate, run, baseline import them):
    # an agent that imports litellm would otherwise fetch its cost map over the
    # network, a ~10 s stall offline.
    prepare()
    _exit.survive_a_closed_pipe()
    # The process is ours and ends with the command: what it holds (pandas, litellm, the
    # night's records) is left to the operating system instead of walked once more.
    exit_without_collecting()
    # Agents named in suites ("pkg.module:fn") are imported from the project
    # the command runs in, as `python -m` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


for _command in (
    init,
    list_cmd,
    validate,
    run,
    baseline,
    plan_cmd,
    compare,
    explain_cmd,
    sentinel_cmd,
    report,
    serve_local,
    proxy,
    show,
    diff_cmd,
):
    main.add_command(_command)


def command() -> None:
    """The ``evalrunner`` console script: :func:`main`, ended at once after an interrupt.

    Interrupted (exit 130, or 143 for SIGTERM), the command has already said how to
    finish and the finished runs are on disk, but sync agents' threads may still be
    running, and the interpreter's shutdown freezes them wherever they are. One frozen
    while importing holds that module's lock for good, and a finaliser that imports the
    same module (litellm's HTTP client does, as it is collected) then waits forever: a
    Ctrl-C in a night's first seconds hung the process. So exit handlers run (while
    those threads still run), and the process ends without finalising.
    """
    try:
        main()
    except SystemExit as exc:
        if exc.code in (_exit.INTERRUPTED, _exit.TERMINATED) or (
            exc.code not in (None, _exit.OK) and _threads_left()
        ):
            # Also a night stopped by an error (a disk that filled mid-night) with agents'
            # threads still running: the same hang, 2 runs in 6 in a review.
            _exit.leave_now(exc.code if isinstance(exc.code, int) else _exit.USAGE)
        raise


def _threads_left() -> bool:
    """Threads other than this one still running (agents', litellm's, the run writer's)."""
    main_thread = threading.main_thread()
    return any(t.is_alive() and t is not main_thread for t in threading.enumerate())
