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
from evalrunner.core._faults import InfraLog, RetrySettings, is_infra_error
from evalrunner.core._hook import LiteLLMTransport
from evalrunner.core._normalize import DEFAULT_CONFIG, NormalizeConfig, normalize
from evalrunner.core._response import ResponseRecord, ToolCallRecord, Usage
from evalrunner.core._scope import (
    CaptureResult,
    CaptureScope,
    arun_captured,
    capture,
    current,
    record_tool_result,
    run_captured,
)
from evalrunner.core._shape import Shape, shape
from evalrunner.core._steps import SCHEMA_VERSION, TrajectoryBuilder
from evalrunner.core._transport import Answer, Request, Transport, TransportSource
from evalrunner.core._warnings import NoModelCallsWarning

__all__ = [
    "DEFAULT_CONFIG",
    "SCHEMA_VERSION",
    "Answer",
    "CaptureResult",
    "CaptureScope",
    "Delta",
    "InfraLog",
    "LiteLLMTransport",
    "NoModelCallsWarning",
    "NormalizeConfig",
    "Request",
    "ResponseRecord",
    "RetrySettings",
    "Shape",
    "ToolCallRecord",
    "TrajectoryBuilder",
    "TrajectoryWarning",
    "Transport",
    "TransportSource",
    "Usage",
    "arun_captured",
    "capture",
    "current",
    "diff",
    "is_infra_error",
    "load_trajectory",
    "normalize",
    "record_tool_result",
    "render",
    "run_captured",
    "shape",
    "summary",
    "validate_trajectory",
]
