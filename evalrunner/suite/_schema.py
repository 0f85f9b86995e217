"""The suite file format (format_version 1): what a suite YAML file may say.

Every overridable setting is declared once, in :class:`RunSettings`; the suite
(:class:`SuiteSpec`) and each scenario entry (:class:`ScenarioSpec`) accept
them, and a scenario overrides the suite only in what it sets
(:meth:`RunSettings.over`). These models validate; turning a validated file
into per-scenario settings happens once, in :mod:`evalrunner.suite._settings`,
and reading the YAML with its one-line errors in :mod:`evalrunner.suite._loader`.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from evalrunner.suite._record import same_files
from evalrunner.suite._tolerance import Tolerance

__all__ = [
    "FORMAT_VERSION",
    "FROZEN_TAG",
    "MAX_CELL_RUNS",
    "SKIP_CLASSES",
    "SUPPORTED_FORMAT_VERSIONS",
    "Checks",
    "Judge",
    "Mask",
    "RetryPolicy",
    "RunSettings",
    "ScenarioFields",
    "ScenarioSpec",
    "SkipRules",
    "SuiteSpec",
    "Tolerance",
    "check_identifier",
    "version_problem",
]

FORMAT_VERSION = 1
SUPPORTED_FORMAT_VERSIONS: tuple[int, ...] = (1,)
FROZEN_TAG = "frozen"
"""Scenarios tagged ``frozen`` form the small, stable subset run on pull requests."""

SKIP_CLASSES: tuple[str, ...] = (
    "malformed_tool_arguments",
    "unknown_tool",
    "empty_output",
    "truncated_output",
    "invalid_output",
    "no_final_answer",
)

_IDENT_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_AGENT_RE = re.compile(rf"{_DOTTED}:{_DOTTED}")

# Strict: YAML already yields real ints/bools/floats, so "5" or `yes` where a
# number is expected is a mistake worth naming rather than coercing.
_CONFIG = ConfigDict(extra="forbid", strict=True)
MAX_CELL_RUNS = 10_000
"""The most runs per scenario and model one night takes (suite files and --runs)."""


# --------------------------------------------------------------------------- helpers


_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_]\w*)\}")
"""'{name}' in a command's argument; '${NAME}' is the shell's, left alone."""


def _takes_the_task(command: list[str]) -> None:
    """A command agent gets the scenario's input only where an argument says '{task}': without
    it (or with a misspelt one) every run would test the program on no task at all."""
    for i, arg in enumerate(command):
        for name in _PLACEHOLDER.findall(arg):
            if name != "task":
                raise located(
                    f"'{{{name}}}' is not a placeholder: '{{task}}', the scenario's input, is "
                    "the only one",
                    "command",
                    i,
                )
    if not any("{task}" in arg for arg in command):
        args = [*command, "{task}"] if len(" ".join(command)) <= 60 else [command[0], "…", "{task}"]
        shown = ", ".join(f'"{arg}"' for arg in args)
        raise located(
            "never gives the program the scenario's input: add '{task}' where it takes the "
            f"task, e.g. [{shown}]",
            "command",
        )


def located(message: str, *suffix: str | int) -> PydanticCustomError:
    """A validation error whose location extends the validator's by `suffix`.

    The loader (``_explain``) reads this error type and points at the key the
    suffix names, so a problem found by a model-level check gets its own line.
    """
    return PydanticCustomError("evalrunner", "{message}", {"message": message, "suffix": suffix})


def check_identifier(value: str, what: str) -> str:
    """``value`` if it is a valid id or name; else ValueError saying the rule and a fix."""
    if _IDENT_RE.fullmatch(value):
        return value
    suggestion = re.sub(r"[^a-z0-9_-]+", "-", value.lower()).strip("-_")
    hint = f"; try {suggestion!r}" if suggestion and _IDENT_RE.fullmatch(suggestion) else ""
    raise ValueError(
        f"{value!r} is not a valid {what}: use lowercase letters, digits, '_' and '-', "
        f"starting with a letter or digit{hint}"
    )


def _compile_regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regex {quote(pattern)} — {exc}") from None


def _check_names(values: list[str], what: str, *, unique: bool = False) -> list[str]:
    seen: set[str] = set()
    for i, value in enumerate(values):
        if not value.strip():
            raise located(f"empty {what}; remove the entry or give a value", i)
        if unique and value in seen:
            raise located(f"{what} {value!r} is listed twice; remove one", i)
        seen.add(value)
    return values


def _check_models(values: list[str]) -> list[str]:
    _check_names(values, "model", unique=True)
    problem = same_files(values)
    if problem is not None:
        raise ValueError(problem)
    return values


def _names(what: str, *, unique: bool = False) -> AfterValidator:
    """Checks a list of names: none empty (and, with `unique`, none twice)."""
    return AfterValidator(lambda values: _check_names(values, what, unique=unique))


Texts = Annotated[list[str], _names("text")]
ToolNames = Annotated[list[str], _names("tool name")]
UniqueToolNames = Annotated[list[str], _names("tool name", unique=True)]
ModelNames = Annotated[list[str], AfterValidator(_check_models)]
Keys = Annotated[list[str], _names("key")]
Tags = Annotated[list[str], _names("tag")]


def quote(text: str) -> str:
    """Quote user text as written (regexes read badly with repr's doubled backslashes)."""
    return f"'{text}'" if "'" not in text and text.isprintable() else repr(text)


def version_problem(value: object) -> str:
    """Why a suite file's ``format_version`` cannot be read by this evalrunner."""
    supported = ", ".join(str(v) for v in SUPPORTED_FORMAT_VERSIONS)
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value > max(SUPPORTED_FORMAT_VERSIONS)
    ):
        return (
            f"unsupported format_version {value}; this evalrunner reads format_version {supported}; "
            "upgrade evalrunner to read this file"
        )
    return f"unsupported format_version {value!r}; this evalrunner reads format_version {supported}"


