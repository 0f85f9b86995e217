"""A run's record: what a captured, judged run becomes (:class:`RunRecord`), outcome and all."""

from __future__ import annotations

from evalrunner._redact import redact_text
from evalrunner.core._scope import CaptureResult
from evalrunner.live._classify import classify
from evalrunner.live._schedule import Job
from evalrunner.suite._checks import Judged
from evalrunner.suite._code_checks import CodeChecked
from evalrunner.suite._record import RunRecord

__all__ = ["run_record"]


def run_record(
    job: Job,
    res: CaptureResult,
    started: str,
    latency: float,
    run: Judged,
    code: CodeChecked | None = None,
) -> RunRecord:
    """The run's record: its normalised shape and its one outcome."""
    sc, ep = job.scenario, job.endpoint
    sh, answer, tools = run.shape, run.answer, run.tools
    infra = res.infra
    reason: str | None = None
    if infra is not None and infra.final_error is not None:
        reason = infra.final_reason
    elif infra is not None and infra.faults:
        reason = infra.faults[-1]  # the last fault a timed-out run met
    outcome = classify(
        trajectory=res.trajectory,
        final_answer=answer,
        tools=tools,
        offered_tools=sc.tools,
        checks=sc.checks,
        skip_rules=sc.skip_rules,
        error=res.error,
        infra_error=infra.final_error if infra else None,
        timed_out=sc.timeout_s if res.timed_out else None,
        infra_reason=reason,
        model_calls=sh.llm_calls,
        in_agent_code=infra is not None and not infra.waiting_on_endpoint,
        code=code,
    )
    return RunRecord(
        run_id=job.run_id,
        suite=sc.suite,
        scenario=sc.id,
        model=ep.label,
        index=job.index,
        row=sc.row.id if sc.row is not None else None,
        outcome=outcome.outcome,
        # Exception messages can echo a credential; the reason is shown and written.
        reason=redact_text(outcome.reason) if outcome.reason else None,
        step_count=sh.step_count,
        llm_calls=sh.llm_calls,
        tool_calls=sh.tool_calls,
        tools=tools,
        subagent_count=sh.subagent_count,
        crashed=res.error is not None and outcome.outcome == "crashed",
        prompt_tokens=sh.prompt_tokens,
        completion_tokens=sh.completion_tokens,
        final_answer=answer,
        content_hash=sh.content_hash,
        latency_s=round(latency, 3),
        attempts=infra.max_attempts_used if infra else 1,
        started_at=started,
        checks=outcome.checks,
        **(code or CodeChecked()).recorded(),
    )
