"""The suite file and its scenario entries (format_version 1): what a suite YAML file may say.

Every overridable setting is declared once, in :class:`RunSettings`; the suite
(:class:`SuiteSpec`) and each scenario entry (:class:`ScenarioSpec`) accept
them, and a scenario overrides the suite only in what it sets
(:meth:`RunSettings.over`). These models validate; turning a validated file
into per-scenario settings happens once, in :mod:`evalrunner.suite._settings`,
and reading the YAML with its one-line errors in :mod:`evalrunner.suite._loader`.
The nested settings and the rules fields follow are in :mod:`evalrunner.suite._schema`.
"""

from __future__ import annotations

import difflib
import re

from pydantic import BaseModel, Field, field_validator, model_validator

from evalrunner.suite._schema import (
    AGENT_RE,
    FORMAT_VERSION,
    FROZEN_TAG,
    MAX_CELL_RUNS,
    STRICT,
    SUPPORTED_FORMAT_VERSIONS,
    Checks,
    Keys,
    Mask,
    ModelNames,
    Pricing,
    RateLimit,
    RetryPolicy,
    SkipRules,
    Tags,
    UniqueToolNames,
    check_identifier,
    located,
    version_problem,
)
from evalrunner.suite._tolerance import Tolerance

__all__ = ["RunSettings", "ScenarioFields", "ScenarioSpec", "SuiteSpec"]

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


# ----------------------------------------------------------- the settings, once


class RunSettings(BaseModel):
    """Settings a suite sets for its scenarios and a scenario may override.

    Declared once, here. A suite's values apply to every scenario; a scenario
    entry overrides only what it sets (see :meth:`over`).
    """

    model_config = STRICT

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

    model_config = STRICT

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
    trajectory_file: bool = Field(
        default=False,
        description="The command writes its run's trajectory itself, to the file "
        "$EVALRUNNER_TRAJECTORY_FILE names (an ATIF trajectory, or an OTLP JSON export of "
        "its own trace), and the run is that trajectory instead of the capture proxy's; a "
        "run that writes none crashed. Its model calls may still go through the proxy.",
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
        if value is None or AGENT_RE.fullmatch(value):
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
            for name in ("env", "cwd", "trajectory_file"):
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


class _SuiteHeader(BaseModel):
    """The fields a suite file starts with (first in field order, and so in messages)."""

    model_config = STRICT

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
    budget_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="USD a night may spend: no run starts that would cross it (run "
        "--budget overrides it); every model needs a price.",
    )
    pricing: dict[str, Pricing] = Field(
        default_factory=dict,
        description="Model string -> what its tokens cost ({input_per_million, "
        "output_per_million, cached_input_per_million, cache_write_per_million}, USD); "
        "overrides litellm's price table, and prices a model it does not know.",
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