# ----------------------------------------------------------------- nested settings


class RetryPolicy(BaseModel):
    """How a live run retries a model call that failed for infrastructure reasons."""

    model_config = _CONFIG

    max_attempts: int = Field(
        default=3,
        ge=1,
        description="Attempts per model call, the first included; 1 disables retries.",
    )
    backoff_s: float = Field(
        default=0.5,
        ge=0,
        allow_inf_nan=False,
        description="Wait before the first retry, in seconds; later waits grow exponentially.",
    )
    max_backoff_s: float = Field(
        default=8.0,
        ge=0,
        allow_inf_nan=False,
        description="Upper bound on any single wait, in seconds.",
    )
    jitter: bool = Field(
        default=True,
        description="Randomise each wait so parallel runs do not retry in lockstep.",
    )
    request_timeout_s: float = Field(
        default=60.0,
        gt=0,
        allow_inf_nan=False,
        description="Seconds one attempt may wait for the endpoint (without a byte arriving) "
        "before it is abandoned and retried; never past the run's timeout_s.",
    )
    attempt_deadline_s: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Seconds one attempt may take in all, bytes arriving or not (an endpoint "
        "that drips a byte at a time never trips request_timeout_s); then it is abandoned "
        "and retried. Default: 4 x request_timeout_s.",
    )

    @model_validator(mode="after")
    def _backoff_order(self) -> RetryPolicy:
        if self.max_backoff_s < self.backoff_s:
            raise located(
                f"max_backoff_s ({self.max_backoff_s:g}) is smaller than backoff_s "
                f"({self.backoff_s:g}); raise max_backoff_s or lower backoff_s",
                "max_backoff_s",
            )
        return self


