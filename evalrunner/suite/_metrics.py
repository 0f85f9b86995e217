"""The metric registry: every metric the statistics compute, defined once.

Adding a metric touches this table and the function that computes it; the
suite validator (metric names in ``tolerance:``), the statistics, the verdict
tables and the report's ordering and labels all read it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Literal

Kind = Literal["binary", "count", "continuous", "categorical"]
Direction = Literal["lower", "higher", "changed"]
"""Which way is harmful: ``lower`` (a rate that should stay high), ``higher``, or ``changed``:
no direction is harmful in itself, so a change either way is reported as a two-sided "changed".
History files written before this name existed say ``any``; :class:`MetricResult` reads it as ``changed``."""

TOOL_USED = "tool_used"
"""A family: ``tool_used:<name>`` per tool seen; a margin or gating entry ``tool_used`` covers all."""
SCORE = "score"
"""A family: ``score:<check>`` per code check that gives scores (``checks: code:``)."""
TOOL_CALLS_OF = "tool_calls_of"
"""A family: ``tool_calls_of:<name>``, one tool's calls (and its executions no model call
asked for) per run, for each tool some run called twice or more."""
FAMILIES = (TOOL_USED, SCORE, TOOL_CALLS_OF)
TOOL_ERROR_RATE = "tool_error_rate"
SUBAGENTS = "subagent_count"
"""Share of runs in which a tool execution failed, where runs recorded their tool errors."""
JUDGE_AGREEMENT = "judge_agreement"
"""Share of graded runs whose judge grades agreed (``checks: judge:`` with 2+ grades)."""
NO_TOOLS = "(no tools)"
"""How an empty tool sequence is shown everywhere."""


@dataclass(frozen=True)
class NoteFacts:
    """What a metric's own note may read of tonight against its baseline."""

    usual: Hashable
    """The baseline's usual value where the metric has one (final answer, first tool)."""
    rows: int
    """Dataset rows with a usual answer of their own (0: one usual answer for all runs)."""
    skipped: tuple[float, float] | None
    """The share of runs skipped in the baseline and tonight (None: a side has no runs)."""
    margin_for: Callable[[str], float]
    """The scenario's margin of a metric, by name."""


@dataclass(frozen=True)
class Metric:
    """One metric: what it is, which way is bad, and how much change matters."""

    name: str
    kind: Kind
    direction: Direction
    margin: float
    """Default practical margin, in the units of the metric's effect (see EFFECT_LABELS)."""
    gating: bool
    """Gating by default: a regression fails the night; otherwise a diagnostic."""
    label: str
    """Short human name for tables and charts."""
    covers: str = "valid runs"
    """The runs the metric is measured over, as a note names them when a side has none."""
    note: Callable[[NoteFacts], str | None] | None = None
    """What the metric's result says about itself beside its test's note (None: nothing)."""


@dataclass(frozen=True)
class Scale:
    """How a metric kind's effect reads; the statistics of each kind are in ``stats/_kinds.py``."""

    label: str
    """What ``effect`` means (see :data:`EFFECT_LABELS`)."""
    ratio: bool = False
    """The effect is a ratio: no change is 1 and a margin a factor > 1. Otherwise a
    difference: no change is 0 and a margin lies in (0, 1]."""
    margin_prefix: str = "±"
    """How its margin reads before the number: within ±m, within ×m, up to ≤m."""


SCALES: dict[Kind, Scale] = {
    "binary": Scale("difference"),
    "count": Scale("Cliff's delta"),
    "continuous": Scale("ratio", ratio=True, margin_prefix="×"),
    "categorical": Scale("atypicality change", margin_prefix="≤"),
}
"""Every metric kind's effect scale, by name."""

EFFECT_LABELS: dict[Kind, str] = {kind: scale.label for kind, scale in SCALES.items()}
"""What ``effect`` means per kind: rate difference, Cliff's delta, ratio of geometric means, and for
tool paths the change in mean atypicality (0 = the baseline's usual path, 1 = another path the
baseline took, 2 = a path it never took). History rows written before keep their own label
(tool paths were a Jensen-Shannon distance then)."""


def _usual_answer_note(facts: NoteFacts) -> str:
    if facts.rows:
        return f"share of runs answering their row's usual answer ({facts.rows} rows)"
    shown = str(facts.usual)
    return f"share of runs answering the baseline's usual {shown[:57] + '...' if len(shown) > 60 else shown!r}"


def _first_tool_note(facts: NoteFacts) -> str:
    return f"share of runs whose first tool is the baseline's usual {facts.usual or NO_TOOLS!r}"


def _skips_bias_note(facts: NoteFacts) -> str | None:
    """Success over valid runs leaves the skipped runs out: when skips moved, it is biased."""
    if facts.skipped is None:
        return None
    skip_b, skip_n = facts.skipped
    if abs(skip_n - skip_b) < facts.margin_for("skip_rate") / 2:
        return None
    return f"skip rate moved ({skip_b:.2f} -> {skip_n:.2f}): success over valid runs is biased"


_NON_INFRA = "non-infra runs"

