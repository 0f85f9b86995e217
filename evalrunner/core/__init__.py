"""The shared core: an agent run becomes an ATIF trajectory, normalised, shaped and diffed.

Pure functions (:func:`normalize`, :func:`shape`, :func:`diff`) over plain ATIF
dicts; :class:`TrajectoryBuilder`, which turns chat requests, model responses
and tool results into ATIF steps; and :func:`capture`, which feeds it every
litellm call of an agent run, answered by a :class:`Transport` (live litellm
with retries unless told otherwise).
"""

from evalrunner.core._atif import TrajectoryWarning
from evalrunner.core._atif import load as load_trajectory
from evalrunner.core._atif import validate as validate_trajectory
from evalrunner.core._diff import Delta, diff, render, summary
from evalrunner.core._normalize import NormalizeConfig, normalize
from evalrunner.core._scope import (
    CaptureResult,
    arun_captured,
    capture,
    record_tool_result,
    run_captured,
)
from evalrunner.core._shape import Shape, shape
from evalrunner.core._spans import read_tool_spans
from evalrunner.core._warnings import NoModelCallsWarning

__all__ = [
    "CaptureResult",
    "Delta",
    "NoModelCallsWarning",
    "NormalizeConfig",
    "Shape",
    "TrajectoryWarning",
    "arun_captured",
    "capture",
    "diff",
    "load_trajectory",
    "normalize",
    "read_tool_spans",
    "record_tool_result",
    "render",
    "run_captured",
    "shape",
    "summary",
    "validate_trajectory",
]
