"""Frozen runs are reproducible: the committed goldens come back byte-identical from
their recordings, replay after replay, and the fan-out's completion order changes
nothing in the normalised trajectory."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from agents_for_tests import jittered_fanout
from paths import REPO

from evalrunner._jsonio import canonical
from evalrunner.core._normalize import normalize
from evalrunner.core._scope import arun_captured
from evalrunner.frozen._golden import Golden, script_path_for
from evalrunner.frozen._replay import Replayer
from evalrunner.frozen._run import run_frozen
from evalrunner.frozen._script import Script
from evalrunner.suite._contract import RunContext
from evalrunner.suite._loader import load_suite

EXAMPLE = REPO / "suites" / "example.yaml"
GOLDENS = REPO / "suites" / "goldens" / "example"


def _scenario(scenario_id: str) -> tuple[Any, RunContext]:
    suite = load_suite(EXAMPLE)
    resolved = next(s for s in suite.scenarios if s.id == scenario_id)
    ctx = RunContext(
        "openai/fake", None, None, resolved.temperature, resolved.max_turns, tuple(resolved.tools)
    )
    return resolved, ctx


def test_fanout_is_stable_across_20_runs_in_random_completion_order() -> None:
    resolved, ctx = _scenario("fanout")
    script = Script.load(GOLDENS / "fanout.llm.json")
    golden = Golden.load(GOLDENS / "fanout.json")
    orders, normalised = set(), set()
    for seed in range(20):
        replayer = Replayer(script, strict=True)
        res = asyncio.run(
            arun_captured(
                jittered_fanout, resolved.input, ctx, seed, name="fanout", replay=replayer
            )
        )
        assert res.error is None, res.traceback
        assert replayer.unused == 0 and replayer.mismatches == []
        orders.add(tuple(s["agent"]["name"] for s in res.trajectory["subagent_trajectories"]))
        normalised.add(canonical(normalize(res.trajectory, resolved.normalize_config())))
    # The delays really reordered the sub-agents, and normalisation undid it.
    assert len(orders) > 1
    assert len(normalised) == 1
    assert json.loads(normalised.pop()) == golden.trajectory


@pytest.mark.parametrize("scenario_id", ["direct_answer", "single_tool", "fanout"])
def test_goldens_are_byte_identical_across_20_replays(scenario_id: str, tmp_path: Path) -> None:
    resolved, ctx = _scenario(scenario_id)
    committed = GOLDENS / f"{scenario_id}.json"
    expected = committed.read_bytes()
    for run in range(20):
        work = tmp_path / str(run)
        work.mkdir()
        golden = work / committed.name
        shutil.copy(committed, golden)
        shutil.copy(script_path_for(committed), script_path_for(golden))
        if scenario_id == "fanout":  # and in a different completion order each time
            agent: Any = jittered_fanout
            args: tuple[Any, ...] = (resolved.input, ctx, run)
        else:
            agent, args = resolved.load_agent(), (resolved.input, ctx)
        outcome = run_frozen(
            agent,
            *args,
            golden_path=golden,
            mode="update",
            config=resolved.normalize_config(),
            name=scenario_id,
        )
        assert outcome.ok and outcome.deltas == [], outcome.message
        assert outcome.replay_mismatches == []
        assert golden.read_bytes() == expected, f"run {run}: {scenario_id} golden bytes changed"
        assert script_path_for(golden).read_bytes() == script_path_for(committed).read_bytes()
