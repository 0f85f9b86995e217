"""Never silent: a top-level capture scope that saw no model call warns when it
closes (NoModelCallsWarning, naming the likely bypass and the capture proxy),
unless told the agent makes none on purpose."""

from __future__ import annotations

import asyncio
import warnings

import litellm
import openai
import pytest
from fake_endpoint import FakeEndpoint, Reply
from scripted import ScriptedTransport

from evalrunner.core import NoModelCallsWarning
from evalrunner.core._response import ResponseRecord
from evalrunner.core._scope import arun_captured, capture, run_captured


def sdk_agent(api_base: str) -> str:
    """An agent on the official OpenAI SDK: its calls never reach litellm."""
    client = openai.OpenAI(base_url=api_base, api_key="dummy", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Capital of France?"}]
    )
    return str(reply.choices[0].message.content)


def litellm_agent() -> str:
    response = litellm.completion(model="m", messages=[{"role": "user", "content": "q"}])
    return str(response.choices[0].message.content)


def no_calls() -> str:
    return "42"


def scripted() -> ScriptedTransport:
    return ScriptedTransport(ResponseRecord(content="Paris."))


def test_an_sdk_agent_that_bypassed_capture_is_a_warning_naming_the_cause() -> None:
    with FakeEndpoint([Reply("Paris.")]) as ep, pytest.warns(NoModelCallsWarning) as caught:
        result = run_captured(sdk_agent, ep.api_base, name="sdk-agent")
    assert result.output == "Paris." and result.trajectory["steps"] == []
    (warning,) = [w for w in caught if w.category is NoModelCallsWarning]
    message = str(warning.message)
    assert message.startswith("capture('sdk-agent') saw no model call.")
    for cause in ("SDK client", "from litellm import completion", "cache", "evalrunner proxy"):
        assert cause in message
    assert "docs/proxy.md" in message and "expect_model_calls=False" in message
    assert issubclass(NoModelCallsWarning, UserWarning)


def test_a_run_with_model_calls_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoModelCallsWarning)
        result = run_captured(litellm_agent, transport=scripted())
    assert result.output == "Paris."


def test_calls_made_in_a_subagent_count_for_the_run_and_a_quiet_subagent_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoModelCallsWarning)
        with capture("planner", transport=scripted()), capture("worker"):
            litellm_agent()
        with capture("planner", transport=scripted()):
            litellm_agent()
            with capture("deterministic-helper"):
                pass


def test_the_warning_comes_from_the_top_level_scope_once() -> None:
    with pytest.warns(NoModelCallsWarning) as caught, capture("planner"), capture("worker"):
        pass
    assert [str(w.message)[:20] for w in caught] == ["capture('planner') s"]


def test_expect_model_calls_false_silences_it_everywhere() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoModelCallsWarning)
        with capture("rules-only", expect_model_calls=False):
            pass
        assert run_captured(no_calls, expect_model_calls=False).output == "42"
        result = asyncio.run(arun_captured(no_calls, expect_model_calls=False))
        assert result.output == "42"


def test_a_warnings_filter_silences_it_too() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=NoModelCallsWarning)
        assert run_captured(no_calls).output == "42"


def test_async_runs_warn_too() -> None:
    with pytest.warns(NoModelCallsWarning):
        asyncio.run(arun_captured(no_calls))


def test_an_agent_that_crashes_before_its_first_call_does_not_warn() -> None:
    # The crash is the story (the run is `crashed` with its traceback), not a bypass.
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoModelCallsWarning)
        with pytest.raises(ZeroDivisionError), capture("agent", transport=scripted()):
            _ = 1 / 0
