"""evalrunner.core._faults: which errors are the endpoint's fault, and how they are retried.

The exceptions here are the real ones: litellm calls against a FakeEndpoint
that injects each fault. The retry tests count the requests the endpoint saw,
so a retry layer hiding underneath ours (the openai SDK's max_retries,
litellm's num_retries) shows up as extra hits.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import httpx
import litellm
import pytest
import runner_agents  # noqa: F401  (loopback stays off any proxy)
from fake_endpoint import FakeEndpoint, Fault

from evalrunner.core._faults import (
    InfraLog,
    RunEnded,
    backoff,
    describe,
    describe_fault,
    endpoint_label,
    is_infra_error,
    retry_after,
)
from evalrunner.suite._schema import RetryPolicy

litellm.suppress_debug_info = True

FAST = RetryPolicy(max_attempts=3, backoff_s=0.01, max_backoff_s=0.05)
MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
CHAT = "POST /v1/chat/completions"


def raised(ep: FakeEndpoint, **kwargs: Any) -> BaseException:
    """The exception one bare litellm call (no retries anywhere) raises against ``ep``."""
    kwargs.setdefault("timeout", 0.5)
    try:
        response = litellm.completion(
            model="openai/fake",
            api_base=ep.api_base,
            api_key="x",
            messages=MESSAGES,
            num_retries=0,
            **kwargs,
        )
        if kwargs.get("stream"):
            list(response)
    except Exception as exc:
        return exc
    raise AssertionError("the call succeeded")


# ---------------------------------------------------------------------- is_infra_error


@pytest.mark.parametrize(
    ("kind", "stream", "name"),
    [
        ("429", False, "RateLimitError"),
        ("500", False, "InternalServerError"),
        ("502", False, None),
        ("503", False, "ServiceUnavailableError"),
        ("slow", False, "Timeout"),
        ("reset", False, "InternalServerError"),
        ("malformed", False, "InternalServerError"),
        ("truncated_stream", False, "InternalServerError"),
        ("malformed", True, "MidStreamFallbackError"),
        ("truncated_stream", True, "MidStreamFallbackError"),
    ],
)
def test_every_endpoint_fault_is_infra(kind: str, stream: bool, name: str | None) -> None:
    with FakeEndpoint([Fault(kind, seconds=1.5)]) as ep:
        exc = raised(ep, stream=stream)
    if name is not None:
        assert type(exc).__name__ == name
    assert is_infra_error(exc), describe(exc)


@pytest.mark.parametrize("status", ["400", "401", "403", "404"])
def test_client_errors_are_not_infra(status: str) -> None:
    with FakeEndpoint([Fault(status)]) as ep:
        exc = raised(ep)
    assert not is_infra_error(exc), describe(exc)


def test_plain_exceptions_and_chains() -> None:
    assert not is_infra_error(ValueError("bad plan"))
    assert not is_infra_error(KeyError("tool"))
    assert is_infra_error(ConnectionResetError())
    assert is_infra_error(TimeoutError())

    class Gateway(Exception):
        status_code = 502

    class Client(Exception):
        status_code = 422

    assert is_infra_error(Gateway()) and not is_infra_error(Client())
    # An agent that wraps the endpoint's error still reports an endpoint error...
    try:
        try:
            raise Gateway()
        except Gateway as inner:
            raise RuntimeError("planner failed") from inner
    except RuntimeError as outer:
        assert is_infra_error(outer)
    # ...and a self-referencing chain does not loop.
    loop = ValueError("a")
    loop.__context__ = ValueError("b")
    loop.__context__.__context__ = loop
    assert not is_infra_error(loop)


def test_a_json_error_is_the_endpoints_only_when_a_client_parsed_the_response() -> None:
    # Before: every JSONDecodeError was an endpoint fault, so an agent's own json.loads of
    # a model's cut-off tool arguments ended its night as an outage ("the endpoints
    # failed, not the agent"), no verdicts: the agent's bug blamed on the endpoint.
    with pytest.raises(json.JSONDecodeError) as agents:
        json.loads('{"country": "Fra')
    assert not is_infra_error(agents.value)
    with pytest.raises(json.JSONDecodeError) as clients:
        httpx.Response(200, content=b"<html>bad gateway").json()
    assert is_infra_error(clients.value)
    try:
        try:
            httpx.Response(200, content=b"{").json()
        except json.JSONDecodeError as exc:
            raise RuntimeError("the SDK could not read the response") from exc
    except RuntimeError as wrapped:
        assert is_infra_error(wrapped)
    # Rebuilt without a traceback (in another process): no telling, the endpoint's as before.
    assert is_infra_error(json.JSONDecodeError("Expecting value", "x", 0))


def test_describe_is_one_bounded_line() -> None:
    assert describe(ValueError("two\n  lines")) == "ValueError: two lines"
    assert describe(TimeoutError()) == "TimeoutError"
    assert len(describe(ValueError("x" * 1000))) == len("ValueError: ") + 300


# ------------------------------------------------------------------ retry_after, backoff


def test_retry_after_comes_from_the_real_429() -> None:
    with FakeEndpoint(
        [Fault("429", retry_after=7), Fault("429"), Fault("503", retry_after=2.5)]
    ) as ep:
        assert retry_after(raised(ep)) == 7.0
        assert retry_after(raised(ep)) is None
        assert retry_after(raised(ep)) == 2.5


def test_retry_after_that_is_not_seconds_is_ignored() -> None:
    class Response:
        def __init__(self) -> None:
            self.headers = {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}

    class Limited(Exception):
        response = Response()

    assert retry_after(Limited()) is None
    assert retry_after(ValueError()) is None


class _Asked(Exception):
    def __init__(self, seconds: float) -> None:
        self.headers = {"Retry-After": str(seconds)}


def test_backoff_grows_exponentially_and_is_capped() -> None:
    policy = RetryPolicy(backoff_s=0.5, max_backoff_s=3.0, jitter=False)
    rng = random.Random(0)
    waits = [backoff(n, policy, ValueError(), rng) for n in range(1, 6)]
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_backoff_jitter_stays_within_half_to_full() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_backoff_s=8.0, jitter=True)
    rng = random.Random(1)
    for attempt in (1, 2, 3):
        full = min(8.0, 2.0 ** (attempt - 1))
        waits = {backoff(attempt, policy, ValueError(), rng) for _ in range(50)}
        assert all(0.5 * full <= w <= full for w in waits)
        assert len(waits) > 1  # actually random


def test_retry_after_raises_the_wait_but_never_past_the_cap() -> None:
    policy = RetryPolicy(backoff_s=0.1, max_backoff_s=5.0, jitter=False)
    rng = random.Random(0)
    assert backoff(1, policy, _Asked(2), rng) == 2.0
    assert backoff(1, policy, _Asked(60), rng) == 5.0  # a server asking for a minute gets the cap
    assert backoff(4, policy, _Asked(0), rng) == 0.8  # asking for less does not shorten ours


# ------------------------------------------------------------------------------ InfraLog


class Flaky:
    """Fails with ``errors`` in turn, then returns 'ok'; counts calls."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"

    async def acall(self) -> str:
        return self()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the sleeps between attempts instead of sleeping."""
    seen: list[float] = []

    async def asleep(seconds: float) -> None:
        seen.append(seconds)

    monkeypatch.setattr(InfraLog, "_sleep", lambda self, seconds: seen.append(seconds))
    monkeypatch.setattr("evalrunner.core._faults.asyncio.sleep", asleep)
    return seen


def gateway() -> Exception:
    return ConnectionResetError("reset by peer")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_infralog_retries_until_success(waits: list[float], mode: str) -> None:
    log = InfraLog(RetryPolicy(max_attempts=3, backoff_s=1, max_backoff_s=4, jitter=False))
    fn = Flaky(gateway(), gateway())
    result = log.call(fn) if mode == "sync" else asyncio.run(log.acall(fn.acall))
    assert (result, fn.calls, log.max_attempts_used, log.final_error) == ("ok", 3, 3, None)
    assert waits == [1.0, 2.0]
    assert len(log.faults) == 2 and log.faults[0].startswith("ConnectionResetError")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_infralog_gives_up_after_max_attempts(waits: list[float], mode: str) -> None:
    log = InfraLog(RetryPolicy(max_attempts=2, backoff_s=0.5, max_backoff_s=1, jitter=False))
    fn = Flaky(gateway(), gateway(), gateway())
    with pytest.raises(ConnectionResetError):
        log.call(fn) if mode == "sync" else asyncio.run(log.acall(fn.acall))
    assert fn.calls == 2 and waits == [0.5]
    assert isinstance(log.final_error, ConnectionResetError) and log.max_attempts_used == 2


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_infralog_never_retries_non_infra_errors(waits: list[float], mode: str) -> None:
    log = InfraLog(FAST)
    fn = Flaky(ValueError("bad arguments"))
    with pytest.raises(ValueError):
        log.call(fn) if mode == "sync" else asyncio.run(log.acall(fn.acall))
    assert (fn.calls, waits, log.faults, log.final_error) == (1, [], [], None)


def test_infralog_without_a_policy_tries_once(waits: list[float]) -> None:
    log = InfraLog(None)
    fn = Flaky(gateway())
    with pytest.raises(ConnectionResetError):
        log.call(fn)
    assert fn.calls == 1 and isinstance(log.final_error, ConnectionResetError)


def test_infralog_worst_call_sets_attempts(waits: list[float]) -> None:
    log = InfraLog(RetryPolicy(max_attempts=4, backoff_s=0, max_backoff_s=0))
    assert log.call(Flaky(gateway())) == "ok"
    assert log.call(Flaky(gateway(), gateway(), gateway())) == "ok"
    assert log.call(Flaky()) == "ok"
    assert log.max_attempts_used == 4 and log.final_error is None and len(log.faults) == 4


# ----------------------------------------- a fault's reason: status, endpoint, message (item 3)


@pytest.mark.parametrize(
    ("kind", "stream", "what", "message"),
    [
        ("429", False, "RateLimitError (HTTP 429)", "fake endpoint error 429"),
        ("503", True, "ServiceUnavailableError (HTTP 503)", "fake endpoint error 503"),
        ("slow", False, "Timeout (", "Request timed out."),
        ("reset", False, "InternalServerError (connection reset)", "Connection error."),
        ("malformed", False, "InternalServerError (malformed response)", "Expecting value"),
        ("truncated_stream", True, "MidStreamFallbackError (connection ", "Connection"),
        ("stream_error", True, "MidStreamFallbackError (stream broke off)", "failed mid-answer"),
    ],
)
def test_a_fault_is_described_by_what_happened_where_and_the_message(
    kind: str, stream: bool, what: str, message: str
) -> None:
    with FakeEndpoint([Fault(kind, seconds=1.5)]) as ep:
        exc = raised(ep, stream=stream)
        api_base = ep.api_base
    text = describe_fault(exc, endpoint_label("openai/fake", api_base))
    assert text.startswith(what), text
    assert f" from openai/fake at {api_base}: " in text and message in text, text
    # litellm's stacked prefixes and repeated messages are gone.
    assert "litellm." not in text and "OpenAIException" not in text
    assert "Original exception" not in text and "\n" not in text


def test_the_endpoint_in_a_reason_carries_no_credentials() -> None:
    api_base = "https://user:sk-secret@gateway.example:8443/v1?api-key=sk-other#x"
    assert endpoint_label("openai/x", api_base) == "openai/x at https://gateway.example:8443/v1"
    assert endpoint_label("groq/llama", None) == "groq/llama"


def test_a_call_given_no_api_base_is_labelled_with_where_litellm_sent_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: no URL at all, the one case where it says what went wrong (a server of one's
    # own never set, the calls gone to the provider's public API).
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    assert endpoint_label("anthropic/claude", None) == (
        "anthropic/claude at https://api.anthropic.com (given no api_base)"
    )
    assert (
        endpoint_label("openai/x", "")
        == "openai/x at https://api.openai.com/v1 (given no api_base)"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "https://user:pw@proxy.example/v1")
    assert (
        endpoint_label("openai/x", None)
        == "openai/x at https://proxy.example/v1 (given no api_base)"
    )


# ------------------------------------------------- an attempt's timeout, a run's end (item 2)


def test_an_attempt_is_bounded_by_the_policy_the_agent_and_the_runs_deadline() -> None:
    log = InfraLog(RetryPolicy(request_timeout_s=30))
    assert log.attempt_timeout() == 30  # litellm's own default would be 6,000 s
    assert log.attempt_timeout(5) == 5  # an agent asking for less gets less
    assert log.attempt_timeout(600) == 30
    log.deadline = time.monotonic() + 1.5
    left = log.attempt_timeout()
    # Bounded by the run's deadline, in whole seconds (litellm reuses one client per timeout).
    assert left == 2.0 and log.attempt_timeout() == left
    log.deadline = time.monotonic() - 0.1
    with pytest.raises(RunEnded):
        log.attempt_timeout()
    assert InfraLog(None).attempt_timeout() is None  # no policy, no deadline: litellm's


def test_a_run_that_ended_refuses_calls_and_stops_retrying(waits: list[float]) -> None:
    log = InfraLog(FAST)
    fn = Flaky(gateway(), gateway())

    def closing_first() -> str:
        log.close()  # the run ends while its call is failing
        return fn()

    with pytest.raises(ConnectionResetError):
        log.call(closing_first)
    assert fn.calls == 1 and waits == []  # no retry after the end
    with pytest.raises(RunEnded):
        log.attempt_timeout()
    assert is_infra_error(RunEnded())  # a call refused for lack of time is the run's timeout


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_refused_for_lack_of_time_is_not_the_endpoint_s_last_fault(
    waits: list[float], mode: str
) -> None:
    """The deadline passes during a backoff: the retry is refused before it is sent, and the
    timed-out run's reason must still name what the endpoint last did."""
    log = InfraLog(FAST)

    def refused() -> str:
        log.deadline = time.monotonic() - 0.1
        log.attempt_timeout()
        return "sent"

    fn = Flaky(gateway())

    def call() -> str:
        return fn() if fn.calls == 0 else refused()

    async def acall() -> str:
        return call()

    with pytest.raises(RunEnded):
        log.call(call) if mode == "sync" else asyncio.run(log.acall(acall))
    assert fn.calls == 1 and len(waits) == 1  # one backoff, then the refused retry, no more
    assert len(log.faults) == 1 and log.faults[-1].startswith("ConnectionResetError")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_retry_refused_for_lack_of_time_leaves_the_run_held_by_the_endpoint(
    waits: list[float], mode: str
) -> None:
    """The agent's thread reaches its refused retry before the run's timeout fires, and has left
    the call when the run ends: the endpoint's faults still held the run (infra_error, not
    crashed). Seen on a loaded machine in tests/integration/test_outcomes.py."""
    log = InfraLog(FAST)
    failures = Flaky(gateway())

    def call() -> str:
        if failures.calls == 0:
            return failures()
        log.deadline = time.monotonic() - 0.1
        log.attempt_timeout()
        return "sent"

    async def acall() -> str:
        return call()

    with pytest.raises(RunEnded):
        log.call(call) if mode == "sync" else asyncio.run(log.acall(acall))
    log.close()  # the run's timeout fires after the call has gone
    assert log.waiting_on_endpoint


def test_a_call_refused_at_its_first_attempt_did_not_hold_the_run() -> None:
    """The agent's own code used the time up and then asked for a call: it held the run."""
    log = InfraLog(FAST)
    log.deadline = time.monotonic() - 0.1
    with pytest.raises(RunEnded):
        log.call(lambda: log.attempt_timeout())
    log.close()
    assert not log.waiting_on_endpoint
