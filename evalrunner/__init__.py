"""evalrunner: tells you when your agent's behaviour changed.

Frozen mode: capture an agent run as ATIF, normalise it and compare it with a
committed golden in pytest. Live mode: run scenarios N times against live
models and compare the distributions with committed baselines.
"""

from evalrunner.capture import (
    CaptureResult,
    arun_captured,
    capture,
    record_tool_result,
    run_captured,
)
from evalrunner.diff import Delta, diff, render, summary
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
from evalrunner.normalize import NormalizeConfig, normalize
from evalrunner.shape import Shape, shape
from evalrunner.trajectory import load as load_trajectory

__version__ = "0.1.0"

__all__ = [
    "CaptureResult",
    "ConfigError",
    "Delta",
    "EvalrunnerError",
    "NetworkBlocked",
    "NormalizeConfig",
    "ReplayError",
    "RequestMismatch",
    "ScriptExhausted",
    "Shape",
    "TrajectoryError",
    "UserError",
    "__version__",
    "arun_captured",
    "capture",
    "diff",
    "load_trajectory",
    "normalize",
    "record_tool_result",
    "render",
    "run_captured",
    "shape",
    "summary",
]
