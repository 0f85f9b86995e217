"""The scenario fingerprint: what makes a baseline stop fitting its scenario, and what does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paths import REPO
from suite_texts import FULL, write_full

from evalrunner.suite._loader import load_suite
from evalrunner.suite._settings import (
    FINGERPRINTED_FIELDS,
    UNFINGERPRINTED_FIELDS,
    ResolvedScenario,
)


def fingerprint_of(tmp_path: Path, text: str) -> str:
    suite = load_suite(write_full(tmp_path, text))
    return suite.scenarios[1].fingerprint


def test_fingerprint_is_stable(tmp_path: Path) -> None:
    first = fingerprint_of(tmp_path, FULL)
    assert first == fingerprint_of(tmp_path, FULL)
    assert len(first) == 16 and int(first, 16) >= 0


def test_committed_baselines_still_fit_the_example_suite() -> None:
    # The fingerprint format is a promise to every committed baseline.
    suite = load_suite(REPO / "suites" / "example.yaml")
    for scenario in suite.scenarios:
        baseline = REPO / "baselines" / "example" / f"{scenario.id}--local.json"
        recorded = json.loads(baseline.read_text(encoding="utf-8"))["fingerprint"]
        assert scenario.fingerprint == recorded, scenario.id


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    runs: 20\n", "    runs: 50\n"),
        ("runs: 8\n", "runs: 3\n"),
        ("    models: []\n", "    models: [openai/gpt-4o]\n"),
        ("models: [openai/gpt-4o-mini, anthropic/claude-3-5-haiku]\n", "models: [x/y]\n"),
        ("    timeout_s: 30\n", "    timeout_s: 90\n"),
        ("retry: {max_attempts: 5,", "retry: {max_attempts: 2,"),
        ("tolerance: {margins: {tool_calls: 0.5}, fdr_q: 0.1}", "tolerance: {fdr_q: 0.2}"),
        (
            "    agent: pkg.mod:chain\n",
            "    agent: pkg.mod:chain\n    description: reworded\n    tags: [frozen]\n",
        ),
        ("volatile_keys: [trace_id, request_id]", "volatile_keys: [request_id, trace_id]"),
    ],
    ids=[
        "scenario-runs",
        "suite-runs",
        "scenario-models",
        "suite-models",
        "timeout",
        "retry",
        "tolerance",
        "labels",
        "key-order",
    ],
)
def test_fingerprint_ignores(tmp_path: Path, old: str, new: str) -> None:
    assert old in FULL
    assert fingerprint_of(tmp_path, FULL.replace(old, new)) == fingerprint_of(tmp_path, FULL)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "input: Population of the capital of France?",
            "input: Population of the capital of Spain?",
        ),
        ("agent: pkg.mod:chain", "agent: pkg.mod:chain2"),
        ("tools: [lookup_capital, city_population]", "tools: [lookup_capital]"),
        ("all_tools_succeeded: true", "all_tools_succeeded: false"),
        ("    temperature: 0\n", "    temperature: 1\n"),
        ("    max_turns: 8\n", "    max_turns: 9\n"),
        ("skip_rules: {empty_output: false,", "skip_rules: {empty_output: true,"),
        ("masks: [{pattern: '\\d+ ms'}]", "masks: [{pattern: '\\d+ s'}]"),
        ("keep_order: true", "keep_order: false"),
        ("volatile_keys: [request_id]", "volatile_keys: [request_id, x]"),
    ],
    ids=[
        "input",
        "agent",
        "tools",
        "checks",
        "temperature",
        "max-turns",
        "skip-rules",
        "masks",
        "keep-order",
        "suite-keys",
    ],
)
def test_fingerprint_changes(tmp_path: Path, old: str, new: str) -> None:
    assert old in FULL
    assert fingerprint_of(tmp_path, FULL.replace(old, new)) != fingerprint_of(tmp_path, FULL)


def test_every_resolved_field_is_classified_for_the_fingerprint() -> None:
    # A new ResolvedScenario field must be put in one of the two sets on purpose.
    assert set(ResolvedScenario.model_fields) == FINGERPRINTED_FIELDS | UNFINGERPRINTED_FIELDS
    assert not FINGERPRINTED_FIELDS & UNFINGERPRINTED_FIELDS
