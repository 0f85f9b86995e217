"""Request fingerprints match a replayed request to its recording: what decides the
model's answer counts (messages, tools), what varies between machines does not
(keys, endpoints, timeouts, object addresses, secrets in the prompt)."""

from __future__ import annotations

from typing import Any

from evalrunner.frozen._script import request_hint


def _req(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "openai/fake", "messages": [{"role": "user", "content": question}], **extra}


def test_fingerprint_ignores_endpoint_and_secrets_but_not_the_prompt() -> None:
    base = request_hint(_req("Capital of France?")).fingerprint
    same = [
        _req(
            "Capital of France?",
            api_key="sk-live-abcdefghijklmnopqrstuvwx",
            api_base="http://10.0.0.1/v1",
            timeout=3,
            num_retries=5,
        ),
        _req(
            "Capital of France?",
            extra_headers={"Authorization": "Bearer abcdefghijklmnop"},
            temperature=0.1,
        ),
    ]
    assert {request_hint(r).fingerprint for r in same} == {base}
    assert request_hint(_req("Capital of Peru?")).fingerprint != base
    assert (
        request_hint(
            _req("Capital of France?", tools=[{"type": "function", "function": {"name": "t"}}])
        ).fingerprint
        != base
    )
    # Object addresses and secrets in the prompt do not break matching between machines.
    a = request_hint(_req("helper <function f at 0x7f00aa11> key sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA"))
    b = request_hint(_req("helper <function f at 0x55bb0022> key sk-proj-BBBBBBBBBBBBBBBBBBBBBBBB"))
    assert a.fingerprint == b.fingerprint
    assert a.last_user_message == "helper <function f at 0x7f00aa11> key [REDACTED]"
