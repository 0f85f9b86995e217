"""An Anthropic model upstream is reached directly, in Anthropic Messages, by default.

The proxy posts ``/v1/messages`` itself (no litellm on the way), with the same
retries, fault classification and recordings as through litellm; litellm's own
translation of the same calls, against the same fake Anthropic endpoint, is the
reference the direct path is held to.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from fake_endpoint import FakeEndpoint, Fault, Reply
from sdk_agents import ANTHROPIC_TOOLS, anthropic_agent, content_responder, openai_agent

from evalrunner.proxy import ProxyServer, Upstream
from evalrunner.proxy._recording import Recording
from evalrunner.suite._schema import RetryPolicy

FAST = RetryPolicy(max_attempts=3, backoff_s=0.01, max_backoff_s=0.05)
KEY = "sk-ant-upstream-key-for-tests"
MODEL = "anthropic/claude-test-1"


@pytest.fixture
def upstream() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(responder=content_responder) as ep:
        yield ep


def _host(ep: FakeEndpoint) -> str:
    return ep.api_base.removesuffix("/v1")  # Anthropic's api_base: the host, no /v1


def _proxy(ep: FakeEndpoint, directory: Path, direct: bool | None = None) -> ProxyServer:
    upstream = Upstream(MODEL, api_base=_host(ep), api_key=KEY, direct=direct)
    return ProxyServer("record", directory, upstream, retry=FAST)


def _agents(proxy: ProxyServer, stream: bool) -> dict[str, Any]:
    """Both SDK families' answers to the same task, through one proxy."""
    return {
        "openai": openai_agent(proxy.run_env("oa"), "Capitals of: France, Japan", stream=stream),
        "anthropic": anthropic_agent(proxy.run_env("an"), "Capitals of: Peru", stream=stream),
    }


def test_an_anthropic_model_is_reached_directly_in_anthropic_messages(
    upstream: FakeEndpoint, tmp_path: Path
) -> None:
    with _proxy(upstream, tmp_path) as proxy:
        assert proxy.upstream_line() == f"{MODEL} (direct, Anthropic Messages)"
        answers = _agents(proxy, stream=False)
        finished = [proxy.finish_run("oa"), proxy.finish_run("an")]
    assert answers == {"openai": "Capitals: Paris, Tokyo.", "anthropic": "Capitals: Lima."}
    assert all(r.ok and r.model_calls == 2 for r in finished)
    assert upstream.hits == {"POST /v1/messages": 4}
    first = upstream.requests[0]
    assert first["model"] == "claude-test-1" and first["max_tokens"] == 128_000  # as litellm
    assert first["system"][0]["text"].startswith("You answer questions about capitals")
    assert [t["name"] for t in first["tools"]] == ["lookup"]
    for headers in upstream.headers:
        assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
        assert "authorization" not in headers  # the agent's dummy key never goes upstream


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_direct_path_records_what_litellm_records(
    upstream: FakeEndpoint, tmp_path: Path, stream: bool
) -> None:
    """litellm's Anthropic translation is the reference: the same agents, the same fake
    endpoint, the same recordings (answers, tool calls, finish reasons, usage)."""
    recordings: dict[bool, list[Any]] = {}
    sent: dict[bool, list[dict[str, Any]]] = {}
    for direct in (True, False):
        upstream.requests.clear()
        with _proxy(upstream, tmp_path / str(direct), direct) as proxy:
            assert _agents(proxy, stream) == {
                "openai": "Capitals: Paris, Tokyo.",
                "anthropic": "Capitals: Lima.",
            }
            runs = [proxy.finish_run("oa"), proxy.finish_run("an")]
        recordings[direct] = [
            Recording.load(r.recording_path).calls for r in runs if r.recording_path
        ]
        sent[direct] = list(upstream.requests)
    direct_calls, litellm_calls = recordings[True], recordings[False]
    assert len(direct_calls) == 2
    for ours, theirs in zip(direct_calls, litellm_calls, strict=True):
        for a, b in zip(ours, theirs, strict=True):
            assert _plain(a.request.model_dump()) == _plain(b.request.model_dump())
            # Tool-call ids come from the fake (random per call): compare the rest.
            a_calls = [(c.name, c.arguments) for c in a.response.tool_calls]
            b_calls = [(c.name, c.arguments) for c in b.response.tool_calls]
            assert a_calls == b_calls
            keep = {"content", "finish_reason", "usage", "model"}
            assert a.response.model_dump(include=keep) == b.response.model_dump(include=keep)
    for ours, theirs in zip(sent[True], sent[False], strict=True):
        # What reaches Anthropic: the same turns, system prompt, tools and token cap.
        for key in ("messages", "system", "max_tokens"):
            assert _plain(ours[key]) == _plain(theirs[key]), key
        assert [(t["name"], t["input_schema"]) for t in ours["tools"]] == [
            (t["name"], t["input_schema"]) for t in theirs["tools"]
        ]


