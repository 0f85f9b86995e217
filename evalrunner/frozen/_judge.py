"""Frozen mode's judge: its grading requests recorded next to the golden, replayed strictly.

A frozen scenario with ``checks: judge:`` keeps the judge's answers apart from the
agent's recording, in ``<golden stem>.judge.json``: the agent's replay never sees
them, and a changed rubric, task or answer is a grading request with no recorded
answer, which fails the test with the command that records it again. Recording
sends the requests to the judge's model (default: the scenario's) under the
scenario's retry policy; an endpoint that fails there is said as such, never as
the agent's failure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from evalrunner._jsonio import load_model, write_json
from evalrunner.endpoints._endpoints import Endpoint
from evalrunner.suite._judge import request_digest, sent_through
from evalrunner.suite._schema import Judge, RetryPolicy

JUDGE_RECORDING_VERSION = 1
SUFFIX = ".judge.json"


class JudgeAnswer(BaseModel):
    """One grading request and the judge's answer to it."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(description="Digest of the grading request (messages and parameters).")
    content: str = Field(description="What the judge answered.")


class JudgeRecording(BaseModel):
    """A frozen scenario's judge answers, in the order they were asked for."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(default=JUDGE_RECORDING_VERSION, description="File format version.")
    model: str = Field(description="The judge's model when recorded (for people; not replayed).")
    answers: list[JudgeAnswer] = Field(default_factory=list, description="Grading answers.")


def judge_path(golden: Path) -> Path:
    """``foo.json`` -> ``foo.judge.json``, next to the golden."""
    return golden.with_name(golden.stem + SUFFIX)


class MissingGrade(LookupError):
    """Replay met a grading request the recording has no answer for."""


class FrozenJudge:
    """The ``complete`` a frozen run's judge grades with: replay, or record from ``endpoint``."""

    def __init__(
        self,
        judge: Judge,
        path: Path,
        *,
        record: bool,
        endpoint: Callable[[], Endpoint],
        model: str,
        retry: RetryPolicy,
    ) -> None:
        self.judge, self.path, self.record = judge, path, record
        self._endpoint, self._retry = endpoint, retry
        self.recording = JudgeRecording(model=model)
        if not record:
            self.recording = load_model(
                path,
                JudgeRecording,
                what="judge recording",
                version=JUDGE_RECORDING_VERSION,
                fix="record it again with --golden-record",
            )
        self._used: set[int] = set()

    async def complete(self, messages: list[dict[str, str]]) -> str:
        digest = request_digest(messages, self.judge)
        if self.record:
            content = await self._ask(messages)
            self.recording.answers.append(JudgeAnswer(request=digest, content=content))
            return content
        for i, answer in enumerate(self.recording.answers):
            if i not in self._used and answer.request == digest:
                self._used.add(i)
                return answer.content
        raise MissingGrade(
            f"{self.path}: no recorded judge answer for this grading request (the rubric, "
            "the task or the answer changed, or the judge grades more often)"
        )

    async def _ask(self, messages: list[dict[str, str]]) -> str:
        from evalrunner.core._faults import InfraLog
        from evalrunner.core._hook import LiteLLMTransport

        transport = LiteLLMTransport(InfraLog(self._retry))
        return await sent_through(transport, self._endpoint().litellm_kwargs(), self.judge)(
            messages
        )

    def save(self) -> None:
        """Write the recording (redacted, like every file evalrunner writes)."""
        write_json(self.path, self.recording.model_dump(mode="json"))
