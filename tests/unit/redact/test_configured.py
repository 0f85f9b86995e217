"""Every configured credential is redacted wherever it appears, whatever it looks like:
values of environment variables that hold credentials (by name, litellm's provider
keys included), the api_key of every endpoint in use, and every api_key an agent hands
to litellm, in text, in keys, and in the traceback of a crashed run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents_for_tests import ask
from fake_endpoint import FakeEndpoint, Fault

from evalrunner import _redact
from evalrunner._redact import REDACTED, redact, redact_text
from evalrunner.core._scope import run_captured
from evalrunner.endpoints._endpoints import Endpoint

R = REDACTED


@pytest.fixture(autouse=True)
def _no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no registered credentials and leaves none behind."""
    monkeypatch.setattr(_redact, "_registered", set(), raising=False)
    yield


def test_secret_looking_environment_values_are_redacted_anywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "opaque-value-0042")
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to redact safely
    monkeypatch.setenv("HOME_DIR", "/home/someone-long")  # not a secret-looking name
    assert redact({"note": "got opaque-value-0042 from abc at /home/someone-long"}) == {
        "note": f"got {R} from abc at /home/someone-long"
    }


@pytest.mark.parametrize(
    "name",
    [
        # litellm's provider keys
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "AZURE_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "AZURE_AD_TOKEN",
        "AZURE_CLIENT_SECRET",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "VERTEXAI_CREDENTIALS",
        "WATSONX_APIKEY",
        "REPLICATE_API_TOKEN",
        "CLARIFAI_PAT",
        # credentials named without the secret word at the end
        "OPENAI_API_KEY_STAGING",
        "ANTHROPIC_KEY_2",
        "GATEWAY_AUTH",
        "LLM_CREDS",
        "npm_config__authToken",
        # password variables by their short names (a review found them in run files)
        "GATEWAY_PASS",
        "DB_PASS",
        "MYSQL_PWD",
        "SMTP_PASS_2",
    ],
)
def test_values_of_credential_variables_are_redacted(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, "value-0f1e2d3c4b5a")
    assert redact_text("sent value-0f1e2d3c4b5a") == f"sent {R}"


@pytest.mark.parametrize(
    "name",
    [
        "HOME",
        "PWD",
        "OLDPWD",
        "ORIG_PWD",
        "NO_PROXY_BYPASS",
        "COMPASS_MODE",
        "PASSENGER_APP_ENV",
        "PATH",
        "AZURE_API_BASE",
        "AZURE_API_VERSION",
        "HIDDENLAYER_AUTH_URL",
        "SSH_AUTH_SOCK",
        "TOKENIZERS_PARALLELISM",
        "KEYBOARD_LAYOUT",
        "XAI_OAUTH_AUTH_FILE",
    ],
)
def test_values_of_variables_that_only_point_somewhere_are_kept(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, "value-0f1e2d3c4b5a")
    assert redact_text("sent value-0f1e2d3c4b5a") == "sent value-0f1e2d3c4b5a"


def test_credentials_in_variables_not_named_at_the_end_are_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY_STAGING", "staging-0a1b2c3d4e5f")
    monkeypatch.setenv("GATEWAY_AUTH", "gw-auth-9f8e7d6c")
    text = "400 Bad Request: key staging-0a1b2c3d4e5f (via gw-auth-9f8e7d6c) is not valid"
    assert redact_text(text) == f"400 Bad Request: key {R} (via {R}) is not valid"


def test_an_endpoint_api_key_is_redacted_wherever_it_appears() -> None:
    key = "gw-7f3a9c1d2e4b"  # no known format
    assert redact_text(f"401: {key}") == f"401: {key}"
    Endpoint(label="gateway", model="openai/gpt-4o-mini", api_base="http://gw", api_key=key)
    assert redact_text(f"401: {key}") == f"401: {R}"
    # The rest of the token goes with it (a longer key that starts with it is a secret too).
    assert redact({key: [f"x{key}x"]}) == {R: [f"x{R}"]}


def test_an_api_key_passed_to_litellm_is_redacted_from_then_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The agent reads its key from a variable named like nothing secret; the gateway's
    # 400 echoes it back, and that error ends up in the run's record.
    key = "corp-llm-5d4c3b2a1908"
    monkeypatch.setenv("LLM_GATEWAY", key)
    with FakeEndpoint([Fault("400", message=f"unknown model for key {key}")]) as ep:
        res = run_captured(ask, ep.api_base, api_key=key)
    assert res.error is not None and key in str(res.error)
    assert key not in redact_text(str(res.error))
    assert f"unknown model for key {R}" in redact_text(str(res.error))


def _crash(key: str) -> None:
    raise RuntimeError(f"gateway refused {key}: quota exceeded")


def test_the_traceback_of_a_crashed_run_is_redacted() -> None:
    # What `evalrunner run` prints for a crashed run (CaptureResult.traceback).
    key = "tok-1a2b3c4d5e6f7a8b"
    Endpoint(label="gateway", model="openai/x", api_key=key)
    res = run_captured(_crash, key)
    assert res.traceback is not None and key in res.traceback
    printed = redact_text(res.traceback)
    assert key not in printed
    assert f"RuntimeError: gateway refused {R}: quota exceeded" in printed


def test_a_string_written_before_its_secret_was_configured_is_redacted_once_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Redactions are remembered between writes (a night repeats its prompts): a
    # secret registered or exported later must still reach text already seen.
    doc = {"note": "called with value-0042-long and other-0043-long"}
    assert redact(doc) == doc
    _redact.register_secret("value-0042-long")
    assert redact(doc) == {"note": f"called with {R} and other-0043-long"}
    monkeypatch.setenv("LATER_TOKEN", "other-0043-long")
    assert redact(doc) == {"note": f"called with {R} and {R}"}


def test_remembered_redactions_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_redact, "_MEMO_CHARS", 1_000)
    monkeypatch.setattr(_redact, "_memo", _redact._Memo())
    for i in range(200):
        redact({"text": f"message number {i} of a long night"})
    assert _redact._memo.chars <= 1_000 + 40


def test_a_configured_secret_is_redacted_with_the_rest_of_its_token() -> None:
    # Before: "[REDACTED]SECRETabcdefghijk" in a recording: the configured key went first,
    # and what was left of the longer token matched no pattern (a review found it).
    secrets = ["sk-test-123"]
    text = 'the tool got {"token_value": "sk-test-123SECRETabcdefghijk"} and sk-test-123.'
    assert redact_text(text, secrets) == f'the tool got {{"token_value": "{R}"}} and {R}.'
