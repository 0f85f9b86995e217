"""The live litellm transport: our RetryPolicy is the only retry layer (the openai SDK's
max_retries and litellm's num_retries are switched off under it), a stream is read to
its end inside the retry loop, and each answer carries its canonical record.

The endpoint is the loopback FakeEndpoint injecting real faults; the retry tests
count the requests it saw, so a retry layer hiding underneath ours shows up as
extra hits.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import litellm
import pytest
import runner_agents  # noqa: F401  (loopback stays off any proxy)
from fake_endpoint import FakeEndpoint, Fault, Reply
from scripted import ScriptedTransport

from evalrunner.core._faults import InfraLog, NoUsableChoice, is_infra_error
from evalrunner.core._hook import LiteLLMTransport
from evalrunner.core._scope import arun_captured, capture, run_captured
from evalrunner.suite._schema import RetryPolicy

FAST = RetryPolicy(max_attempts=3, backoff_s=0.01, max_backoff_s=0.05)
MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
CHAT = "POST /v1/chat/completions"


# ------------------------------------------------------------------ the transport alone


def _request(ep: FakeEndpoint, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai/fake",
        "api_base": ep.api_base,
        "api_key": "x",
        "messages": list(MESSAGES),
        "timeout": 2,
        **extra,
    }


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_answer_carries_the_response_and_its_record(mode: str, stream: bool) -> None:
    transport = LiteLLMTransport()
    reply = Reply("Paris.", tool_calls=[("lookup", '{"country": "France"}')], prompt_tokens=9)
    with FakeEndpoint([reply]) as ep:
        request = _request(ep, stream=stream)
        if mode == "sync":
            answer = transport.complete(request)
        else:
            answer = asyncio.run(transport.acomplete(request))
        assert ep.hits[CHAT] == 1
    assert answer.record is not None
    assert answer.record.content == "Paris." and answer.record.usage.prompt_tokens == 9
    assert [(c.name, c.arguments) for c in answer.record.tool_calls] == [
        ("lookup", '{"country": "France"}')
    ]
    assert answer.generation_id is not None and answer.generation_id.startswith("chatcmpl-")
    if stream:
        assert isinstance(answer.response, list) and len(answer.response) >= 2
        assert request["stream_options"] == {"include_usage": True}
    else:
        assert answer.response.choices[0].message.content == "Paris."
    # No retry policy: the agent's own retry settings are left alone.
    assert "max_retries" not in request and "num_retries" not in request
    assert transport.finish(None) == [] and transport.infra.faults == []


def test_under_a_policy_the_sdk_retries_are_switched_off() -> None:
    transport = LiteLLMTransport(InfraLog(FAST))
    with FakeEndpoint([Reply("ok")]) as ep:
        request = _request(ep, max_retries=5, num_retries=5)
        transport.complete(request)
    assert (request["max_retries"], request["num_retries"]) == (0, 0)


def test_the_transport_calls_litellm_itself_never_the_capture_wrap() -> None:
    # Inside a scope whose own transport has nothing to answer with: a call
    # through the wrap would land there and fail.
    with (
        FakeEndpoint([Reply("direct")]) as ep,
        capture("outer", transport=ScriptedTransport(), expect_model_calls=False),
    ):
        answer = LiteLLMTransport().complete(_request(ep))
    assert answer.record is not None and answer.record.content == "direct"


# ------------------------------------------------------------------ under capture


def sync_agent(api_base: str, **extra: Any) -> str:
    response = litellm.completion(
        model="openai/fake", api_base=api_base, api_key="x", messages=MESSAGES, timeout=2, **extra
    )
    if extra.get("stream"):
        return "".join(c.choices[0].delta.content or "" for c in response if c.choices)
    return str(response.choices[0].message.content)


async def async_agent(api_base: str, **extra: Any) -> str:
    response = await litellm.acompletion(
        model="openai/fake", api_base=api_base, api_key="x", messages=MESSAGES, timeout=2, **extra
    )
    if extra.get("stream"):
        return "".join([c.choices[0].delta.content or "" async for c in response if c.choices])
    return str(response.choices[0].message.content)


def captured(mode: str, api_base: str, **extra: Any) -> Any:
    if mode == "sync":
        return run_captured(sync_agent, api_base, retry=FAST, **extra)
    return asyncio.run(arun_captured(async_agent, api_base, retry=FAST, **extra))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("kind", ["500", "reset"])
def test_the_sdk_does_not_retry_underneath_our_policy(mode: str, stream: bool, kind: str) -> None:
    # Without max_retries=0 the openai SDK would retry each of our attempts twice more.
    with FakeEndpoint(default=Fault(kind)) as ep:
        res = captured(mode, ep.api_base, stream=stream)
        assert ep.hits[CHAT] == FAST.max_attempts
    assert is_infra_error(res.error) and res.infra.final_error is res.error
    assert (
        res.infra.max_attempts_used == FAST.max_attempts
        and len(res.infra.faults) == FAST.max_attempts
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_agents_own_retry_settings_are_overridden(mode: str) -> None:
    with FakeEndpoint(default=Fault("503")) as ep:
        res = captured(mode, ep.api_base, num_retries=4, max_retries=4)
        assert ep.hits[CHAT] == FAST.max_attempts
    assert res.infra.final_error is not None


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["malformed", "truncated_stream", "stream_error"])
def test_a_stream_that_breaks_midway_is_retried_and_the_agent_sees_one_clean_stream(
    mode: str, kind: str
) -> None:
    with FakeEndpoint([Fault(kind)], default=Reply("Paris is the capital.")) as ep:
        res = captured(mode, ep.api_base, stream=True)
        assert ep.hits[CHAT] == 2
    assert res.error is None and res.output == "Paris is the capital."
    assert res.infra.max_attempts_used == 2 and res.infra.final_error is None
    assert res.infra.faults[0].startswith("MidStreamFallbackError")
    agent_steps = [s for s in res.trajectory["steps"] if s["source"] == "agent"]
    assert [s["message"] for s in agent_steps] == ["Paris is the capital."]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_fault_the_agent_swallows_is_still_logged(mode: str) -> None:
    async def swallowing_async(api_base: str) -> str:
        try:
            return await async_agent(api_base, stream=True)
        except Exception:
            return "sorry"

    def swallowing_sync(api_base: str) -> str:
        try:
            return sync_agent(api_base, stream=True)
        except Exception:
            return "sorry"

    with FakeEndpoint(default=Fault("truncated_stream")) as ep:
        if mode == "sync":
            res = run_captured(swallowing_sync, ep.api_base, retry=FAST)
        else:
            res = asyncio.run(arun_captured(swallowing_async, ep.api_base, retry=FAST))
    assert res.output == "sorry" and res.error is None
    assert res.infra is not None and res.infra.final_error is not None
    assert is_infra_error(res.infra.final_error)


# ------------------------------------------- endpoint faults are never behaviour (issue 10)

PATIENT = RetryPolicy(max_attempts=3, backoff_s=0.01, max_backoff_s=0.05, request_timeout_s=0.3)
"""Retries fast, and gives an attempt 0.3 s to hear anything from the endpoint."""


def plain_agent(api_base: str, **extra: Any) -> str:
    """Like the reference agent: no timeout of its own (litellm's default is 6,000 s)."""
    response = litellm.completion(
        model="openai/fake", api_base=api_base, api_key="x", messages=MESSAGES, **extra
    )
    if extra.get("stream"):
        return "".join(c.choices[0].delta.content or "" for c in response if c.choices)
    return str(response.choices[0].message.content)


async def aplain_agent(api_base: str, **extra: Any) -> str:
    response = await litellm.acompletion(
        model="openai/fake", api_base=api_base, api_key="x", messages=MESSAGES, **extra
    )
    if extra.get("stream"):
        return "".join([c.choices[0].delta.content or "" async for c in response if c.choices])
    return str(response.choices[0].message.content)


def run_plain(mode: str, api_base: str, policy: RetryPolicy = PATIENT, **extra: Any) -> Any:
    if mode == "sync":
        return run_captured(plain_agent, api_base, retry=policy, **extra)
    return asyncio.run(arun_captured(aplain_agent, api_base, retry=policy, timeout=10, **extra))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_response_without_a_choice_is_retried_then_an_endpoint_fault(mode: str) -> None:
    # A 200 with `choices: []`: the agent would index choices[0] and crash.
    with FakeEndpoint([Fault("empty_choices")], default=Reply("Paris.")) as ep:
        res = run_plain(mode, ep.api_base)
        assert ep.hits[CHAT] == 2
    assert (res.error, res.output, res.infra.max_attempts_used) == (None, "Paris.", 2)
    assert res.infra.faults[0].startswith("NoUsableChoice (no usable choice) from openai/fake")
    with FakeEndpoint(default=Fault("empty_choices")) as ep:
        res = run_plain(mode, ep.api_base)
        assert ep.hits[CHAT] == PATIENT.max_attempts
    assert isinstance(res.error, NoUsableChoice) and is_infra_error(res.error)
    assert res.infra.final_error is res.error


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_answered_with_an_error_body_is_retried_then_an_endpoint_fault(
    mode: str,
) -> None:
    # A gateway's 200 with a JSON error object where a stream was asked for: litellm
    # makes one empty "stop" chunk of it, which used to read as the model's empty answer.
    with FakeEndpoint([Fault("error_body")], default=Reply("Paris.")) as ep:
        res = run_plain(mode, ep.api_base, stream=True)
        assert ep.hits[CHAT] == 2
    assert (res.error, res.output, res.infra.max_attempts_used) == (None, "Paris.", 2)
    with FakeEndpoint(default=Fault("error_body")) as ep:
        res = run_plain(mode, ep.api_base, stream=True)
        assert ep.hits[CHAT] == PATIENT.max_attempts
    assert isinstance(res.error, NoUsableChoice) and is_infra_error(res.error)


@pytest.mark.parametrize(("mode", "stream"), [("sync", True), ("async", True), ("async", False)])
def test_an_endpoint_that_drips_bytes_is_abandoned_at_the_attempt_deadline_and_retried(
    mode: str, stream: bool
) -> None:
    # A byte every 0.1 s never leaves the client idle for its 0.3 s read timeout;
    # only a deadline on the whole attempt (here 1 s) ends it.
    policy = RetryPolicy(
        max_attempts=3,
        backoff_s=0.01,
        max_backoff_s=0.05,
        request_timeout_s=0.3,
        attempt_deadline_s=1.0,
    )
    with FakeEndpoint([Fault("drip", seconds=0.1)], default=Reply("Paris.")) as ep:
        started = time.monotonic()
        res = run_plain(mode, ep.api_base, policy, stream=stream)
        took = time.monotonic() - started
        assert ep.hits[CHAT] == 2
    assert (res.error, res.output) == (None, "Paris.")
    assert res.infra.faults[0].startswith("AttemptOverran")
    assert "past its deadline of 1 s" in res.infra.faults[0]
    assert took < 5


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_with_an_empty_answer_from_the_model_is_its_answer(mode: str) -> None:
    with FakeEndpoint(default=Reply("")) as ep:
        res = run_plain(mode, ep.api_base, stream=True)
        assert ep.hits[CHAT] == 1
    assert (res.error, res.output) == (None, "")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("kind", "stream"), [("hang", False), ("stall_stream", True)])
