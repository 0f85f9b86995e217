"""Secrets never reach a file evalrunner writes: a live recording with secrets in the
key, the headers, the prompt, the tool output, the tool arguments' keys and the reply,
an endpoint's error that echoes the key, and whatever write_json is given."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents_for_tests import ask, secretive
from fake_endpoint import FakeEndpoint, Fault, Reply

from evalrunner import _redact
from evalrunner._jsonio import write_json
from evalrunner._redact import REDACTED
from evalrunner.core._scope import run_captured
from evalrunner.frozen._golden import script_path_for
from evalrunner.frozen._replay import Recorder
from evalrunner.frozen._run import run_frozen

R = REDACTED


SECRETS = {
    "api_key": "sk-live-4f3e2d1c0b9a8f7e6d5c4b3a",
    "bearer": "sk-bearer0123456789abcdefXYZ",
    "prompt_key": "sk-proj-Zq8Xw7Vv6Uu5Tt4Ss3Rr2Qq1",
    "prompt_pat": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "tool_key": "AKIAZ7Y6X5W4V3U2T1S0",
    "env_value": "env-only-secret-8c7b6a5d4e",
    "reply_key": "sk-ant-api03-Rr9Ss8Tt7Uu6Vv5Ww4",
    "argument_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
}


def test_recording_with_secrets_writes_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["env_value"])
    question = (
        f"Use my key {SECRETS['prompt_key']} and token {SECRETS['prompt_pat']}: capital of France?"
    )
    tool_output = (
        f"Paris (fetched with {SECRETS['tool_key']}; OPENAI_API_KEY={SECRETS['env_value']})"
    )
    replies = [
        # The model puts a credential in a key of the tool's arguments.
        Reply(
            None,
            tool_calls=[("lookup", f'{{"country": "France", "{SECRETS["argument_key"]}": true}}')],
        ),
        Reply(f"Paris. (You leaked {SECRETS['reply_key']}.)"),
    ]
    golden = tmp_path / "goldens" / "secretive.json"
    args = (question, tool_output, SECRETS["api_key"], SECRETS["bearer"])
    with FakeEndpoint(replies) as ep:
        outcome = run_frozen(secretive, ep.api_base, *args, golden_path=golden, mode="record")
    assert outcome.ok, outcome.message
    # The secrets really went through the agent and the endpoint.
    assert SECRETS["prompt_key"] in ep.requests[0]["messages"][0]["content"]
    assert SECRETS["env_value"] in ep.requests[1]["messages"][-1]["content"]

    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert files == [golden, script_path_for(golden)]
    for path in files:
        data = path.read_bytes()
        for name, secret in SECRETS.items():
            assert secret.encode() not in data, f"{name} leaked into {path.name}"
        assert R.encode() in data
    text = golden.read_text()
    assert f"Use my key {R} and token {R}: capital of France?" in text
    assert "Paris." in text and '"X-Trace"' not in text  # headers are not stored at all

    # The redacted golden still matches a replay that carries the secrets again.
    check = run_frozen(secretive, None, *args, golden_path=golden, mode="check", strict=True)
    assert check.ok, check.message


def test_recorded_errors_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder()
    with FakeEndpoint(
        [Fault("401", message=f"Incorrect API key provided: {SECRETS['api_key']}")]
    ) as ep:
        res = run_captured(ask, ep.api_base, recorder=recorder)
    assert res.error is not None and SECRETS["api_key"] in str(res.error)
    (entry,) = recorder.script.entries
    assert entry.error is not None and SECRETS["api_key"] not in entry.error.message
    assert "Incorrect API key provided: [REDACTED]" in entry.error.message


def test_write_json_redacts_whatever_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    write_json(
        path,
        {
            "headers": {"Authorization": "Bearer abcdefghijklmnop"},
            "note": SECRETS["prompt_pat"],
            "max_tokens": 5,
        },
    )
    assert (
        path.read_text()
        == f'{{\n  "headers": {{\n    "Authorization": "{R}"\n  }},\n  "max_tokens": 5,\n  "note": "{R}"\n}}\n'
    )


def test_a_recorded_error_echoing_a_key_from_any_variable_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The key comes from a variable named like nothing secret, has no known format,
    # and the gateway's 400 echoes it.
    monkeypatch.setattr(_redact, "_registered", set(), raising=False)
    key = "corp-llm-5d4c3b2a1908"
    monkeypatch.setenv("LLM_GATEWAY", key)
    recorder = Recorder()
    with FakeEndpoint([Fault("400", message=f"model not enabled for key {key}")]) as ep:
        res = run_captured(ask, ep.api_base, api_key=key, recorder=recorder)
    assert res.error is not None and key in str(res.error)
    path = tmp_path / "x.llm.json"
    recorder.script.save(path)
    assert key not in path.read_text()
    assert f"model not enabled for key {R}" in path.read_text()
