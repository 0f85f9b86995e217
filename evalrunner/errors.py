"""The one exception hierarchy of evalrunner.

    EvalrunnerError                 anything evalrunner raises on purpose
    ├── UserError                   bad input from a person: one line, the fix, exit code 2
    │   ├── ConfigError             suite files, CLI options
    │   ├── FileFormatError         goldens, scripts, baselines, results, history files
    │   │   └── NewerFormat         written by a newer evalrunner: never regenerated over
    │   ├── TrajectoryError         ATIF documents that do not conform
    │   └── BaselineMismatch        baseline recorded for another model or scenario config
    ├── ReplayError                 strict replay went wrong
    │   ├── ScriptExhausted         the agent made more model calls than were recorded
    │   ├── RequestMismatch         a request differs from the recording (strict mode)
    │   └── NetworkBlocked          something tried to reach the network during replay
    └── EndpointError               a live model endpoint failed after retries (infra)

Messages are written for the person reading them: they name the file and
field where there is one, and say what to do next.
"""

from __future__ import annotations


class EvalrunnerError(Exception):
    """Base class for every error evalrunner raises on purpose."""

    exit_code = 1


class UserError(EvalrunnerError):
    """Bad input from a person; shown as one line without a traceback."""

    exit_code = 2


class ConfigError(UserError):
    """A suite file or CLI option is invalid."""


class FileFormatError(UserError):
    """A file evalrunner reads (golden, script, baseline, results) is malformed."""


class NewerFormat(FileFormatError):
    """A file's format_version is newer than this release reads: regenerating it (say with
    ``--golden-update``) would overwrite what the newer release wrote with an older form."""


class TrajectoryError(UserError):
    """An ATIF document does not conform; the message names the JSON path."""


class BaselineMismatch(UserError):
    """A baseline was recorded for another model or scenario configuration."""


class ReplayError(EvalrunnerError):
    """Strict replay of recorded model responses failed."""


class ScriptExhausted(ReplayError):
    """The agent asked for more model responses than the script recorded."""


class RequestMismatch(ReplayError):
    """A request differs from the recorded one and strict matching is on."""


class NetworkBlocked(ReplayError):
    """Something tried to open a network connection during replay."""


class EndpointError(EvalrunnerError):
    """A live model endpoint failed even after retries."""


class EvalrunnerWarning(UserWarning):
    """Something a command went on past and says so on one line (``warning: ...``)."""


class SkippedHistoryFile(EvalrunnerWarning):
    """A history file that could not be read was left out; the nights go on without it."""