def test_a_hung_request_is_abandoned_after_the_request_timeout_and_retried(
    mode: str, kind: str, stream: bool
) -> None:
    with FakeEndpoint([Fault(kind)], default=Reply("Paris.")) as ep:
        res = run_plain(mode, ep.api_base, stream=stream)
        assert ep.hits[CHAT] == 2
        deadline = time.monotonic() + 5
        while not ep.abandoned and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ep.abandoned == 1 and ep.abandoned_after[0] < 2
    assert (res.error, res.output, res.infra.max_attempts_used) == (None, "Paris.", 2)
    assert res.infra.faults[0].startswith("Timeout (no response within 0.3 s) from openai/fake")


def test_a_sync_agents_hung_request_ends_with_its_run() -> None:
    # The policy would wait 30 s for a byte; the run's 0.5 s timeout is the tighter bound,
    # so the worker thread's request ends with the run instead of holding the thread.
    policy = RetryPolicy(request_timeout_s=30)
    workers = ThreadPoolExecutor(max_workers=1)
    try:
        with FakeEndpoint(default=Fault("hang")) as ep:
            res = asyncio.run(
                arun_captured(plain_agent, ep.api_base, retry=policy, timeout=0.5, executor=workers)
            )
            deadline = time.monotonic() + 5
            while not ep.abandoned and time.monotonic() < deadline:
                time.sleep(0.01)
            assert ep.abandoned == 1 and ep.abandoned_after[0] < 2
    finally:
        workers.shutdown(wait=False)
    assert res.timed_out and isinstance(res.error, TimeoutError)


