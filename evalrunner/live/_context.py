"""What a scenario's agent callable receives besides its input."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrunner.live._endpoints import Endpoint
    from evalrunner.live._settings import ResolvedScenario


@dataclass(frozen=True)
class RunContext:
    """Model endpoint and sampling settings for one run.

    Agents pass these to litellm; evalrunner fills them from the suite, the
    CLI, or the embedded local model. ``api_key`` is never written anywhere.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.8
    max_turns: int = 6
    tools: tuple[str, ...] = ()
    seed: int | None = None
    max_tokens: int | None = 256

    @classmethod
    def for_scenario(cls, scenario: ResolvedScenario, endpoint: Endpoint) -> RunContext:
        """What a run of `scenario` against `endpoint` hands its agent."""
        return cls(
            model=endpoint.model,
            api_base=endpoint.api_base,
            api_key=endpoint.api_key,
            temperature=scenario.temperature,
            max_turns=scenario.max_turns,
            tools=tuple(scenario.tools),
        )

    def litellm_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``litellm.completion`` (endpoint and sampling)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "temperature": self.temperature,
            "drop_params": True,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.seed is not None:
            kwargs["seed"] = self.seed
        return kwargs
