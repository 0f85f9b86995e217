"""What an outage night says failed, and what to check next."""

from __future__ import annotations

from evalrunner.live._outage import WORKER_LOST, outage_of, what_to_check
from evalrunner.suite._record import RunRecord


def _run(i: int, reason: str | None, outcome: str = "infra_error") -> RunRecord:
    return RunRecord(
        run_id=f"s/m/{i}",
        suite="t",
        scenario="s",
        model="m",
        index=i,
        outcome=outcome,  # type: ignore[arg-type]
        reason=reason,
    )


def test_runs_lost_with_their_ray_workers_are_the_clusters_outage_not_the_endpoints() -> None:
    # A dead Ray node turned 493 of 800 runs into "worker lost", and the night said "the
    # endpoints failed ... check the model endpoint" (a review).
    lost = f"{WORKER_LOST}: ActorDiedError: The actor died unexpectedly before finishing"
    records = [_run(i, lost) for i in range(6)] + [_run(6, None, "passed")]
    outage = outage_of(records)
    assert outage is not None
    assert outage.line().startswith(
        "outage: 6 of 7 runs ended in infra_error (86%, more than 50%): the Ray cluster lost "
        "6 of them with their workers, not the agent;"
    )
    assert (
        what_to_check(records) == "check the Ray cluster (its workers or a node died with the runs)"
    )
    endpoint = [_run(i, "ServiceUnavailableError (HTTP 503) from m: down") for i in range(6)]
    assert "the endpoints failed, not the agent" in (outage_of(endpoint) or outage).line()
    assert what_to_check(endpoint) == "check the model endpoint"


def test_runs_whose_calls_never_reached_the_model_are_not_called_the_endpoints_fault() -> None:
    # A command agent that sent no key to the capture proxy (or ignored its base URL) made
    # every run infra_error, and the night said "the endpoints failed, not the agent ...
    # Next: check the model endpoint", of an endpoint no request had reached.
    reason = (
        "NoKeyForProxy (refused by the capture proxy) from openai/m at http://h/v1: no model "
        "calls: the capture proxy refused the agent's requests"
    )
    records = [_run(i, reason) for i in range(3)]
    outage = outage_of(records)
    assert outage is not None
    line = outage.line()
    assert "3 of them made no model call that reached the model" in line
    assert "the endpoint" not in line.split("(")[1]  # not blamed
    assert what_to_check(records).startswith("check how the agent reaches its model")
