"""evalrunner: tells you when your agent's behaviour changed.

Frozen mode: capture an agent run as ATIF, normalise it and compare it with a
committed golden in pytest. Live mode: run scenarios N times against live
models and compare the distributions with committed baselines.

The public API is re-exported here; the packages it comes from are
``evalrunner.core`` (capture, normalise, shape, diff), ``evalrunner.frozen``
(record/replay, goldens, the pytest plugin), ``evalrunner.live`` (suites and
live runs), ``evalrunner.stats``, ``evalrunner.baseline``, ``evalrunner.report``
and ``evalrunner.cli``.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from evalrunner.core import (
    CaptureResult,
    Delta,
    NormalizeConfig,
    Shape,
    arun_captured,
    capture,
    diff,
    load_trajectory,
    normalize,
    record_tool_result,
    render,
    run_captured,
    shape,
    summary,
)
from evalrunner.errors import (
    ConfigError,
    EvalrunnerError,
    NetworkBlocked,
    ReplayError,
    RequestMismatch,
    ScriptExhausted,
    TrajectoryError,
    UserError,
)
from evalrunner.live import RunContext, RunRecord, Suite, load_records, load_suite, run_live

try:
    __version__ = _version("evalrunner")
except _PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "CaptureResult",
    "ConfigError",
    "Delta",
    "EvalrunnerError",
    "NetworkBlocked",
    "NormalizeConfig",
    "ReplayError",
    "RequestMismatch",
    "RunContext",
    "RunRecord",
    "ScriptExhausted",
    "Shape",
    "Suite",
    "TrajectoryError",
    "UserError",
    "__version__",
    "arun_captured",
    "capture",
    "diff",
    "load_records",
    "load_suite",
    "load_trajectory",
    "normalize",
    "record_tool_result",
    "render",
    "run_captured",
    "run_live",
    "shape",
    "summary",
]
