"""Loading a suite file: every mistake is one line naming the file, line, scenario and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_texts import HEAD, SCENARIO, one_scenario, scenario_with

from evalrunner.errors import ConfigError
from evalrunner.suite._loader import load_suite

MALFORMED: list[tuple[str, str, str]] = [
    (
        "yaml-syntax",
        HEAD + "scenarios: [\n  - id: a\n",
        "invalid YAML",
    ),
    ("yaml-tab", HEAD + "scenarios:\n\t- id: a\n", "indent with spaces, not tabs"),
    (
        "yaml-duplicate-key",
        HEAD + "runs: 3\nruns: 4\nscenarios:\n" + SCENARIO,
        ":4:1: invalid YAML: duplicate key 'runs' (first at line 3); remove one",
    ),
    ("empty-file", "", "the file is empty; a suite starts with 'format_version: 1'"),
    ("top-level-list", "- a\n- b\n", "the top level must be a mapping of fields"),
    ("unknown-field", one_scenario(runz="3"), ":3: unknown field 'runz'; did you mean 'runs'?"),
    (
        "unknown-field-no-close-match",
        one_scenario(zzzzzz="3"),
        "unknown field 'zzzzzz'; known fields: format_version, name,",
    ),
    (
        "check-at-scenario-level",
        scenario_with("answer_contains: [Paris]\n"),
        "scenarios[0] (id 'a'): unknown field 'answer_contains'; it belongs under 'checks'",
    ),
    (
        "scenario-field-at-top-level",
        one_scenario(input="hi"),
        "unknown field 'input'; it is a scenario field",
    ),
    (
        "unknown-check",
        scenario_with("checks:\n  answer_contain: [Paris]\n"),
        "scenarios[0] (id 'a').checks: unknown field 'answer_contain'; did you mean 'answer_contains'?",
    ),
    (
        "wrong-type-quoted-int",
        one_scenario(runs='"5"'),
        "runs: expected a whole number, got '5' (text); remove the quotes",
    ),
    (
        "wrong-type-word",
        one_scenario(runs="five"),
        "runs: expected a whole number, got 'five' (text)",
    ),
    (
        "wrong-type-bool-for-int",
        one_scenario(concurrency="true"),
        "concurrency: expected a whole number, got true (a boolean)",
    ),
    (
        "list-given-as-string",
        one_scenario(models="openai/gpt-4o"),
        "models: expected a list, got 'openai/gpt-4o' (text); write it as a list: [openai/gpt-4o]",
    ),
    (
        "missing-input",
        HEAD + "scenarios:\n  - id: a\n    agent: pkg.mod:fn\n",
        "scenarios[0] (id 'a'): missing required field 'input' (the user task given to the agent)",
    ),
    (
        "missing-format-version",
        "name: demo\nscenarios:\n" + SCENARIO,
        "missing required field 'format_version'; add 'format_version: 1' at the top of the file",
    ),
    (
        "newer-format-version",
        "format_version: 2\nname: demo\nfuture_field: 1\nscenarios:\n" + SCENARIO,
        ":1: format_version: unsupported format_version 2; this evalrunner reads format_version 1; upgrade evalrunner",
    ),
    (
        "format-version-text",
        "format_version: one\nname: demo\nscenarios:\n" + SCENARIO,
        "unsupported format_version 'one'; this evalrunner reads format_version 1",
    ),
    (
        "name-not-stem",
        "format_version: 1\nname: other\nscenarios:\n" + SCENARIO,
        ":2: name: 'other' does not match the file name 'demo.yaml'; rename the file to other.yaml or set name: demo",
    ),
    (
        "bad-suite-name",
        "format_version: 1\nname: My Suite\nscenarios:\n" + SCENARIO,
        "'My Suite' is not a valid suite name",
    ),
    (
        "duplicate-scenario-id",
        HEAD + "scenarios:\n" + SCENARIO + SCENARIO,
        ":7: scenarios[1] (id 'a').id: duplicate scenario id 'a' (also scenarios[0]); ids must be unique",
    ),
    ("empty-scenarios", HEAD + "scenarios: []\n", "scenarios: must list at least one scenario"),
    ("no-scenarios", HEAD, "missing required field 'scenarios'"),
    (
        "scenario-not-mapping",
        HEAD + "scenarios:\n  - just a string\n",
        "scenarios[0]: expected a mapping of fields, got 'just a string' (text)",
    ),
    (
        "scenarios-as-mapping",
        HEAD + "scenarios:\n  a: {}\n",
        "scenarios: expected a list, got a mapping; start each item on its own line with '- '",
    ),
    (
        "bad-scenario-id",
        HEAD + "scenarios:\n  - id: Chain Test\n    agent: pkg.mod:fn\n    input: x\n",
        "scenarios[0] (id 'Chain Test').id: 'Chain Test' is not a valid scenario id: use lowercase letters, digits, '_' and '-', starting with a letter or digit; try 'chain-test'",
    ),
    (
        "agent-dotted-path",
        HEAD
        + "scenarios:\n  - id: a\n    agent: evalrunner.examples.direct_answer\n    input: x\n",
        "scenarios[0] (id 'a').agent: 'evalrunner.examples.direct_answer' is not an import path; write 'package.module:callable', e.g. 'evalrunner.examples:direct_answer'; did you mean 'evalrunner.examples:direct_answer'?",
    ),
    (
        "agent-garbage",
        HEAD + "scenarios:\n  - id: a\n    agent: 'not a path'\n    input: x\n",
        "'not a path' is not an import path",
    ),
    (
        "bad-regex",
        HEAD
        + "scenarios:\n  - id: a\n    agent: pkg.mod:fn\n    input: x\n"
        + "  - id: b\n    agent: pkg.mod:fn\n    input: x\n"
        + "  - id: chain\n    agent: pkg.mod:fn\n    input: x\n    checks:\n      answer_matches: 'x('\n",
        "scenarios[2] (id 'chain').checks.answer_matches: invalid regex 'x(' — missing ), unterminated subpattern at position 1",
    ),
    ("zero-runs", one_scenario(runs="0"), ":3: runs: must be at least 1, got 0 (a whole number)"),
    (
        "negative-scenario-runs",
        scenario_with("runs: -2\n"),
        "scenarios[0] (id 'a').runs: must be at least 1, got -2",
    ),
    ("zero-timeout", one_scenario(timeout_s="0"), "timeout_s: must be greater than 0, got 0"),
    ("infinite-timeout", one_scenario(timeout_s=".inf"), "timeout_s: must be a finite number"),
    (
        "temperature-too-high",
        one_scenario(temperature="2.5"),
        "temperature: must be at most 2, got 2.5 (a number)",
    ),
    (
        "retry-backoff-order",
        one_scenario(retry="{backoff_s: 4, max_backoff_s: 1}"),
        "retry.max_backoff_s: max_backoff_s (1) is smaller than backoff_s (4)",
    ),
    (
        "retry-unknown",
        one_scenario(retry="{attempts: 3}"),
        "retry: unknown field 'attempts'; did you mean 'max_attempts'?",
    ),
    (
        "tolerance-unknown",
        one_scenario(tolerance="{fdr: 0.1}"),
        "tolerance: unknown field 'fdr'; did you mean 'fdr_q'?",
    ),
    (
        "tolerance-margin-type",
        one_scenario(tolerance="{margins: {success_rate: high}}"),
        "tolerance.margins.success_rate: expected a number, got 'high' (text)",
    ),
    (
        "tolerance-fdr-range",
        one_scenario(tolerance="{fdr_q: 1.5}"),
        "tolerance.fdr_q: must be less than 1, got 1.5",
    ),
    (
        "tolerance-gating-type",
        one_scenario(tolerance="{gating: success_rate}"),
        "tolerance.gating: expected a list",
    ),
    (
        "tolerance-misspelt-margin",
        one_scenario(tolerance="{margins: {sucess_rate: 0.1}}"),
        ":3: tolerance.margins.sucess_rate: unknown metric 'sucess_rate'; did you mean 'success_rate'?",
    ),
    (
        "tolerance-misspelt-margin-in-a-scenario",
        scenario_with("tolerance:\n  margins:\n    step_count: 0.5\n    tool_call: 0.5\n"),
        ":10: scenarios[0] (id 'a').tolerance.margins.tool_call: unknown metric 'tool_call'; did you mean 'tool_calls'?",
    ),
    (
        "tolerance-unknown-gating-metric",
        one_scenario(tolerance="{gating: [success_rate, nope]}"),
        "tolerance.gating[1]: unknown metric 'nope'; known: success_rate,",
    ),
    (
        "tolerance-ratio-margin-too-small",
        one_scenario(tolerance="{margins: {prompt_tokens: 0.9}}"),
        "tolerance.margins: margin of 'prompt_tokens' is a ratio and must be > 1 (e.g. 1.25 for x1.25), got 0.9",
    ),
    (
        "tolerance-rate-margin-zero",
        one_scenario(tolerance="{margins: {success_rate: 0}}"),
        "tolerance.margins: margin of 'success_rate' must lie in (0, 1], got 0",
    ),
    (
        "tolerance-alpha-range",
        one_scenario(tolerance="{alpha: 0.5}"),
        "tolerance.alpha: must be less than 0.5, got 0.5",
    ),
    (
        "mask-bad-regex",
        one_scenario(masks="[{pattern: '[a-'}]"),
        "masks[0].pattern: invalid regex '[a-' — unterminated character set",
    ),
    (
        "mask-empty-match",
        one_scenario(masks="[{pattern: '\\d*'}]"),
        "masks[0].pattern: regex '\\d*' matches the empty string",
    ),
    (
        "mask-bad-replacement",
        one_scenario(masks="[{pattern: 'a', replacement: '\\2'}]"),
        "masks[0].replacement: invalid replacement",
    ),
    (
        "skip-rules-bad-pattern",
        one_scenario(skip_rules="{invalid_output_pattern: '(?P<'}"),
        "skip_rules.invalid_output_pattern: invalid regex",
    ),
    (
        "skip-rules-typo",
        one_scenario(skip_rules="{empty_outputs: false}"),
        "skip_rules: unknown field 'empty_outputs'; did you mean 'empty_output'?",
    ),
    (
        "empty-input",
        HEAD + "scenarios:\n  - id: a\n    agent: pkg.mod:fn\n    input: '  '\n",
        "scenarios[0] (id 'a').input: is empty; give the user task",
    ),
    (
        "null-input",
        HEAD + "scenarios:\n  - id: a\n    agent: pkg.mod:fn\n    input:\n",
        "scenarios[0] (id 'a').input: expected text, got nothing (null)",
    ),
    (
        "duplicate-models",
        one_scenario(models="[a/b, a/b]"),
        "models[1]: model 'a/b' is listed twice; remove one",
    ),
    (
        # Before: accepted, and one model's run files overwrote the other's (a review found it).
        "models-sharing-files",
        one_scenario(models="['openai/m:1', openai/m_1]"),
        "models: models 'openai/m:1' and 'openai/m_1' would share their results and baseline "
        "files (both are named 'openai_m_1' there); run one of them in another suite",
    ),
    (
        "empty-tool-name",
        scenario_with("tools: ['']\n"),
        "scenarios[0] (id 'a').tools[0]: empty tool name",
    ),
    (
        "contradictory-checks",
        scenario_with("checks: {tools_used: [search], tools_not_used: [search]}\n"),
        "checks.tools_not_used: tool 'search' is in both tools_used and tools_not_used",
    ),
    (
        # Before: accepted, and every run failed (a review found it).
        "tool-check-typo",
        scenario_with("tools: [lookup_capital]\nchecks: {tools_used: [lookup_captial]}\n"),
        "checks.tools_used[0]: tool 'lookup_captial' is not among the scenario's tools "
        "(lookup_capital); did you mean 'lookup_capital'?",
    ),
    (
        # Before: accepted, and passed every run whatever the agent called.
        "negative-tool-check-typo",
        scenario_with("tools: [search, read]\nchecks: {tools_not_used: [serach]}\n"),
        "checks.tools_not_used[0]: tool 'serach' is not among the scenario's tools "
        "(search, read); did you mean 'search'?",
    ),
    (
        # Before: "write it as a list: [python3 agent.py {task}]", still one argument.
        "command-as-text",
        HEAD + "scenarios:\n  - id: a\n    command: 'python3 agent.py {task}'\n    input: hi\n",
        "command: expected a list, got 'python3 agent.py {task}' (text); write it as a list, "
        'one argument an item: ["python3", "agent.py", "{task}"]',
    ),
    (
        # Before: "write it as a list: [5]".
        "scenarios-a-number",
        HEAD + "scenarios: 5\n",
        "scenarios: expected a list, got 5 (a whole number); give each scenario as an item "
        "starting with '- id: '",
    ),
    (
        "negative-max-tool-calls",
        scenario_with("checks: {max_tool_calls: -1}\n"),
        "checks.max_tool_calls: must be at least 0",
    ),
    (
        "keep-order-text",
        scenario_with("keep_order: 'yes'\n"),
        "keep_order: expected true or false, got 'yes' (text)",
    ),
    (
        # A misspelt score was accepted and never gated (a review's score:score_rez).
        "unknown-score-suite-tolerance",
        HEAD
        + "tolerance:\n  gating: [success_rate, 'score:cites_sorce']\nscenarios:\n"
        + SCENARIO
        + "    checks:\n      code: ['pkg.checks:cites_source']\n",
        "tolerance: 'score:cites_sorce' is no score a check gives (the functions of checks: "
        "code: and the judge give scores); did you mean 'score:cites_source'?",
    ),
    (
        "unknown-score-scenario-tolerance",
        scenario_with("tolerance:\n  margins: {'score:judge': 0.2}\n"),
        "scenarios[0] (id 'a').tolerance: 'score:judge' is no score a check gives (the functions "
        "of checks: code: and the judge give scores); the scores there: none",
    ),
    (
        "non-string-key",
        one_scenario(**{"1": "x"}),
        "field names must be text, got 1 (a whole number)",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_suite_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message
    assert message.startswith(str(path))
    assert "pydantic" not in message and "Input should" not in message


def test_missing_file_names_nearby_suites(tmp_path: Path) -> None:
    (tmp_path / "smoke.yaml").write_text(one_scenario(), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^\S+demo\.yaml: no such file; suites there: smoke$"):
        load_suite(tmp_path / "demo.yaml")


def test_directory_is_not_a_suite(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").mkdir()
    with pytest.raises(ConfigError, match="is a directory"):
        load_suite(tmp_path / "demo.yaml")


def test_yaml_error_points_at_line(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(HEAD + "runs: 3\n  bad: indent\nscenarios:\n" + SCENARIO, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert str(info.value).startswith(f"{path}:4:")
