"""evalrunner: tells you when your agent's behaviour changed.

Frozen mode: capture an agent run as ATIF, normalise it and compare it with a
committed golden in pytest. Live mode: run scenarios N times against live
models and compare the distributions with committed baselines.

The public API is re-exported here; the packages it comes from are
listed bottom-up in docs/architecture.md: ``evalrunner.core`` (capture,
normalise, shape, diff), ``evalrunner.suite`` (suite files, the agent contract,
run records), ``evalrunner.endpoints``, ``evalrunner.stats``, ``evalrunner.proxy``
(the capture proxy), ``evalrunner.live`` (executing runs), ``evalrunner.frozen``
(record/replay, goldens, the pytest plugin), ``evalrunner.history``,
``evalrunner.baseline``, ``evalrunner.night`` (a whole night), ``evalrunner.report``
and ``evalrunner.cli``.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from evalrunner._lazy import lazy_exports as _lazy_exports
from evalrunner._litellm import prepare as _prepare_litellm
from evalrunner._version import __version__

# Before the caller's own code imports litellm (an agent, docs/capture.md's example):
# litellm would fetch its model cost map over the network (a default the user set is kept).
_prepare_litellm()

if _TYPE_CHECKING:
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
        read_tool_spans,
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
    from evalrunner.live import load_records
    from evalrunner.night import NightOptions, run_live
    from evalrunner.suite import CheckInput, CheckResult, RunContext, RunRecord, Suite, load_suite

__all__ = [
    "CaptureResult",
    "CheckInput",
    "CheckResult",
    "ConfigError",
    "Delta",
    "EvalrunnerError",
    "NetworkBlocked",
    "NightOptions",
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
    "read_tool_spans",
    "record_tool_result",
    "render",
    "run_captured",
    "run_live",
    "shape",
    "summary",
]

__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    {
        "CaptureResult": "evalrunner.core",
        "CheckInput": "evalrunner.suite",
        "CheckResult": "evalrunner.suite",
        "ConfigError": "evalrunner.errors",
        "Delta": "evalrunner.core",
        "EvalrunnerError": "evalrunner.errors",
        "NetworkBlocked": "evalrunner.errors",
        "NightOptions": "evalrunner.night",
        "NormalizeConfig": "evalrunner.core",
        "ReplayError": "evalrunner.errors",
        "RequestMismatch": "evalrunner.errors",
        "RunContext": "evalrunner.suite",
        "RunRecord": "evalrunner.suite",
        "ScriptExhausted": "evalrunner.errors",
        "Shape": "evalrunner.core",
        "Suite": "evalrunner.suite",
        "TrajectoryError": "evalrunner.errors",
        "UserError": "evalrunner.errors",
        "arun_captured": "evalrunner.core",
        "capture": "evalrunner.core",
        "diff": "evalrunner.core",
        "load_records": "evalrunner.live",
        "load_suite": "evalrunner.suite",
        "load_trajectory": "evalrunner.core",
        "normalize": "evalrunner.core",
        "read_tool_spans": "evalrunner.core",
        "record_tool_result": "evalrunner.core",
        "render": "evalrunner.core",
        "run_captured": "evalrunner.core",
        "run_live": "evalrunner.night",
        "shape": "evalrunner.core",
        "summary": "evalrunner.core",
    },
)
