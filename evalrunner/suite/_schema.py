"""The suite file format (format_version 1): its versions, the rules its fields follow
(identifiers, names, regexes) and the settings nested in it (retries, skip rules, masks,
checks, the judge, rate limits).

The suite file itself and its scenario entries, built of these, are in
:mod:`evalrunner.suite._suite_spec`.
"""

from __future__ import annotations

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
    "RateLimit",
    "RetryPolicy",
    "SkipRules",
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
AGENT_RE = re.compile(rf"{_DOTTED}:{_DOTTED}")

# Strict: YAML already yields real ints/bools/floats, so "5" or `yes` where a
# number is expected is a mistake worth naming rather than coercing.
STRICT = ConfigDict(extra="forbid", strict=True)
MAX_CELL_RUNS = 10_000
"""The most runs per scenario and model one night takes (suite files and --runs)."""


# --------------------------------------------------------------------------- helpers


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

    model_config = STRICT

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

    model_config = STRICT

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

    model_config = STRICT

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

    model_config = STRICT

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

    model_config = STRICT

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
            if not AGENT_RE.fullmatch(spec):
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


# ---------------------------------------------------------------- rate limits


class RateLimit(BaseModel):
    """A provider's limits for one model, shared by every run of a night (and every Ray worker)."""

    model_config = STRICT

    rpm: int | None = Field(default=None, ge=1, description="Requests per minute.")
    tpm: int | None = Field(
        default=None,
        ge=1,
        description="Tokens per minute (prompt estimated as characters / 4, plus max_tokens).",
    )
    max_concurrency: int | None = Field(
        default=None, ge=1, description="Runs against this model at the same time."
    )


class Pricing(BaseModel):
    """What one model's tokens cost, in USD per million: for a model litellm's price table
    does not know (the embedded model, a gateway's name, a fine-tune), or a rate of your own.
    A model without it or a table price is unpriced (its cost is shown as such, never $0)."""

    model_config = STRICT

    input_per_million: float = Field(ge=0, allow_inf_nan=False, description="Prompt tokens.")
    output_per_million: float = Field(ge=0, allow_inf_nan=False, description="Completion tokens.")
    cached_input_per_million: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Prompt tokens read from the provider's cache (default: the input price).",
    )
    cache_write_per_million: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Prompt tokens written to the provider's cache (default: the input price).",
    )
