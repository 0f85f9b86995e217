"""The judge's pure parts: the grading request, reading a grade, agreement between grades."""

from __future__ import annotations

import asyncio

import pytest

from evalrunner.suite._judge import JudgeAnswerError, agrade, judge_messages, parse_grade
from evalrunner.suite._schema import Checks, Judge


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ('{"score": 0.8, "reason": "close"}', (0.8, "close")),
        ('Sure! ```json\n{"score": 1, "reason": "names it"}\n```', (1.0, "names it")),
        ("0.25", (0.25, "0.25")),
        ("I give it 7/10.", (0.7, "I give it 7/10.")),
        ("Score: 90/100", (0.9, "Score: 90/100")),
        ("PASS", (1.0, "PASS")),
        ("This answer is incorrect.", (0.0, "This answer is incorrect.")),
    ],
)
def test_a_grade_is_read_from_what_judges_write(text: str, grade: tuple[float, str]) -> None:
    assert parse_grade(text) == grade


@pytest.mark.parametrize("text", ["I would rather not say.", '{"score": 7, "reason": "x"}', ""])
def test_an_answer_without_a_grade_in_range_is_the_judges_failure(text: str) -> None:
    with pytest.raises(JudgeAnswerError):
        parse_grade(text)


def test_the_judge_sees_the_rubric_task_and_answer_only_and_grades_agree_or_not() -> None:
    judge = Judge(rubric="Names Paris.", grades=2)
    messages = judge_messages(judge, "Capital of France?", "Paris.")
    assert messages[1]["content"] == (
        "Rubric:\nNames Paris.\n\nTask given to the agent:\nCapital of France?\n\n"
        "The agent's answer:\nParis."
    )
    replies = iter(['{"score": 1}', '{"score": 0.2}'])

    async def complete(sent: list[dict[str, str]]) -> str:
        assert sent == messages
        return next(replies)

    result = asyncio.run(agrade(judge, "Capital of France?", "Paris.", complete))
    assert result.grades == (1.0, 0.2) and result.score == 0.6
    assert result.passed and result.agreed is False
    assert Judge(rubric="x", grades=1).grades == 1


def test_a_code_check_cannot_take_the_judges_name() -> None:
    with pytest.raises(ValueError, match="named 'judge', the name of the judge check"):
        Checks.model_validate({"code": ["my_checks:judge"]})
