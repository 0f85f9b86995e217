"""Outages: nights the endpoints failed, told apart from nights that measured the agent.

The rule is per model: a model whose runs tonight are mostly ``infra_error`` measured
its endpoint, not the agent, and its scenarios are not compared. A night is an outage
when that holds for every model it ran; one model's endpoint failing leaves the
others' verdicts standing (a regression there still fails the night). The run's exit
code, the history entry and ``evalrunner baseline`` read the same rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evalrunner.core._faults import DEFAULT_BASE, refusal_advice
from evalrunner.suite._record import RunRecord

DEFAULT_OUTAGE_SHARE = 0.5
"""A model with more than this share of infra_error runs had an outage tonight."""


WORKER_LOST = "worker lost"
"""How the reason of a run lost with its Ray worker (or node) begins: the cluster's fault."""


def _lost_with_worker(record: RunRecord) -> bool:
    return not record.measured and (record.reason or "").startswith(WORKER_LOST)


def _made_no_call(record: RunRecord) -> bool:
    """A run none of whose calls reached the model (``no model calls: ...``): how the agent
    reaches its model, not the endpoint, is what failed."""
    return not record.measured and "no model calls: " in (record.reason or "")


@dataclass(frozen=True)
class Outage:
    """Endpoints that failed: too many runs are infra_error to say anything."""

    infra: int
    total: int
    threshold: float
    """The share of infra_error runs above which it is an outage (``--outage-share``)."""
    model: str | None = None
    """The model whose endpoint failed; None: every model of the night."""
    lost: int = 0
    """Of the infra_error runs, those lost with their Ray worker: the cluster failed."""
    no_calls: int = 0
    """Of the infra_error runs, those none of whose calls reached the model."""

    @property
    def share(self) -> float:
        """The share of runs that ended in infra_error."""
        return self.infra / self.total

    def line(self) -> str:
        who, what = (f" {self.model}:", "its runs") if self.model else ("", "this night")
        if 2 * self.lost > self.infra:
            failed = f"the Ray cluster lost {self.lost} of them with their workers, not the agent"
        elif 2 * self.no_calls > self.infra:
            failed = (
                f"{self.no_calls} of them made no model call that reached the model (the way "
                "the agent reaches its model, not the endpoint or the agent's behaviour)"
            )
        else:
            failed = f"the endpoint{'' if self.model else 's'} failed, not the agent"
        return (
            f"outage:{who} {self.infra} of {self.total} runs ended in infra_error "
            f"({self.share:.0%}, more than {self.threshold:.0%}): {failed}; "
            f"no pass^k or verdicts were computed from {what}"
        )


def model_outages(
    records: Sequence[RunRecord], share: float = DEFAULT_OUTAGE_SHARE
) -> dict[str, Outage]:
    """The models with more than ``share`` of their runs infra_error, in name order."""
    runs = Counter(r.model for r in records)
    infra = Counter(r.model for r in records if not r.measured)
    lost = Counter(r.model for r in records if _lost_with_worker(r))
    no_calls = Counter(r.model for r in records if _made_no_call(r))
    return {
        model: Outage(infra[model], runs[model], share, model, lost[model], no_calls[model])
        for model in sorted(runs)
        if infra[model] / runs[model] > share
    }


def what_to_check(records: Sequence[RunRecord]) -> str:
    """The next step for an outage: what the endpoint's refusals said to check (a rejected
    key, an unknown model), the most common first, else the endpoint itself."""
    infra = [r for r in records if not r.measured]
    beside = _not_the_endpoint(infra)
    if beside is not None:
        return beside
    advice = _most_advised(infra)
    if advice is not None:
        return advice
    if any(DEFAULT_BASE in (r.reason or "") for r in infra):
        # No api_base: the calls went to the provider's public API, not a server of one's own.
        return (
            "check the model endpoint (calls given no api_base went where litellm sends them "
            "by default; EVALRUNNER_API_BASE=http://HOST:PORT/v1 sends openai/ models to a "
            "server of your own)"
        )
    return "check the model endpoint"


def _most_advised(infra: Sequence[RunRecord]) -> str | None:
    """What the endpoint's refusals of ``infra`` said to check most often (None: nothing)."""
    found = (refusal_advice(r.reason) for r in infra)
    advice = Counter(a for a in found if a is not None)
    return advice.most_common(1)[0][0] if advice else None


def _not_the_endpoint(infra: Sequence[RunRecord]) -> str | None:
    """What to check when most of the ``infra`` runs failed beside the endpoint: the Ray
    cluster lost them, or the agent reached its model around capture (None: neither)."""
    if 2 * sum(map(_lost_with_worker, infra)) > len(infra):
        return "check the Ray cluster (its workers or a node died with the runs)"
    if 2 * sum(map(_made_no_call, infra)) > len(infra):
        return (
            "check how the agent reaches its model: each run's reason says what capture saw "
            "(docs/proxy.md for command: agents and SDK clients)"
        )
    return None


def outage_of(records: Sequence[RunRecord], share: float = DEFAULT_OUTAGE_SHARE) -> Outage | None:
    """The night's outage: every model it ran had one (see :func:`model_outages`)."""
    out = model_outages(records, share)
    if not records or len(out) < len({r.model for r in records}):
        return None
    return Outage(
        sum(o.infra for o in out.values()),
        len(records),
        share,
        lost=sum(o.lost for o in out.values()),
        no_calls=sum(o.no_calls for o in out.values()),
    )
