"""The proxy's Python API without a socket: run ids, modes, the environment a run's
agent gets, and run bookkeeping."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner.errors import ConfigError
from evalrunner.proxy import DUMMY_KEY, ProxyServer, Upstream
from evalrunner.proxy._runs import check_run_id


@pytest.mark.parametrize("run_id", ["default", "suite/scenario/0", "a.b-c_D/1"])
def test_good_run_ids(run_id: str) -> None:
    assert check_run_id(run_id) == run_id


@pytest.mark.parametrize("run_id", ["", "../x", "a//b", "a/./b", "a/..", "a b", "é", "x" * 201])
def test_run_ids_that_could_escape_or_confuse_are_refused(run_id: str) -> None:
    with pytest.raises(ConfigError, match="proxy run id"):
        check_run_id(run_id)


def test_modes_need_what_they_use(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="use record, replay or passthrough"):
        ProxyServer("bogus", tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a directory"):
        ProxyServer("replay")
    with pytest.raises(ConfigError, match="needs an upstream model"):
        ProxyServer("record", tmp_path)
    ProxyServer("replay", tmp_path)  # replay needs no upstream


def test_a_run_gets_base_urls_for_both_sdk_families_and_a_dummy_key(tmp_path: Path) -> None:
    proxy = ProxyServer("record", tmp_path, Upstream("openai/x"), port=8123)
    env = proxy.run_env("s/m/0")
    cache = Path(env.pop("DSPY_CACHEDIR"))  # an empty one of the run's own
    assert env == {
        "OPENAI_BASE_URL": "http://127.0.0.1:8123/runs/s/m/0/v1",
        "OPENAI_API_BASE": "http://127.0.0.1:8123/runs/s/m/0/v1",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8123/runs/s/m/0",
        "OPENAI_API_KEY": DUMMY_KEY,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
        "CREWAI_DISABLE_TELEMETRY": "true",
        "ANONYMIZED_TELEMETRY": "False",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "DO_NOT_TRACK": "1",
        # The agent's own spans, exported over OTLP/HTTP, come to the run too.
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:8123/runs/s/m/0/v1/traces",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"authorization=Bearer%20{DUMMY_KEY}",
    }
    assert cache.is_dir() and not any(cache.iterdir())
    assert proxy.run_url() == "http://127.0.0.1:8123/v1"
    assert proxy.recording_path("s/m/0") == tmp_path / "s" / "m" / "0.proxy.json"
    assert proxy.open_runs() == ["default", "s/m/0"]
    proxy.stop()
    assert not cache.exists()


def test_finishing_a_run_twice_or_never_opened_is_an_error(tmp_path: Path) -> None:
    proxy = ProxyServer("passthrough", upstream=Upstream("openai/x"))
    proxy.open_run("r")
    assert proxy.finish_run("r").no_model_calls
    with pytest.raises(ConfigError, match="not open"):
        proxy.finish_run("r")
    with pytest.raises(ConfigError, match="is finished"):
        proxy.run_for_request("r")
    proxy.open_run("r")  # opening again starts it afresh
    assert proxy.run_for_request("r").calls == []
