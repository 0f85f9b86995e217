"""Which endpoint a model string resolves to."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalrunner.endpoints._endpoints import EndpointPool, check_model
from evalrunner.errors import ConfigError


def test_api_base_override_applies_to_openai_models_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALRUNNER_API_BASE", "http://127.0.0.1:9/v1")
    pool = EndpointPool()
    assert pool.resolve("openai/gpt-x").api_base == "http://127.0.0.1:9/v1"
    assert pool.resolve("anthropic/claude-x").api_base is None


# ------------------------------------------------ model strings resolve before any run (item 5)


@pytest.mark.parametrize(
    "model",
    ["local", "openai/gpt-4o-mini", "gpt-4o-mini", "anthropic/claude-3-5-haiku-latest", "ollama/x"],
)
def test_models_litellm_can_route_are_accepted(model: str) -> None:
    check_model(model, "--model")


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("", "the model is empty"),
        ("  ", "the model is empty"),
        ("gpt4o-typo", "unknown model 'gpt4o-typo': litellm cannot tell its provider"),
        ("nosuchprovider/x", "unknown model 'nosuchprovider/x': litellm knows no provider"),
        (
            "opena/gpt-4o",
            "unknown model 'opena/gpt-4o': litellm knows no provider 'opena'; did you mean 'openai'?",
        ),
        ("openai/", "unknown model 'openai/': no model name after the provider"),
    ],
)
def test_a_model_litellm_cannot_route_is_one_config_error(model: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_model(model, "--model")
    message = str(info.value)
    assert message.startswith(f"--model: {why}") and "\n" not in message, message


@pytest.mark.parametrize(
    ("model", "imports"),
    [("openai/my-model", False), ("anthropic/claude-x", False), ("ollama/x", True)],
)
def test_a_model_named_by_its_provider_prefix_is_checked_without_importing_litellm(
    model: str, imports: bool
) -> None:
    # `evalrunner proxy --model openai/m --api-base ...` never calls litellm (the direct
    # transports); checking its model must not import it either (seconds of CPU).
    code = (
        "import sys; from evalrunner.endpoints._endpoints import check_model; "
        f"check_model({model!r}, '--model'); print('litellm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(imports)


# ---------------------------------------------- the embedded model says what it is doing


class _Server:
    """LocalModelServer's interface, starting nothing."""

    startup_seconds = 8.7
    model = "openai/smollm2-135m-instruct"
    api_base = "http://127.0.0.1:1/v1"
    api_key = "local-no-key"
    slots = 8

    def start(self) -> _Server:
        return self

    def stop(self, *, keep_log: bool = False) -> None:
        pass

    def died(self) -> str | None:
        return None


def test_the_embedded_model_is_announced_while_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evalrunner.endpoints._local_model.LocalModelServer", _Server)
    said: list[str] = []
    with EndpointPool(notify=said.append) as pool:
        endpoint = pool.resolve("local")
        pool.resolve("local")  # started once
    assert said == [
        "starting local model (the embedded SmolLM2-135M) ...",
        "local model ready after 8.7 s",
    ]
    # Runs against it go as many at a time as it decodes at once.
    assert (endpoint.label, endpoint.max_concurrency) == ("local", 8)
    assert EndpointPool().resolve("openai/x").max_concurrency is None
