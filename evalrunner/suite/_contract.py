"""The agent contract: what an agent receives besides its input, and how a command answers.

An in-process agent (``agent: pkg.mod:fn``) gets a :class:`RunContext`; a
``command:`` agent gets its task in its argv (:func:`command_argv`) and prints
its final answer on stdout (:func:`final_answer`); one with ``trajectory_file: true``
also writes its run's trajectory where :data:`TRAJECTORY_FILE` says
(:func:`trajectory_file`, :func:`written_trajectory`). suites/README.md documents
all of it for users; frozen and live mode read them here.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalrunner.errors import TrajectoryError

if TYPE_CHECKING:
    from evalrunner.suite._settings import ResolvedScenario

FINAL_ANSWER_KEY = "final_answer"
STDERR_TAIL_CHARS = 2000


class Reachable(Protocol):
    """What a run needs to know of its endpoint (``evalrunner.endpoints.Endpoint`` is one)."""

    @property
    def model(self) -> str: ...
    @property
    def api_base(self) -> str | None: ...
    @property
    def api_key(self) -> str | None: ...


@dataclass(frozen=True)
class RunContext:
    """Model endpoint and sampling settings for one run.

    Agents pass these to litellm; evalrunner fills them from the suite, the
    CLI, or the embedded local model. ``api_key`` is never written anywhere.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.8
    max_turns: int = 6
    tools: tuple[str, ...] = ()
    seed: int | None = None
    max_tokens: int | None = 256
    row: dict[str, Any] | None = field(default=None, compare=False)
    """A dataset scenario's row (its fields, ``id`` included); None outside datasets. The
    input is already filled from it; an agent that wants the fields themselves reads them."""

    @classmethod
    def for_scenario(cls, scenario: ResolvedScenario, endpoint: Reachable) -> RunContext:
        """What a run of `scenario` against `endpoint` hands its agent."""
        return cls(
            model=endpoint.model,
            api_base=endpoint.api_base,
            api_key=endpoint.api_key,
            temperature=scenario.temperature,
            max_turns=scenario.max_turns,
            tools=tuple(scenario.tools),
            row=scenario.row_values or None,
        )

    def litellm_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``litellm.completion`` (endpoint and sampling)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "temperature": self.temperature,
            "drop_params": True,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.seed is not None:
            kwargs["seed"] = self.seed
        return kwargs


def command_argv(command: Sequence[str], task: str) -> list[str]:
    """The argv to run: ``{task}`` in any argument becomes the scenario's input."""
    return [arg.replace("{task}", task) for arg in command]


def output_text(raw: bytes) -> str:
    """A command's stdout or stderr as text, the same on every path (live and frozen): UTF-8,
    with any byte that is not replaced by U+FFFD, so output that is not text is the
    agent's answer as it printed it, to be checked, not a decoding error of ours."""
    return raw.decode("utf-8", errors="replace")


def final_answer(stdout: str) -> str | None:
    """The answer a command printed.

    The last stdout line that is a JSON object with a ``final_answer`` key wins
    (its value: a string, or null for "gave up"); without one, the last
    non-empty line. No output at all is no final answer.
    """
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    for line in reversed(lines):
        said = _said_final_answer(line)
        if said is not None:
            value = said[FINAL_ANSWER_KEY]
            return value if isinstance(value, str) or value is None else json.dumps(value)
    return lines[-1] if lines else None


def _said_final_answer(line: str) -> dict[str, Any] | None:
    """The line as a JSON object with a ``final_answer`` key, or None if it is not one."""
    if not line.startswith("{"):
        return None
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) and FINAL_ANSWER_KEY in parsed else None


def stderr_tail(stderr: str, limit: int = STDERR_TAIL_CHARS) -> str:
    text = stderr.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


TRAJECTORY_FILE = "EVALRUNNER_TRAJECTORY_FILE"
"""The variable naming the file a ``trajectory_file: true`` command writes its run's
trajectory to: an ATIF trajectory, or an OTLP JSON export of its own trace."""


class NoTrajectoryWritten(Exception):
    """A ``trajectory_file: true`` command wrote no trajectory, or one that cannot be read:
    its run crashed (the agent broke its contract; no fault of the endpoint's), as
    :class:`~evalrunner.live._command.CommandFailed` says of an exit status."""


@contextlib.contextmanager
def trajectory_file(wanted: bool) -> Iterator[Path | None]:
    """A fresh path for one run's trajectory file (None: the run writes none), removed
    with whatever the run left there once the block ends."""
    if not wanted:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="evalrunner-run-") as where:
        yield Path(where) / "trajectory.json"


def written_answer(stdout: str, trajectory: dict[str, Any]) -> str | None:
    """The answer of a command that wrote its trajectory: what it printed, or, where it
    printed nothing, that trajectory's last message."""
    from evalrunner.core._shape import final_message

    return final_answer(stdout) if stdout.strip() else final_message(trajectory)


def written_trajectory(path: Path) -> dict[str, Any]:
    """The trajectory a command wrote to ``path`` (ATIF, or an OTLP JSON trace export), read
    as ``evalrunner show`` reads one. :class:`NoTrajectoryWritten` says in one line what is
    wrong where it wrote none or one that cannot be read."""
    from evalrunner.core._atif import load

    if not path.is_file():
        raise NoTrajectoryWritten(
            f"wrote no trajectory to ${TRAJECTORY_FILE}: a command with trajectory_file: true "
            "writes its run's ATIF trajectory or OTLP JSON trace export there before it exits"
        )
    try:
        return load(path, name=f"the trajectory it wrote to ${TRAJECTORY_FILE}")
    except TrajectoryError as exc:  # named by its variable: the file is gone with the run
        said = str(exc).replace(str(path), f"the trajectory it wrote to ${TRAJECTORY_FILE}")
        raise NoTrajectoryWritten(said) from None
