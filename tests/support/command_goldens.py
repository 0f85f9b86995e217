"""A command agent's golden recorded against the fake endpoint (its answers by content) and
replayed offline, as the span tests of issue 56 take one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_endpoint import FakeEndpoint
from sdk_agents import content_responder

from evalrunner.endpoints._endpoints import Endpoint
from evalrunner.frozen._proxied import ProxiedAgent, run_frozen_proxied
from evalrunner.frozen._run import FrozenOutcome


def recorded_and_replayed(agent: ProxiedAgent, golden: Path) -> tuple[FrozenOutcome, FrozenOutcome]:
    """``agent``'s golden written at ``golden`` from a live (fake) endpoint, then checked
    offline: the two outcomes."""
    with FakeEndpoint(responder=content_responder) as ep:
        recorded = _frozen(agent, golden, "record", ep.api_base)
    return recorded, _frozen(agent, golden, "check", "http://127.0.0.1:9")


def _frozen(agent: ProxiedAgent, golden: Path, mode: Any, api_base: str) -> FrozenOutcome:
    def endpoint() -> Endpoint:
        return Endpoint(label="openai/fake", model="openai/fake", api_base=api_base)

    return run_frozen_proxied(agent, golden_path=golden, mode=mode, endpoint=endpoint)
