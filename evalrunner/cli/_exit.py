"""Exit codes of the ``evalrunner`` command, decided in one place.

=====  ==========================================================================
code   meaning
=====  ==========================================================================
0      fine (failed runs and infra errors alone do not fail a command)
1      a run crashed; a gating metric regressed (unless ``--no-gate``); a run
       failed its checks (with ``--fail-on-failure``); a scenario x model not
       compared because its baseline is for another configuration or model (with
       ``--fail-on-unmatched``); a step after the runs
       failed (the history append; the tables were printed first); or
       evalrunner itself failed on purpose (an ``EvalrunnerError`` that is
       not a user error)
2      bad input: a usage error, or a ``UserError`` (suite, baseline, golden,
       history or results file; CLI option; a model litellm does not know;
       a results directory another evalrunner is writing) -- one line naming
       file and field, before any run
3      outage: more than ``--outage-share`` (default 50 %) of some model's runs
       are infra_error, and nothing above failed: that model's scenarios were not
       compared (every model's: nothing was, and this comes first)
4      budget: the night reached its ``--budget`` (or the suite's ``budget_usd``)
       with runs left to start; finished runs are kept, nothing was compared,
       ``--resume --budget`` with a larger amount finishes it
130    interrupted (Ctrl-C); finished runs are kept, ``--resume`` finishes them
143    terminated (SIGTERM), handled as Ctrl-C
=====  ==========================================================================
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import click

from evalrunner import _signals
from evalrunner.errors import EvalrunnerError, UserError

if TYPE_CHECKING:
    from evalrunner.night._night import LiveResult
    from evalrunner.stats._metric_result import MetricResult

OK = 0
FAILED = EvalrunnerError.exit_code  # 1
USAGE = UserError.exit_code  # 2, as click's own usage errors
INTERRUPTED = 130
TERMINATED = 143  # 128 + SIGTERM, as shells report a process SIGTERM ended


def run_code(
    result: LiveResult, *, gate: bool, fail_on_failure: bool, fail_on_unmatched: bool = False
) -> int:
    """``run``: the night's own rule (:meth:`~evalrunner.night.LiveResult.exit_code`)."""
    return result.exit_code(
        gate=gate, fail_on_failure=fail_on_failure, fail_on_unmatched=fail_on_unmatched
    )


def compare_code(results: Sequence[MetricResult], *, gate: bool) -> int:
    """``compare``: a gating metric that regressed from A to B fails, with ``gate``."""
    from evalrunner.stats._metric_result import FAILING

    regressed = any(r.gating and r.verdict in FAILING for r in results)
    return FAILED if gate and regressed else OK


def leave_now(code: int) -> NoReturn:
    """End the process with ``code`` now: exit handlers, flushed output, no finalisation
    (see :func:`evalrunner.cli._main.command`, the only caller: a process that is ours)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def exit_with(code: int) -> None:
    """End the command with ``code`` (nothing to do for 0)."""
    if code != OK:
        sys.exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, a container stopped): handled like Ctrl-C."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    _signals.received()
    raise Terminated()


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with _signals.watched():  # Ctrl-C noted too: an agent's own KeyboardInterrupt is not one
            yield
    finally:
        signal.signal(signal.SIGTERM, previous)


STORAGE_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
"""A disk that is full or turned read-only."""


@contextmanager
def on_interrupt(how_to_finish: str, out: Path | None = None) -> Iterator[None]:
    """Ctrl-C or SIGTERM during runs: say how to finish them and exit 130 (143 for SIGTERM).

    A disk that fills (or turns read-only) under the results is one line too, with the
    same way to finish, and exit 2.

    Either stops the runs the same way: the runs in flight are abandoned, the
    finished ones stay on disk, and the manifest says ``interrupted``. With
    ``out``, an interrupt before its manifest was written says nothing was run
    instead of offering a resume that would find nothing to resume.
    """
    try:
        with _sigterm_interrupts():
            yield
    except OSError as exc:
        if exc.errno not in STORAGE_FULL:
            raise
        # A full (or read-only) disk mid-night: the finished runs are on disk and
        # --resume finishes the rest once there is room; one line says so.
        where = exc.filename or out or "the results directory"
        finish = " ".join(how_to_finish.split())
        click.echo(f"error: cannot write {where}: {exc.strerror}. {finish}", err=True)
        sys.exit(USAGE)
    except KeyboardInterrupt as exc:
        what, code = (
            ("terminated (SIGTERM)", TERMINATED)
            if isinstance(exc, Terminated)
            else ("interrupted", INTERRUPTED)
        )
        if out is not None and not (out / "manifest.json").exists():
            click.echo(f"\n{what} before any run started; nothing was run.", err=True)
        else:
            click.echo(f"\n{what}; finished runs are saved. {how_to_finish}", err=True)
        sys.exit(code)


class _PipeClosed:
    """stdout that, once its reader has gone (``evalrunner compare A B | head -1``), drops
    what is written instead of raising: the command finishes and exits with its own code.
    Without it click exits 1 on the first write, which for ``compare`` and ``run`` reads as
    "a gating metric regressed" in a pipeline with ``set -o pipefail``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._gone = True
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def survive_a_closed_pipe() -> None:
    """Let stdout's reader go away without changing the command's exit code."""
    if not isinstance(sys.stdout, _PipeClosed):
        sys.stdout = _PipeClosed(sys.stdout)  # type: ignore[assignment]
