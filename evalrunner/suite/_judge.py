"""A judge check: a model grades a run's answer against the scenario's rubric.

``checks: judge: {rubric, model, pass_score, grades}``. The judge sees the task, the
rubric and the answer, never the agent's trajectory, and answers with a grade in
[0, 1]. Each answer is graded ``grades`` times: the mean is the run's score
(``score:judge``), the ``judge`` check holds when it reaches ``pass_score``, and with
two grades or more the run records whether they agreed (metric ``judge_agreement``),
so a judge that grows noisier, or changes, shows as itself and not as the agent.

This module is pure: how a grading request reaches a model is the caller's
(``complete``): the live runner sends it under the night's retry policy and rate
limits, frozen mode records and replays it. A judge answer without a grade is the
judge's failure, reported like a code check's bug; an endpoint that fails is the
caller's to classify (an infrastructure fault, never the agent's failure).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalrunner.suite._code_checks import CodeChecked
from evalrunner.suite._schema import JUDGE, Judge

__all__ = [
    "JudgeAnswerError",
    "JudgeResult",
    "agrade",
    "file_judgement",
    "judge_messages",
    "parse_grade",
    "request_digest",
    "sent_through",
]

Complete = Callable[[list[dict[str, str]]], Awaitable[str]]
"""Sends one grading request (chat messages) to the judge's model; returns its text."""

_SYSTEM = (
    "You grade one answer an AI agent gave to a task, against a rubric. Judge only what the "
    "rubric asks. Reply with one line of JSON and nothing else: "
    '{"score": <a number from 0 (fails the rubric) to 1 (meets it fully)>, '
    '"reason": "<one short sentence>"}'
)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(/\s*(100|10)(?!\d))?")
_VERDICT = re.compile(r"\b(pass|passed|yes|correct|fail|failed|no|incorrect)\b", re.IGNORECASE)


class JudgeAnswerError(ValueError):
    """The judge answered without a grade: the judge's failure, not the agent's."""


def judge_messages(judge: Judge, task: str, answer: str) -> list[dict[str, str]]:
    """The grading request: the rubric, the task and the answer (nothing else of the run)."""
    user = f"Rubric:\n{judge.rubric}\n\nTask given to the agent:\n{task}\n\nThe agent's answer:\n{answer}"
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def parse_grade(text: str) -> tuple[float, str]:
    """(grade in [0, 1], reason) from a judge's answer.

    A JSON object with ``score`` (the asked-for form), else a number on its own
    (``0.8``, ``8/10``, ``80/100``), else a plain verdict word (pass / fail).
    """
    graded = _json_grade(text)
    if graded is not None:
        return graded
    number = _NUMBER.search(text)
    if number is not None:
        value = float(number.group(1))
        if number.group(3):
            value /= float(number.group(3))
        if 0 <= value <= 1:
            return value, _one_line(text)
    verdict = _VERDICT.search(text)
    if verdict is not None:
        good = verdict.group(1).lower() in ("pass", "passed", "yes", "correct")
        return (1.0 if good else 0.0), _one_line(text)
    raise JudgeAnswerError(f"the judge's answer holds no grade: {_one_line(text)[:120]!r}")


def _json_grade(text: str) -> tuple[float, str] | None:
    """(grade, reason) from the first JSON object in ``text`` with a numeric ``score``."""
    for found in re.finditer(r"\{[^{}]*\}", text):
        try:
            doc = json.loads(found.group(0))
        except ValueError:
            continue
        score = doc.get("score") if isinstance(doc, dict) else None
        if isinstance(score, int | float) and not isinstance(score, bool):
            return _checked(float(score), text), " ".join(str(doc.get("reason", "")).split())
    return None


def _checked(score: float, text: str) -> float:
    if not (math.isfinite(score) and 0 <= score <= 1):
        raise JudgeAnswerError(
            f"the judge's grade {score!r} is outside [0, 1]: {_one_line(text)[:120]!r}"
        )
    return score


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class JudgeResult:
    """The grades of one answer."""

    grades: tuple[float, ...]
    reasons: tuple[str, ...]
    pass_score: float

    @property
    def score(self) -> float:
        return sum(self.grades) / len(self.grades)

    @property
    def passed(self) -> bool:
        return self.score >= self.pass_score

    @property
    def agreed(self) -> bool | None:
        """Whether every grade fell on the same side of ``pass_score`` (None: one grade)."""
        if len(self.grades) < 2:
            return None
        return len({g >= self.pass_score for g in self.grades}) == 1

    @property
    def reason(self) -> str:
        """Why it failed, for the run's reason: the grade and the judge's own words."""
        said = next((r for r in self.reasons if r), "")
        grade = f"grade {self.score:.2f} < {self.pass_score:g}"
        return f"{grade}: {said[:160]}" if said else grade


async def agrade(judge: Judge, task: str, answer: str, complete: Complete) -> JudgeResult:
    """Grade ``answer`` ``judge.grades`` times. An endpoint fault propagates from
    ``complete``; an answer without a grade raises :class:`JudgeAnswerError`."""
    messages = judge_messages(judge, task, answer)
    found: list[tuple[float, str]] = [
        parse_grade(await complete(messages)) for _ in range(judge.grades)
    ]
    return JudgeResult(tuple(g for g, _ in found), tuple(r for _, r in found), judge.pass_score)


def file_judgement(out: CodeChecked, result: JudgeResult) -> None:
    """Record the judge's verdict with the run's other checks: the ``judge`` check, its
    reason when it failed, its score and its grades."""
    out.held[JUDGE] = result.passed
    if not result.passed:
        out.reasons[JUDGE] = result.reason
    out.scores[JUDGE] = result.score
    out.judge = result


def sent_through(
    transport: Any, where: Mapping[str, Any], judge: Judge, usages: list[Any] | None = None
) -> Complete:
    """The ``complete`` that sends grading requests through ``transport`` (a
    ``LiteLLMTransport``: the suite's retry policy, a rate limit's gate) to the model
    ``where`` names (``Endpoint.litellm_kwargs``). ``usages`` gets each answer's token
    usage (what the judge's calls cost, priced apart from the agent's)."""

    async def complete(messages: list[dict[str, str]]) -> str:
        request = {**where, "messages": messages, **grading_parameters(judge)}
        reply = await transport.acomplete(request)
        if reply.record is None:
            raise RuntimeError("the judge's endpoint gave no answer")
        if usages is not None:
            usages.append(reply.record.usage)
        return reply.record.content or ""

    return complete


def grading_parameters(judge: Judge) -> dict[str, float | int]:
    """Sampling parameters every grading request carries."""
    return {"temperature": judge.temperature, "max_tokens": judge.max_tokens}


def request_digest(messages: Sequence[dict[str, str]], judge: Judge) -> str:
    """What identifies a grading request in a frozen recording (not the model string,
    which a replay need not know)."""
    import hashlib

    payload = json.dumps(
        {"messages": list(messages), **grading_parameters(judge)},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
