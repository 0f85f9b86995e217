"""Dict keys: the value of a key named like a secret is redacted (token counts are not
secrets), and a secret used as a key is itself redacted, like any other text."""

from __future__ import annotations

import pytest

from evalrunner._redact import REDACTED, is_secret_key, redact

R = REDACTED


def test_redact_json_secret_keys_but_not_token_counts() -> None:
    doc = {
        "api_key": "abc",
        "apiKey": "abc",
        "Authorization": "opaque",
        "headers": {"x-api-key": "k", "Cookie": "sid=1", "X-Trace": "plain", "set-cookie": "a=b"},
        "password": "hunter2",
        "client_secret": "cs",
        "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG",
        "access_token": "ya29.a0AfH6SM",
        "refresh_token": "1//0g",
        "token": "t0k3n",
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "total_tokens": 15,
            "cached_tokens": 2,
        },
        "max_tokens": 256,
        "prompt_token_ids": [1, 2, 3],
        "token_count": 7,
        "empty_password": "",
        "password_hint": None,
        "items": [{"secret": "s"}, "Bearer abcdefghijklmnop"],
        "api_key_missing": None,
    }
    out = redact(doc, env_secrets=[])
    for key in (
        "api_key",
        "apiKey",
        "Authorization",
        "password",
        "client_secret",
        "aws_secret_access_key",
        "access_token",
        "refresh_token",
        "token",
    ):
        assert out[key] == R, key
    assert out["headers"] == {"x-api-key": R, "Cookie": R, "X-Trace": "plain", "set-cookie": R}
    assert out["usage"] == doc["usage"]
    assert (out["max_tokens"], out["prompt_token_ids"], out["token_count"]) == (256, [1, 2, 3], 7)
    assert out["empty_password"] == "" and out["password_hint"] is None
    assert out["items"] == [{"secret": R}, f"Bearer {R}"]
    assert doc["api_key"] == "abc"  # a copy, not in place
    for key in (
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "max_tokens",
        "reasoning_tokens",
    ):
        assert not is_secret_key(key)


def test_a_secret_used_as_a_key_is_redacted() -> None:
    # Tool arguments are the agent's JSON: a model can put a credential in a key.
    key = "sk-proj-Zq8Xw7Vv6Uu5Tt4Ss3Rr2Qq1"
    arguments = {key: "primary", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8": {"scope": "repo"}}
    out = redact({"tool_calls": [{"arguments": arguments}]}, env_secrets=[])
    assert out == {"tool_calls": [{"arguments": {R: "primary", f"{R}#2": {"scope": "repo"}}}]}
    assert redact({"note": {"my-gateway-key-0042": 1}}, env_secrets=["my-gateway-key-0042"]) == {
        "note": {R: 1}
    }


def test_the_walk_redacts_inside_tuples_subclasses_and_non_string_keys() -> None:
    # The walk tests exact types first for speed; whatever is not a plain dict, list
    # or str still goes the general way.
    import enum

    class Kind(enum.StrEnum):
        KEY = "api_key"

    class Text(str):
        pass

    key = "sk-proj-Zq8Xw7Vv6Uu5Tt4Ss3Rr2Qq1"
    doc = {
        "t": (key, [Text(key)], {"password": "hunter2!"}),
        Kind.KEY: "value-under-an-enum-key",
        7: Text(f"Bearer {key}"),
        "token": "",  # an empty secret field stays empty: nothing was there
        "api_key": [],
    }
    assert redact(doc, env_secrets=[]) == {
        "t": [R, [R], {"password": R}],
        Kind.KEY: R,
        7: f"Bearer {R}",
        "token": "",
        "api_key": [],
    }


@pytest.mark.parametrize(
    "key", ["myApiKey", "apiKey", "accessToken", "sessionToken", "clientSecret"]
)
def test_a_secret_key_written_in_camel_case_is_redacted(key: str) -> None:
    # Before: "myApiKey" was written as it was ("apiKey" was not).
    assert redact({key: "camelvalue999"}, []) == {key: REDACTED}


@pytest.mark.parametrize("key", ["maxTokens", "promptTokens", "inputTokenCount", "authorName"])
def test_camel_case_counts_and_names_are_not_secret_keys(key: str) -> None:
    assert redact({key: "12345678"}, []) == {key: "12345678"}


def test_our_own_names_named_like_secrets_keep_what_they_key() -> None:
    """A scenario, check, score or tool named ``reset_password``, ``check_api_key`` or
    ``rotate_token`` keys our own data in a night's files (its manifest's fingerprints, a
    run's check results and scores, a tool's metric): the run record that states them
    makes them ours, and they stay whole. Before, their values became "[REDACTED]" and
    every command refused the night's files after (issue 53)."""
    from evalrunner.suite._record import RunRecord

    names = {"scenario": "reset_pw_token", "check": "check_api_key", "tool": "rotate_token"}
    assert all(is_secret_key(name) for name in names.values())
    before = {
        "scenarios": {names["scenario"]: "fp-1234"},
        "checks": {names["check"]: False},
        "scores": {names["check"]: 0.5},
        "tool_sequences": {f"tool_used:{names['tool']}": 0.25},
        "broken": {names["check"]: "raised ValueError"},
    }
    assert redact(before, []) != before  # until a record states them, they read as secrets
    RunRecord(
        run_id="r/m/0",
        suite="t",
        scenario=names["scenario"],
        model="m",
        index=0,
        outcome="passed",
        checks={names["check"]: False},
        scores={names["check"]: 0.5},
        tools=[names["tool"]],
    )
    assert redact(before, []) == before
    # A yes/no is never a credential, whoever named it.
    assert redact({"session_cookie": True, "login_auth": False}, []) == {
        "session_cookie": True,
        "login_auth": False,
    }
    # What a model or user wrote under a secret key is still redacted.
    assert redact({"api_key": "abc", "headers": {"x-api-key": "k"}}, []) == {
        "api_key": R,
        "headers": {"x-api-key": R},
    }