def test_a_timed_out_sync_agent_makes_no_more_calls() -> None:
    # An agent that swallows every error and calls again, as many do: once its run timed
    # out, its thread's next call is refused instead of reaching the endpoint.
    arrivals: list[float] = []

    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        arrivals.append(time.monotonic())
        return Fault("hang") if n == 0 else Reply("Paris.", latency=0.2)

    def stubborn(api_base: str) -> str:
        for _ in range(10):
            with contextlib.suppress(Exception):
                plain_agent(api_base, timeout=0.2)
        return "gave up"

    workers = ThreadPoolExecutor(max_workers=1)
    try:
        with FakeEndpoint(responder=respond) as ep:
            started = time.monotonic()
            res = asyncio.run(
                arun_captured(stubborn, ep.api_base, retry=PATIENT, timeout=0.5, executor=workers)
            )
            ended = time.monotonic()
            time.sleep(1.5)  # what a zombie thread would have sent by now
    finally:
        workers.shutdown(wait=False)
    assert res.timed_out and started + 0.4 < ended
    assert arrivals and max(arrivals) < ended + 0.1, "calls reached the endpoint after the run"


def test_calls_of_gather_siblings_stop_when_the_run_ends() -> None:
    # One task of an asyncio.gather raises; gather passes the error on at once but does
    # not cancel its siblings: without our help they go on calling after the run ended.
    def respond(body: dict[str, Any], n: int) -> Reply | Fault:
        # "first" answers late enough that the hung request has surely reached us.
        text = body["messages"][-1]["content"]
        return (
            Fault("hang") if text == "hang" else Reply("ok", latency=0.3 if text == "first" else 0)
        )

    async def ask(api_base: str, text: str) -> Any:
        return await litellm.acompletion(
            model="openai/fake",
            api_base=api_base,
            api_key="x",
            messages=[{"role": "user", "content": text}],
        )

    async def fanning_out(api_base: str) -> None:
        async def failing() -> None:
            await ask(api_base, "first")
            raise ValueError("planner failed")

        async def late() -> None:
            await asyncio.sleep(1.0)  # asks after the run has ended
            await ask(api_base, "late")

        await asyncio.gather(failing(), late(), ask(api_base, "hang"))

    async def night(ep: FakeEndpoint) -> tuple[Any, int]:
        res = await arun_captured(fanning_out, ep.api_base, retry=FAST, timeout=10)
        # The event loop runs on, as it does for the next runs; the endpoint must see the
        # hung request closed while it does (not when the loop closes). It notices within
        # 50 ms; the deadline is for a loaded CI machine.
        deadline = time.monotonic() + 5
        while not ep.abandoned and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # time for the late sibling to have asked, were it let
        return res, ep.abandoned

    with FakeEndpoint(responder=respond) as ep:
        res, abandoned = asyncio.run(night(ep))
        sent = [r["messages"][-1]["content"] for r in ep.requests]
    assert isinstance(res.error, ValueError)
    assert "hang" in sent, "the hung request never reached the endpoint"
    assert "late" not in sent, "a sibling called the endpoint after its run ended"
    assert abandoned == 1, "the hung sibling's request was left running"
