"""A run's record: what a captured, judged run becomes (:class:`RunRecord`), outcome and all."""

from __future__ import annotations

from evalrunner._redact import redact_text
from evalrunner.core._faults import InfraLog
from evalrunner.core._scope import CaptureResult
from evalrunner.live._classify import Classification, classify
from evalrunner.live._schedule import Job
from evalrunner.suite._checks import Judged
from evalrunner.suite._code_checks import CodeChecked
from evalrunner.suite._record import Outcome, RunRecord

__all__ = ["row_of", "run_record"]


def run_record(
    job: Job,
    res: CaptureResult,
    started: str,
    latency: float,
    run: Judged,
    code: CodeChecked | None = None,
) -> RunRecord:
    """The run's record: its normalised shape and its one outcome."""
    sc, sh, infra = job.scenario, run.shape, res.infra
    outcome = _classified(job, res, run, code)
    return RunRecord(
        run_id=job.run_id,
        suite=sc.suite,
        scenario=sc.id,
        model=job.endpoint.label,
        index=job.index,
        row=row_of(job),
        outcome=outcome.outcome,
        # Exception messages can echo a credential; the reason is shown and written.
        reason=redact_text(outcome.reason) if outcome.reason else None,
        step_count=sh.step_count,
        llm_calls=sh.llm_calls,
        tool_calls=sh.tool_calls,
        tools=run.tools,
        tools_alone=list(run.tools_alone),
        subagent_count=sh.subagent_count,
        crashed=res.error is not None and outcome.outcome == Outcome.CRASHED,
        prompt_tokens=sh.prompt_tokens,
        completion_tokens=sh.completion_tokens,
        cache_read_tokens=run.cache[0],
        cache_write_tokens=run.cache[1],
        cost_usd=_cost(job, sh.prompt_tokens, sh.completion_tokens, run.cache),
        tool_errors=run.tool_errors,
        tool_latency_s=None if run.tool_latency is None else round(run.tool_latency, 6),
        final_answer=run.answer,
        content_hash=sh.content_hash,
        latency_s=round(latency, 3),
        attempts=infra.max_attempts_used if infra else 1,
        started_at=started,
        checks=outcome.checks,
        **(code or CodeChecked()).recorded(),
    )


def row_of(job: Job) -> str | None:
    """The id of the dataset row ``job`` runs on (None: its scenario has no dataset)."""
    row = job.scenario.row
    return row.id if row is not None else None


def _classified(
    job: Job, res: CaptureResult, run: Judged, code: CodeChecked | None
) -> Classification:
    sc, infra = job.scenario, res.infra
    return classify(
        trajectory=res.trajectory,
        final_answer=run.answer,
        tools=run.tools,
        offered_tools=sc.tools,
        checks=sc.checks,
        skip_rules=sc.skip_rules,
        error=res.error,
        infra_error=infra.final_error if infra else None,
        timed_out=sc.timeout_s if res.timed_out else None,
        infra_reason=_infra_reason(infra),
        model_calls=run.shape.llm_calls,
        in_agent_code=infra is not None and not infra.waiting_on_endpoint,
        code=code,
    )


def _infra_reason(infra: InfraLog | None) -> str | None:
    """Why the endpoint failed the run: its final error, else the last fault a timed-out run
    met (None: it met none)."""
    if infra is None:
        return None
    if infra.final_error is not None:
        return infra.final_reason
    return infra.faults[-1] if infra.faults else None


def _cost(
    job: Job, prompt: int, completion: int, cache: tuple[int | None, int | None]
) -> float | None:
    """The run's cost at its endpoint's price (None: unpriced), to a millionth of a cent."""
    price = job.endpoint.price
    if price is None:
        return None
    return round(price.cost(prompt, completion, *cache), 8)
