"""Resolving a suite: each scenario's settings decided once at load, scenario over suite over defaults."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from suite_texts import HEAD, SCENARIO, one_scenario, write_full

from evalrunner.core._normalize import normalize
from evalrunner.suite import _settings, _suite_spec
from evalrunner.suite._loader import load_suite
from evalrunner.suite._metrics import DEFAULT_MARGINS
from evalrunner.suite._schema import RetryPolicy, SkipRules
from evalrunner.suite._settings import ResolvedScenario, resolve_suite
from evalrunner.suite._suite_spec import SuiteSpec
from evalrunner.suite._tolerance import Tolerance


def test_valid_suite_round_trip(tmp_path: Path) -> None:
    suite = load_suite(write_full(tmp_path))
    spec = suite.spec
    assert suite.path == tmp_path / "demo.yaml"
    assert spec.runs == 8 and suite.concurrency == 2 and spec.timeout_s == 60.0
    assert spec.retry == RetryPolicy(max_attempts=5, backoff_s=1, max_backoff_s=4, jitter=False)
    assert spec.skip_rules.unknown_tool is False and spec.skip_rules.empty_output is True
    assert [s.id for s in suite.scenarios] == ["direct_answer", "tool-chain"]
    assert suite.scenarios[0].frozen and not suite.scenarios[1].frozen
    assert suite.scenarios[0].checks.answer_contains == ["Paris"]
    assert suite.scenarios[1].tools == ["lookup_capital", "city_population"]

    # Dump, write back, load again: same suite. A scenario overrides what it sets, even
    # to a default value (`models: []`), so what the file says is what is set, not
    # what differs from the defaults.
    dumped = spec.model_dump(mode="json", exclude_unset=True)
    again = tmp_path / "again" / "demo.yaml"
    again.parent.mkdir()
    again.write_text(yaml.safe_dump(dumped, sort_keys=False), encoding="utf-8")
    reloaded = load_suite(again)
    assert reloaded.spec.model_dump() == spec.model_dump()
    assert [s.model_dump(exclude={"origin"}) for s in reloaded.scenarios] == [
        s.model_dump(exclude={"origin"}) for s in suite.scenarios
    ]


def test_defaults(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(one_scenario(), encoding="utf-8")
    suite = load_suite(path)
    spec, [scenario] = suite.spec, suite.scenarios
    assert (spec.runs, suite.concurrency, spec.timeout_s, spec.temperature, spec.max_turns) == (
        5,
        4,
        120.0,
        0.8,
        6,
    )
    assert (scenario.runs, scenario.timeout_s, scenario.temperature, scenario.max_turns) == (
        5,
        120.0,
        0.8,
        6,
    )
    assert spec.models == [] and suite.description == "" and scenario.models == []
    assert spec.retry == RetryPolicy(max_attempts=3, backoff_s=0.5, max_backoff_s=8.0, jitter=True)
    assert all(
        scenario.skip_rules.skips(kind)
        for kind in ("empty_output", "unknown_tool", "no_final_answer")
    )
    # The file sets no tolerance; the scenario gets the statistics' defaults, complete.
    assert spec.tolerance.model_fields_set == set()
    assert scenario.tolerance == Tolerance() and scenario.tolerance.margins == DEFAULT_MARGINS


def test_yaml_anchors_and_merge_keys_work(tmp_path: Path) -> None:
    text = HEAD + textwrap.dedent(
        """\
        scenarios:
          - &first
            id: a
            agent: pkg.mod:fn
            input: do it
          - <<: *first
            id: b
        """
    )
    path = tmp_path / "demo.yaml"
    path.write_text(text, encoding="utf-8")
    assert [s.id for s in load_suite(path).scenarios] == ["a", "b"]


def test_overrides_merge(tmp_path: Path) -> None:
    suite = load_suite(write_full(tmp_path))
    plain, chain = suite.scenarios

    assert isinstance(plain, ResolvedScenario)
    assert (plain.runs, plain.timeout_s, plain.max_turns, plain.temperature) == (8, 60.0, 4, 0.5)
    assert plain.models == ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"]
    assert plain.volatile_keys == ["request_id"]
    assert plain.skip_rules == suite.spec.skip_rules
    assert plain.tolerance == suite.spec.tolerance.over(Tolerance())
    assert plain.retry == suite.spec.retry and plain.suite == "demo"

    assert (chain.runs, chain.timeout_s, chain.max_turns, chain.temperature) == (20, 30.0, 8, 0.0)
    assert chain.models == []  # explicit [] = the embedded local model, not "inherit"
    assert chain.volatile_keys == ["request_id", "trace_id"]
    assert [m.pattern for m in chain.masks] == ["req_[0-9a-f]+", "\\d+ ms"]
    # Only the rules the scenario sets replace the suite's.
    assert chain.skip_rules == SkipRules(
        unknown_tool=True, empty_output=False, invalid_output_pattern="\\S"
    )
    # Margins merge metric by metric over the suite's (over the defaults); the rest replace.
    assert chain.tolerance == Tolerance(
        margins={**DEFAULT_MARGINS, "success_rate": 0.1, "tool_calls": 0.5},
        gating=["success_rate"],
        fdr_q=0.1,
    )
    assert chain.keep_order and chain.checks.all_tools_succeeded
    # The suite itself is untouched by resolving.
    assert suite.spec.skip_rules.empty_output is True and suite.spec.tolerance.fdr_q == 0.05


def test_resolved_scenario_is_frozen(tmp_path: Path) -> None:
    resolved = load_suite(write_full(tmp_path)).scenarios[0]
    with pytest.raises(ValueError):
        resolved.runs = 3  # type: ignore[misc]


def test_masks_apply_in_order_when_normalising(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(
        one_scenario(masks="[{pattern: 'req_(\\w+)', replacement: '<\\1>'}, {pattern: '\\d+ ms'}]"),
        encoding="utf-8",
    )
    [scenario] = load_suite(path).scenarios
    trajectory = {"steps": [{"step_id": 1, "source": "user", "message": "id req_ab1 took 12 ms"}]}
    normalised = normalize(trajectory, scenario.normalize_config())
    assert normalised["steps"][0]["message"] == "id <ab1> took <masked>"


def test_normalize_config_uses_resolved_settings(tmp_path: Path) -> None:
    chain = load_suite(write_full(tmp_path)).scenarios[1]
    config = chain.normalize_config()
    assert {"request_id", "trace_id"} <= set(config.volatile_keys)
    assert config.sort_subagents is False
    assert chain.normalize_config() is config  # computed when resolved, not per call


def test_a_suite_is_resolved_once_at_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One layering per level and one fingerprint per scenario, all while loading."""
    layered: list[_suite_spec.RunSettings] = []
    fingerprinted: list[str] = []
    over, fingerprint = _suite_spec.RunSettings.over, _settings._fingerprint

    def counted_over(
        self: _suite_spec.RunSettings, base: _suite_spec.RunSettings
    ) -> _suite_spec.RunSettings:
        layered.append(self)
        return over(self, base)

    def counted_fingerprint(scenario: ResolvedScenario) -> str:
        fingerprinted.append(scenario.id)
        return fingerprint(scenario)

    monkeypatch.setattr(_suite_spec.RunSettings, "over", counted_over)
    monkeypatch.setattr(_settings, "_fingerprint", counted_fingerprint)
    suite = load_suite(write_full(tmp_path))
    assert len(layered) == 3 and isinstance(layered[0], SuiteSpec)  # the suite, then each scenario
    assert fingerprinted == ["direct_answer", "tool-chain"]
    assert [s.fingerprint for s in suite.scenarios] == [s.fingerprint for s in suite.scenarios]
    assert all(s.normalize_config() is s.normalize_config() for s in suite.scenarios)
    assert len(layered) == 3 and len(fingerprinted) == 2


def test_resolving_without_a_file_names_scenarios_by_position() -> None:
    spec = SuiteSpec.model_validate(
        yaml.safe_load(HEAD + "runs: 2\nscenarios:\n" + SCENARIO + "    runs: 3\n")
    )
    suite = resolve_suite(spec)
    assert suite.path is None and suite.name == "demo"
    [scenario] = suite.scenarios
    assert scenario.runs == 3 and scenario.origin == "scenarios[0] (id 'a')"