def _plain(value: Any) -> Any:
    """A value without the ids the fake made up, litellm's cache hints and call indexes."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and v.get("type") == "text" for v in value):
            return "".join(v["text"] for v in value)  # system / content as blocks or a string
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        drop = {"id", "tool_use_id", "tool_call_id", "cache_control", "index"}
        return {k: _plain(v) for k, v in value.items() if k not in drop}
    return value


@pytest.mark.parametrize(
    "fault",
    [
        Fault("429", retry_after=0.01),
        Fault("500"),
        Fault("529"),
        Fault("reset"),
        Fault("malformed"),
        Fault("truncated_stream"),
    ],
    ids=lambda f: f.kind,
)
def test_a_passing_fault_is_retried_inside_the_proxy(
    upstream: FakeEndpoint, tmp_path: Path, fault: Fault
) -> None:
    upstream.enqueue(fault)
    with _proxy(upstream, tmp_path) as proxy:
        assert anthropic_agent(proxy.run_env("r"), "hi") == "echo: hi"
        result = proxy.finish_run("r")
    assert result.ok and result.infra_error is None and len(upstream.requests) == 2


@pytest.mark.parametrize("status", ["401", "403", "404", "529"])
@pytest.mark.parametrize("direct", [True, False], ids=["direct", "litellm"])
def test_a_refused_key_or_a_lasting_fault_is_infrastructure_on_both_transports(
    upstream: FakeEndpoint, tmp_path: Path, status: str, direct: bool
) -> None:
    upstream.enqueue(*[Fault(status)] * 3)
    with _proxy(upstream, tmp_path, direct) as proxy:
        with pytest.raises(anthropic.APIStatusError) as raised:
            anthropic_agent(proxy.run_env("r"), "hi")
        result = proxy.finish_run("r")
    assert "upstream infrastructure fault, not agent behaviour" in raised.value.message
    assert result.infra_error is not None and not result.ok
    assert result.recording_path is None


@pytest.mark.parametrize("status", ["401", "404"])
@pytest.mark.parametrize("model", ["openai/fake", MODEL])
def test_a_refused_key_is_infrastructure_on_the_direct_transports(
    upstream: FakeEndpoint, tmp_path: Path, status: str, model: str
) -> None:
    # Through litellm a 401 is its AuthenticationError, counted as infrastructure (no model
    # is reachable); the direct transports used to pass it to the agent as its behaviour.
    upstream.enqueue(Fault(status))
    base = upstream.api_base if model.startswith("openai/") else _host(upstream)
    with ProxyServer("record", tmp_path, Upstream(model, api_base=base, api_key=KEY)) as proxy:
        with pytest.raises(openai.APIStatusError) as raised:
            openai_agent(proxy.run_env("r"), "hi")
        result = proxy.finish_run("r")
    assert raised.value.status_code == 502
    assert result.infra_error is not None and result.recording_path is None


def test_the_context_window_is_the_models_answer_recorded_and_replayed(
    upstream: FakeEndpoint, tmp_path: Path
) -> None:
    too_long = "prompt is too long: 210000 tokens > 200000 maximum"
    upstream.enqueue(Fault("400", message=too_long))
    with _proxy(upstream, tmp_path) as proxy:
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            anthropic_agent(proxy.run_env("r"), "hi")
        recorded = proxy.finish_run("r")
    assert recorded.infra_error is None and recorded.recording_path is not None
    error = Recording.load(recorded.recording_path).calls[0].error
    assert error is not None and error.type == "ContextWindowExceededError"
    with ProxyServer("replay", tmp_path) as proxy:
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            anthropic_agent(proxy.run_env("r"), "hi")
        assert proxy.finish_run("r").ok


def test_no_key_for_anthropic_is_one_infrastructure_error_naming_the_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_API_BASE", raising=False)
    with ProxyServer("record", tmp_path, Upstream(MODEL), retry=FAST) as proxy:
        with pytest.raises(anthropic.APIStatusError, match="neither ANTHROPIC_API_KEY nor"):
            anthropic_agent(proxy.run_env("r"), "hi")
        assert proxy.finish_run("r").infra_error is not None


def test_a_request_only_litellm_can_translate_goes_through_litellm_and_says_so(
    upstream: FakeEndpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from evalrunner.proxy._request import ModelRequest

    plain = ModelRequest(api="chat", messages=[{"role": "user", "content": "hi"}])
    schema = {"type": "json_object"}
    shaped = plain.model_copy(update={"params": {"response_format": schema}})
    direct = Upstream(MODEL, api_key=KEY)
    assert direct.route(plain) == ("anthropic", None)
    assert direct.route(shaped) == ("litellm", "response_format")
    assert Upstream(MODEL, direct=False).route(plain) == ("litellm", None)
    with _proxy(upstream, tmp_path) as proxy:
        client = openai.OpenAI(
            base_url=proxy.run_url("r"), api_key=proxy.run_env("r")["OPENAI_API_KEY"]
        )
        for _ in range(2):
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "hi"}],
                response_format={"type": "json_object"},
            )
        assert proxy.finish_run("r").ok
    # litellm asks Anthropic for JSON its own way (a forced tool); said once, not per call.
    assert upstream.hits == {"POST /v1/messages": 2}
    said = [r.getMessage() for r in caplog.records if "go through litellm" in r.getMessage()]
    assert said == [
        f"evalrunner proxy: requests to {MODEL} with response_format go through litellm "
        "(the direct transport does not carry them)"
    ]


def test_a_proxy_in_front_of_anthropic_never_imports_litellm(
    upstream: FakeEndpoint, tmp_path: Path
) -> None:
    script = textwrap.dedent(
        f"""
        import json, sys, urllib.request
        from evalrunner.proxy import ProxyServer, Upstream
        upstream = Upstream({MODEL!r}, api_base={_host(upstream)!r}, api_key="k")
        with ProxyServer("record", {str(tmp_path)!r}, upstream) as proxy:
            env = proxy.run_env("r")
            body = {{"model": "m", "max_tokens": 9, "messages": [{{"role": "user", "content": "hi"}}]}}
            request = urllib.request.Request(
                env["ANTHROPIC_BASE_URL"] + "/v1/messages", json.dumps(body).encode(),
                {{"content-type": "application/json", "x-api-key": env["ANTHROPIC_API_KEY"]}},
            )
            answer = json.loads(urllib.request.urlopen(request).read())
            assert proxy.finish_run("r").ok
        print(answer["content"][0]["text"], "litellm" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["echo:", "hi", "False"]


def test_a_file_part_goes_through_litellm_and_is_answered_not_refused(
    upstream: FakeEndpoint, tmp_path: Path
) -> None:
    # A PDF as a chat `file` part: litellm makes it a `document` block; the direct path
    # has no such translation, so the request takes litellm's (never an error of ours).
    pdf = {
        "type": "file",
        "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"},
    }
    with _proxy(upstream, tmp_path) as proxy:
        client = openai.OpenAI(
            base_url=proxy.run_url("r"), api_key=proxy.run_env("r")["OPENAI_API_KEY"]
        )
        content: Any = [{"type": "text", "text": "summarise"}, pdf]
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": content}]
        )
        assert proxy.finish_run("r").ok
    assert reply.choices[0].message.content == "echo: summarise"
    blocks = upstream.requests[0]["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "document"]


def test_the_environment_litellm_read_is_read_the_same(
    upstream: FakeEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ANTHROPIC_BASE_URL (no --api-base), ANTHROPIC_AUTH_TOKEN (no key: a bearer token) and
    HTTP(S)_PROXY (a company's way out) reach the upstream as they did through litellm."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_API_BASE", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # the agent reaches our proxy directly
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://anthropic.gateway.invalid")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "sk-ant-oauth-token-for-tests")
    with FakeEndpoint(responder=content_responder) as forward_proxy:
        monkeypatch.setenv("HTTP_PROXY", forward_proxy.api_base.removesuffix("/v1"))
        with ProxyServer("record", tmp_path, Upstream(MODEL), retry=FAST) as proxy:
            answer = anthropic_agent(proxy.run_env("r"), "hi")
            assert proxy.finish_run("r").ok
    assert answer == "echo: hi"
    assert forward_proxy.hits == {"POST /v1/messages": 1}  # via the proxy, to the gateway
    headers = forward_proxy.headers[0]
    assert headers["authorization"] == "Bearer sk-ant-oauth-token-for-tests"
    assert "x-api-key" not in headers and upstream.requests == []


def test_the_proxys_own_refusal_of_a_request_is_the_agents_answer_not_infrastructure(
    upstream: FakeEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Should a translation ever refuse a request (a 400 of the proxy's own), the agent gets
    # that 400 as is: it was never infrastructure (it was a 502 with a logged traceback).
    from evalrunner.proxy import _upstream
    from evalrunner.proxy._request import bad_request

    def refuse(kwargs: Any, model: str) -> Any:
        raise bad_request("this request cannot be sent to an Anthropic model")

    monkeypatch.setattr(_upstream, "messages_body", refuse)
    with _proxy(upstream, tmp_path) as proxy:
        with pytest.raises(anthropic.BadRequestError, match="cannot be sent to an Anthropic"):
            anthropic_agent(proxy.run_env("r"), "hi")
        result = proxy.finish_run("r")
    assert result.infra_error is None and upstream.requests == []


# --- issue 53, row 17: prompt caching and extended thinking, carried both ways ----------

CACHE = {"type": "ephemeral"}
THINKING = {"type": "enabled", "budget_tokens": 2048}


def _thinking_responder(body: dict[str, Any], n: int) -> Reply:
    """The capitals script, each answer with a signed thinking block and cache usage."""
    reply = content_responder(body, n)
    return dataclasses.replace(
        reply,
        thinking=(f"Thought {n}.", f"c2lnbmF0dXJl{n}"),
        prompt_tokens=50,
        cache_read_tokens=500,
        cache_write_tokens=40,
    )


def _caching_thinking_agent(env: Mapping[str, str], stream: bool) -> tuple[str, list[Any]]:
    """A tool loop with a cached system prompt and tool, and extended thinking: its answer
    and each call's usage as the SDK read it."""
    client = anthropic.Anthropic(
        base_url=env["ANTHROPIC_BASE_URL"], api_key=env["ANTHROPIC_API_KEY"]
    )
    messages: list[Any] = [{"role": "user", "content": "Capitals of: Peru"}]
    usages: list[Any] = []
    for _ in range(3):
        kwargs: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "thinking": THINKING,
            "system": [{"type": "text", "text": "You answer. " * 50, "cache_control": CACHE}],
            "tools": [{**ANTHROPIC_TOOLS[0], "cache_control": CACHE}],
            "messages": messages,
        }
        if stream:
            with client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        usages.append(message.usage)
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in message.content if b.type == "text"), usages
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        results = [{"type": "tool_result", "tool_use_id": b.id, "content": "Lima"} for b in uses]
        messages.append({"role": "user", "content": results})
    raise AssertionError("the agent did not finish")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("direct", [True, False], ids=["direct", "litellm"])
def test_cache_breakpoints_and_signed_thinking_reach_anthropic_and_come_back(
    tmp_path: Path, stream: bool, direct: bool
) -> None:
    with FakeEndpoint(responder=_thinking_responder) as upstream:
        with _proxy(upstream, tmp_path, direct) as proxy:
            answer, usages = _caching_thinking_agent(proxy.run_env("r"), stream)
            recorded = proxy.finish_run("r")
        sent = upstream.requests
    assert answer == "Capitals: Lima." and recorded.ok
    # What reached Anthropic: the breakpoints, the thinking budget, and on the second call
    # the first answer's signed thinking block, byte for byte.
    assert [r["thinking"] for r in sent] == [THINKING, THINKING]
    assert all(r["system"][0]["cache_control"] == CACHE for r in sent)
    assert all(r["tools"][0]["cache_control"] == CACHE for r in sent)
    first_thought = {"type": "thinking", "thinking": "Thought 0.", "signature": "c2lnbmF0dXJl0"}
    assert sent[1]["messages"][1]["content"][0] == first_thought
    # The agent read the provider's usage: input tokens without the cached ones.
    assert [
        (u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) for u in usages
    ] == [(50, 500, 40)] * 2
    assert recorded.recording_path is not None
    calls = Recording.load(recorded.recording_path).calls
    assert calls[0].response is not None and calls[0].response.thinking_blocks == [first_thought]
    assert (calls[0].response.usage.cached_tokens, calls[0].response.usage.cache_write_tokens) == (
        500,
        40,
    )
    # Replayed, the agent gets the same thinking back and sends it again: the requests
    # match their recording (a block lost on the way back would be a replay mismatch).
    with ProxyServer("replay", tmp_path) as proxy:
        again, replayed_usages = _caching_thinking_agent(proxy.run_env("r"), stream)
        replayed = proxy.finish_run("r")
    assert again == answer and replayed.ok and not replayed.replay_errors
    assert [u.cache_read_input_tokens for u in replayed_usages] == [500, 500]


def test_thinking_sent_towards_a_model_that_cannot_take_it_is_refused_as_evalrunner_s_limit(
    tmp_path: Path,
) -> None:
    with FakeEndpoint(responder=_thinking_responder) as upstream:
        chat = Upstream("openai/fake", api_base=upstream.api_base, api_key=KEY)
        with ProxyServer("record", tmp_path, chat, retry=FAST) as proxy:
            with pytest.raises(anthropic.BadRequestError, match="reaches only an Anthropic model"):
                _caching_thinking_agent(proxy.run_env("r"), stream=False)
            result = proxy.finish_run("r")
        assert upstream.requests == []  # never sent without it
    # The run is marked as asking what evalrunner cannot carry: a live run of it is an
    # infra_error ("the capture proxy cannot carry the agent's request"), not behaviour.
    assert [m for m in result.unsupported if "reaches only an Anthropic model" in m]