REGISTRY: tuple[Metric, ...] = (
    # Rates with an obvious bad direction.
    Metric("success_rate", "binary", "lower", 0.10, True, "success rate", _NON_INFRA),
    Metric("crash_rate", "binary", "higher", 0.10, True, "crash rate", _NON_INFRA),
    Metric("skip_rate", "binary", "higher", 0.10, True, "skip rate", _NON_INFRA),
    # Runs leaving the baseline's paths is the harm; more runs on the usual path is not.
    Metric("tool_sequence", "categorical", "higher", 0.20, True, "tool sequence"),
    # Fewer steps can mean skipped work and more can mean looping: neither way is good in itself.
    Metric("step_count", "count", "changed", 0.33, True, "steps"),
    Metric(
        "success_rate_valid",
        "binary",
        "lower",
        0.10,
        False,
        "success (valid runs)",
        note=_skips_bias_note,
    ),
    # Fewer runs giving the usual answer / starting with the usual tool: behaviour moved away.
    Metric(
        "final_answer_match",
        "binary",
        "lower",
        0.15,
        False,
        "usual final answer",
        note=_usual_answer_note,
    ),
    Metric("first_tool", "binary", "lower", 0.10, False, "usual first tool", note=_first_tool_note),
    Metric("llm_calls", "count", "changed", 0.33, False, "LLM calls"),
    Metric("tool_calls", "count", "changed", 0.33, False, "tool calls"),
    # One tool called more or less often a run: which tool loops, where tool_calls only
    # says that something does.
    Metric(TOOL_CALLS_OF, "count", "changed", 0.33, False, "calls of one tool"),
    # Runs handed to other agents (sub-agent trajectories: hand-offs, agents as tools): where
    # some run on either side had one, as an agent that never hands off has nothing to show.
    Metric(SUBAGENTS, "count", "changed", 0.33, False, "sub-agent runs"),
    # A tool that raises more often: the agent's arguments or the tool broke. Seen where the
    # run said which tools failed (its tool spans), which the model API alone does not show.
    Metric(
        TOOL_ERROR_RATE,
        "binary",
        "higher",
        0.10,
        False,
        "tool error rate",
        "non-infra runs that recorded their tool errors",
    ),
    # Tokens and latency are cost: more is harmful, less is reported as an improvement.
    Metric("prompt_tokens", "continuous", "higher", 1.25, False, "prompt tokens"),
    Metric("completion_tokens", "continuous", "higher", 1.25, False, "completion tokens"),
    Metric("latency_s", "continuous", "higher", 1.25, False, "latency (s)"),
    # A tool that got slower (its API, its data): seconds per execution, where the run's
    # tool spans timed them; the run's own latency hides it behind the model's.
    Metric(
        "tool_latency_s",
        "continuous",
        "higher",
        1.25,
        False,
        "tool latency (s)",
        "valid runs whose tool spans timed their executions",
    ),
    # Prompt caching, where the endpoint reports it: fewer tokens read from the cache and
    # more written to it both mean the cache stopped holding (a prompt's prefix changed).
    Metric("cache_read_tokens", "continuous", "lower", 1.25, False, "cache read tokens"),
    Metric("cache_write_tokens", "continuous", "higher", 1.25, False, "cache write tokens"),
    # What the run cost where its model is priced: more is harmful, as with tokens.
    Metric("cost_usd", "continuous", "higher", 1.25, False, "cost (USD)"),
    # A tool called more or less often: a change, not a harm in itself.
    Metric(TOOL_USED, "binary", "changed", 0.10, False, "tool used"),
    # The user's own scores in [0, 1]: lower is worse. Compared by rank (Cliff's delta), as
    # counts are: a score's scale need not be linear, only its order meaningful.
    Metric(SCORE, "count", "lower", 0.33, False, "score"),
    # A judge that disagrees with itself more often has changed (or grows noisy): told
    # apart from the agent, whose change would move score:judge with the agreement steady.
    Metric(JUDGE_AGREEMENT, "binary", "lower", 0.15, False, "judge agreement"),
)
"""In report order: gating metrics first, then diagnostics."""

_BY_NAME = {m.name: m for m in REGISTRY}
DEFAULT_MARGINS: dict[str, float] = {m.name: m.margin for m in REGISTRY}
DEFAULT_GATING: tuple[str, ...] = tuple(m.name for m in REGISTRY if m.gating)


def family_of(name: str) -> str:
    """``tool_used:lookup`` -> ``tool_used``, ``score:cites`` -> ``score``; others as given."""
    head, sep, tail = name.partition(":")
    return head if sep and tail and head in FAMILIES else name


def metric(name: str) -> Metric:
    """The definition of ``name``; ``tool_used:<tool>`` and ``score:<check>`` resolve to
    their family."""
    found = _BY_NAME.get(family_of(name))
    if found is None:
        raise KeyError(name)
    return found


def is_known(name: str) -> bool:
    try:
        metric(name)
    except KeyError:
        return False
    return True


def unknown_metric_message(name: str) -> str:
    """'unknown metric 'sucess_rate'; did you mean 'success_rate'?' (or the list of known ones)."""
    # A name cut short ('tool_seq') means the metric it starts, whatever looks closer.
    close = [m for m in _BY_NAME if m.startswith(name)] if len(name) >= 4 else []
    close = close[:1] if len(close) == 1 else difflib.get_close_matches(name, list(_BY_NAME), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(_BY_NAME)}"
    return f"unknown metric {name!r}; {hint}"


def margin_problem(name: str, value: float) -> str | None:
    """Why ``value`` cannot be the margin of metric ``name`` (None when it can)."""
    if not math.isfinite(value):
        return f"margin of {name!r} must be a finite number, got {value}"
    if SCALES[metric(name).kind].ratio:
        if value <= 1:
            return f"margin of {name!r} is a ratio and must be > 1 (e.g. 1.25 for x1.25), got {value:g}"
    elif not 0 < value <= 1:
        return f"margin of {name!r} must lie in (0, 1], got {value:g}"
    return None


def rank(name: str) -> tuple[int, str]:
    """Sort key: registry order, ``tool_used:<x>`` with its family, unknown names last."""
    try:
        return REGISTRY.index(metric(name)), name
    except KeyError:
        return len(REGISTRY), name


def sequence_label(tools: tuple[str, ...] | list[str]) -> str:
    """'lookup > search', or '(no tools)'."""
    return " > ".join(tools) if tools else NO_TOOLS