class SkipRules(BaseModel):
    """Which weak-model failure classes make a run *skipped* instead of *failed*.

    A skip says "this model could not attempt the task", which is counted apart
    from "the agent attempted it and got it wrong". Turn a rule off to count that
    class as a failure.
    """

    model_config = _CONFIG

    malformed_tool_arguments: bool = Field(
        default=True, description="A tool call's arguments are not valid JSON for the tool."
    )
    unknown_tool: bool = Field(
        default=True, description="The model called a tool that was not offered."
    )
    empty_output: bool = Field(
        default=True, description="The final answer is empty or only whitespace."
    )
    truncated_output: bool = Field(
        default=True, description="The model stopped at its token limit (finish reason 'length')."
    )
    invalid_output: bool = Field(
        default=True,
        description="The final answer does not match invalid_output_pattern (when one is set).",
    )
    no_final_answer: bool = Field(
        default=True, description="The agent used up max_turns without giving a final answer."
    )
    invalid_output_pattern: str | None = Field(
        default=None,
        description="Regex (re.search) a final answer must match to be valid, e.g. '\\\\S' or '^[A-Z]'.",
    )

    @field_validator("invalid_output_pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            _compile_regex(value)
        return value

    def skips(self, failure_class: str) -> bool:
        """Whether a run that failed with `failure_class` (one of SKIP_CLASSES) is a skip."""
        if failure_class not in SKIP_CLASSES:
            raise ValueError(
                f"unknown failure class {failure_class!r}; known: {', '.join(SKIP_CLASSES)}"
            )
        return bool(getattr(self, failure_class))

    def over(self, base: SkipRules) -> SkipRules:
        """The rules set here replace the base's, rule by rule."""
        return base.model_copy(update={name: getattr(self, name) for name in self.model_fields_set})


class Mask(BaseModel):
    """A regex replacement applied to every string while normalising a trajectory."""

    model_config = _CONFIG

    pattern: str = Field(
        description="Regex (Python syntax) matching the volatile text, e.g. 'req_[0-9a-f]+'."
    )
    replacement: str = Field(
        default="<masked>",
        description="What each match becomes; may use group references such as '\\\\1'.",
    )

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str) -> str:
        if _compile_regex(value).fullmatch("") is not None:
            raise ValueError(
                f"regex {quote(value)} matches the empty string, so the replacement would be "
                "inserted between every character; use '+' instead of '*' or '?'"
            )
        return value

    @model_validator(mode="after")
    def _replacement_fits(self) -> Mask:
        try:
            re.compile(self.pattern).sub(self.replacement, "")
        except (re.error, IndexError) as exc:
            raise located(
                f"invalid replacement {quote(self.replacement)} — {exc}", "replacement"
            ) from None
        return self


JUDGE = "judge"
"""The judge check's name: its check, its score and its grades are recorded under it."""


def code_check_name(spec: str) -> str:
    """A code check's name: its function's ('my_checks:cites' -> 'cites')."""
    return spec.rpartition(":")[2].rpartition(".")[2]


