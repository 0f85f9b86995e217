"""A night that measured nothing of the agent is refused as a baseline night, saying what
failed: the endpoints, or how the agent reaches its model."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner.baseline._build import _check_measured
from evalrunner.errors import BaselineMismatch

from .conftest import record


def test_a_night_whose_calls_never_reached_the_model_is_not_said_the_endpoints_failed() -> None:
    # Before: "the endpoints failed, not the agent ... once they answer" of a command agent
    # that sent the proxy no key, whose calls no endpoint ever saw.
    reason = "NoKeyForProxy (refused by the capture proxy): no model calls: ..."
    runs = [record(i, outcome="infra_error", reason=reason) for i in range(4)]
    with pytest.raises(BaselineMismatch) as info:
        _check_measured(Path("n1"), runs, "s")
    said = str(info.value)
    assert "most of them made no model call that reached the model" in said
    assert "endpoints failed" not in said
    assert said.endswith("run the night again once its calls reach the model")
    down = [record(i, outcome="infra_error", reason="HTTP 503 from m") for i in range(4)]
    with pytest.raises(BaselineMismatch, match="the endpoints failed, not the agent"):
        _check_measured(Path("n1"), down, "s")