class Judge(BaseModel):
    """A model that grades each run's answer against a rubric (``checks: judge:``)."""

    model_config = _CONFIG

    rubric: str = Field(
        description="What a good answer does, for the judge; with a dataset, a template over "
        "the row's fields, e.g. 'Names {capital} as the capital'."
    )
    model: str | None = Field(
        default=None,
        description="litellm model string of the judge; default: the model the run used. Its "
        "calls are never part of the agent's steps, calls or tokens.",
    )
    pass_score: float = Field(
        default=0.5,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="A run passes the 'judge' check when its mean grade is at least this.",
    )
    grades: int = Field(
        default=2,
        ge=1,
        le=5,
        description="Times each answer is graded; with 2 or more the night measures how often "
        "the judge disagrees with itself (metric judge_agreement).",
    )
    temperature: float = Field(
        default=0.0, ge=0, le=2, description="The judge's sampling temperature."
    )
    max_tokens: int = Field(default=256, ge=16, description="Most tokens a grade may take.")

    @field_validator("rubric")
    @classmethod
    def _rubric_given(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty; say what a good answer does")
        return value

    @field_validator("model")
    @classmethod
    def _model_given(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("is empty; give a litellm model string, or leave it out")
        return value


class Checks(BaseModel):
    """Declarative expectations about one run; each one becomes a named boolean."""

    model_config = _CONFIG

    answer_contains: Texts = Field(
        default_factory=list, description="Each must appear in the final answer (case-insensitive)."
    )
    answer_not_contains: Texts = Field(
        default_factory=list, description="None may appear in the final answer (case-insensitive)."
    )
    answer_matches: str | None = Field(
        default=None, description="Regex that must match somewhere in the final answer (re.search)."
    )
    tools_used: ToolNames = Field(
        default_factory=list, description="Each tool must be called at least once."
    )
    tools_not_used: ToolNames = Field(
        default_factory=list, description="None of these tools may be called."
    )
    tools_in_order: ToolNames = Field(
        default_factory=list,
        description="These tools must be called in this order; other calls may come in between.",
    )
    max_tool_calls: int | None = Field(
        default=None, ge=0, description="Upper bound on the number of tool calls."
    )
    all_tools_succeeded: bool = Field(
        default=False, description="When true, no tool call may have failed; false checks nothing."
    )
    code: list[str] = Field(
        default_factory=list,
        description="Checks in code: import paths 'package.module:function' of functions that "
        "get the run (evalrunner.CheckInput) and return True/False, a score in [0, 1], or an "
        "evalrunner.CheckResult; sync or async. A score is also a metric, 'score:<function>'.",
    )

    judge: Judge | None = Field(
        default=None,
        description="A model grades the answer against a rubric: the 'judge' check (mean grade "
        ">= pass_score) and the score 'score:judge'.",
    )

    @field_validator("code")
    @classmethod
    def _code_paths(cls, value: list[str]) -> list[str]:
        names: dict[str, str] = {}
        for spec in value:
            if not _AGENT_RE.fullmatch(spec):
                raise ValueError(
                    f"{spec!r} is not an import path; write 'package.module:function', "
                    "e.g. 'my_checks:cites_a_source'"
                )
            name = code_check_name(spec)
            if name == JUDGE:
                raise ValueError(
                    f"{spec!r} is named 'judge', the name of the judge check; rename the function"
                )
            if name in names:
                raise ValueError(
                    f"{names[name]!r} and {spec!r} are both named {name!r} (a check's name is "
                    "its function's): rename one"
                )
            names[name] = spec
        return value

    @field_validator("answer_matches")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            _compile_regex(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Checks:
        for field in ("tools_used", "tools_in_order"):
            for tool in getattr(self, field):
                if tool in self.tools_not_used:
                    raise located(
                        f"tool {tool!r} is in both {field} and tools_not_used; remove it from one",
                        "tools_not_used",
                    )
        return self


# ----------------------------------------------------------- the settings, once


class RunSettings(BaseModel):
    """Settings a suite sets for its scenarios and a scenario may override.

    Declared once, here. A suite's values apply to every scenario; a scenario
    entry overrides only what it sets (see :meth:`over`).
    """

    model_config = _CONFIG

    models: ModelNames = Field(
        default_factory=list,
        description="litellm model strings to run against; empty means the embedded local model.",
    )
    runs: int = Field(
        default=5,
        ge=1,
        le=MAX_CELL_RUNS,
        description=(
            "Runs per scenario and model (per row, for a dataset scenario), at most 10,000 (a night plans and tracks every "
            "run; more is a typo, or a job for several nights)."
        ),
    )
    rows: int | None = Field(
        default=None,
        ge=1,
        description="Dataset scenarios only: run a stable subset of this many rows (the same "
        "rows every night, chosen by a hash of their ids); default: every row.",
    )
    timeout_s: float = Field(
        default=120.0, gt=0, allow_inf_nan=False, description="Per-run timeout in seconds."
    )
    temperature: float = Field(default=0.8, ge=0, le=2, description="Sampling temperature, 0 to 2.")
    max_turns: int = Field(
        default=6, ge=1, description="Agent loop turns before the run counts as unfinished."
    )
    skip_rules: SkipRules = Field(
        default_factory=SkipRules,
        description="Weak-model failure classes that count as skips; a scenario's replace the suite's rule by rule.",
    )
    volatile_keys: Keys = Field(
        default_factory=list,
        description="Extra JSON keys to drop when normalising (timestamps and ids are dropped already); a scenario's are added to the suite's.",
    )
    masks: list[Mask] = Field(
        default_factory=list,
        description="Regex replacements applied to strings when normalising; a scenario's run after the suite's.",
    )
    tolerance: Tolerance = Field(
        default_factory=Tolerance,
        description="Settings for the statistics that compare runs to a baseline; a scenario's are merged over the suite's.",
    )

    def over(self, base: RunSettings) -> RunSettings:
        """These settings, as a file sets them, layered over `base`.

        What this layer sets replaces the base's value, except: skip rules
        replace rule by rule, tolerances merge (margins metric by metric),
        volatile keys and masks are added after the base's. Unset fields keep
        the base's value.
        """
        own = RunSettings.model_fields.keys() & self.model_fields_set
        return base.model_copy(
            update={
                **{name: getattr(self, name) for name in own},
                "skip_rules": self.skip_rules.over(base.skip_rules),
                "tolerance": self.tolerance.over(base.tolerance),
                "volatile_keys": list(dict.fromkeys([*base.volatile_keys, *self.volatile_keys])),
                "masks": [*base.masks, *self.masks],
            }
        )


# ------------------------------------------------------------------- the file


class ScenarioFields(BaseModel):
    """What a scenario is, apart from its settings: the agent, its task and the checks."""

    model_config = _CONFIG

    id: str = Field(
        description="Identifier unique within the suite: lowercase letters, digits, '_' and '-'."
    )
    description: str = Field(default="", description="What the scenario exercises, for people.")
    agent: str | None = Field(
        default=None,
        description="Import path of the agent callable, 'package.module:callable'; "
        "give this or command.",
    )
    command: list[str] | None = Field(
        default=None,
        min_length=1,
        description="A subprocess agent, any language, instead of agent: its argv, e.g. "
        "['node', 'agent.mjs', '{task}'] ('{task}' becomes the input). It runs with "
        "OPENAI_BASE_URL, OPENAI_API_BASE, ANTHROPIC_BASE_URL and a dummy key pointing at "
        "evalrunner's capture proxy; its final answer is the last stdout line, or the last "
        'line {"final_answer": ...}. Bounded by timeout_s.',
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment variables for command (the proxy's variables win).",
    )
    cwd: str | None = Field(
        default=None,
        description="Working directory of command, relative to where evalrunner runs; "
        "default: that directory.",
    )
    input: str = Field(
        description="The user task given to the agent; with a dataset, a template over the "
        "row's fields, e.g. 'What is the capital of {country}?'."
    )
    dataset: str | None = Field(
        default=None,
        description="A JSONL or CSV file of inputs, relative to the suite file (or a glob, "
        "e.g. 'data/*.jsonl'): one row per input, each run 'runs' times. input and the text checks (answer_contains, "
        "answer_not_contains, answer_matches) may name the row's fields as {field}; a row's "
        "'id' field names it (else 'row-1', 'row-2', ...).",
    )
    tools: UniqueToolNames = Field(
        default_factory=list, description="Names of the tools offered to the agent."
    )
    checks: Checks = Field(default_factory=Checks, description="Expectations checked on every run.")
    tags: Tags = Field(
        default_factory=list,
        description="Free labels; 'frozen' puts the scenario in the pull-request subset.",
    )
    keep_order: bool = Field(
        default=False,
        description="Keep sub-agent order when normalising (by default sub-agents are sorted, as they may run concurrently).",
    )

    @field_validator("id")
    @classmethod
    def _id_format(cls, value: str) -> str:
        return check_identifier(value, "scenario id")

    @field_validator("agent")
    @classmethod
    def _agent_format(cls, value: str | None) -> str | None:
        if value is None or _AGENT_RE.fullmatch(value):
            return value
        hint = ""
        if ":" not in value and "." in value:
            module, _, attr = value.rpartition(".")
            hint = f"; did you mean '{module}:{attr}'?"
        raise ValueError(
            f"{value!r} is not an import path; write 'package.module:callable', "
            f"e.g. 'evalrunner.examples:direct_answer'{hint}"
        )

    @model_validator(mode="after")
    def _agent_or_command(self) -> ScenarioFields:
        if self.agent is None and self.command is None:
            raise located(
                "needs an agent: give agent: 'package.module:callable' or command: [argv, ...]",
                "agent",
            )
        if self.agent is not None and self.command is not None:
            raise located("give agent or command, not both; remove one", "command")
        if self.command is None:
            for name in ("env", "cwd"):
                if getattr(self, name):
                    raise located(f"{name} applies only to command agents; remove it", name)
        elif not self.command[0].strip():
            raise located(
                "the program (first item) is empty; name the program to run", "command", 0
            )
        else:
            _takes_the_task(self.command)
        return self

    @field_validator("input")
    @classmethod
    def _input_given(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty; give the user task the agent should perform")
        return value

    @property
    def frozen(self) -> bool:
        """Whether the scenario belongs to the pull-request subset."""
        return FROZEN_TAG in self.tags


# Bases are listed settings first so that the scenario's own fields come first
# in field order (pydantic orders the last base's fields first).
class ScenarioSpec(RunSettings, ScenarioFields):
    """One entry of ``scenarios:``: a task for an agent; settings it sets override the suite's."""

    @model_validator(mode="after")
    def _rows_need_a_dataset(self) -> ScenarioSpec:
        if "rows" in self.model_fields_set and self.dataset is None:
            raise located("applies only to a scenario with a dataset; remove it", "rows")
        return self

    @model_validator(mode="after")
    def _checked_tools_are_offered(self) -> ScenarioSpec:
        """A tool check naming a near miss of an offered tool is a typo: as written it fails
        (or, in tools_not_used, passes) every run. Other names are allowed: an agent may
        call tools of its own that the scenario does not offer."""
        if not self.tools:
            return self
        for field in ("tools_used", "tools_not_used", "tools_in_order"):
            for i, tool in enumerate(getattr(self.checks, field)):
                if tool in self.tools:
                    continue
                close = difflib.get_close_matches(tool, self.tools, n=1, cutoff=0.8)
                if close:
                    raise located(
                        f"tool {tool!r} is not among the scenario's tools "
                        f"({', '.join(self.tools)}); did you mean {close[0]!r}?",
                        "checks",
                        field,
                        i,
                    )
        return self


class RateLimit(BaseModel):
    """A provider's limits for one model, shared by every run of a night (and every Ray worker)."""

    model_config = _CONFIG

    rpm: int | None = Field(default=None, ge=1, description="Requests per minute.")
    tpm: int | None = Field(
        default=None,
        ge=1,
        description="Tokens per minute (prompt estimated as characters / 4, plus max_tokens).",
    )
    max_concurrency: int | None = Field(
        default=None, ge=1, description="Runs against this model at the same time."
    )


class _SuiteHeader(BaseModel):
    """The fields a suite file starts with (first in field order, and so in messages)."""

    model_config = _CONFIG

    format_version: int = Field(
        description=f"Version of this file format; must be {FORMAT_VERSION}."
    )
    name: str = Field(description="Suite name; must equal the file name without '.yaml'.")
    description: str = Field(default="", description="What the suite covers, for people.")

    @field_validator("format_version")
    @classmethod
    def _supported_version(cls, value: int) -> int:
        if value not in SUPPORTED_FORMAT_VERSIONS:
            raise ValueError(version_problem(value))
        return value

    @field_validator("name")
    @classmethod
    def _name_format(cls, value: str) -> str:
        return check_identifier(value, "suite name")


class SuiteSpec(RunSettings, _SuiteHeader):
    """One suite file as written: shared settings and the scenarios they apply to."""

    concurrency: int = Field(default=4, ge=1, description="Runs executed at the same time.")
    retry: RetryPolicy = Field(
        default_factory=RetryPolicy,
        description="Retry policy for failing model calls, for every scenario.",
    )
    rate_limits: dict[str, RateLimit] = Field(
        default_factory=dict,
        description="Model string -> its provider's limits ({rpm, tpm, max_concurrency}), "
        "kept by one limiter shared by the whole night.",
    )
    scenarios: list[ScenarioSpec] = Field(
        min_length=1, description="The scenarios to run: at least one, with unique ids."
    )

    @field_validator("scenarios")
    @classmethod
    def _unique_ids(cls, value: list[ScenarioSpec]) -> list[ScenarioSpec]:
        first: dict[str, int] = {}
        for i, scenario in enumerate(value):
            if scenario.id in first:
                raise located(
                    f"duplicate scenario id {scenario.id!r} (also scenarios[{first[scenario.id]}]); "
                    "ids must be unique within a suite",
                    i,
                    "id",
                )
            first[scenario.id] = i
        return value
