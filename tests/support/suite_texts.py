"""Suite YAML texts the suite tests build on: a minimal suite, and one that sets every field."""

from __future__ import annotations

import textwrap
from pathlib import Path

HEAD = "format_version: 1\nname: demo\n"
SCENARIO = "  - id: a\n    agent: pkg.mod:fn\n    input: do it\n"


def one_scenario(**extra: str) -> str:
    """A valid one-scenario suite with extra top-level YAML lines."""
    lines = "".join(f"{key}: {value}\n" for key, value in extra.items())
    return HEAD + lines + "scenarios:\n" + SCENARIO


def scenario_with(extra: str) -> str:
    """A valid suite whose only scenario has `extra` (already indented) appended."""
    return HEAD + "scenarios:\n" + SCENARIO + textwrap.indent(textwrap.dedent(extra), "    ")


FULL = """\
format_version: 1
name: demo
description: Demo suite.
models: [openai/gpt-4o-mini, anthropic/claude-3-5-haiku]
runs: 8
concurrency: 2
timeout_s: 60
retry: {max_attempts: 5, backoff_s: 1, max_backoff_s: 4, jitter: false}
temperature: 0.5
max_turns: 4
skip_rules: {unknown_tool: false, invalid_output_pattern: '\\S'}
volatile_keys: [request_id]
masks:
  - {pattern: 'req_[0-9a-f]+', replacement: '<req>'}
tolerance:
  margins: {success_rate: 0.1, tool_calls: 1}
  gating: [success_rate]
  fdr_q: 0.05
defaults: &base
  agent: pkg.mod:fn
scenarios:
  - id: direct_answer
    description: No tools.
    agent: pkg.mod:fn
    input: What is the capital of France?
    tags: [frozen]
    checks:
      answer_contains: [Paris]
      tools_not_used: [lookup_capital]
      max_tool_calls: 0
  - id: tool-chain
    agent: pkg.mod:chain
    input: Population of the capital of France?
    tools: [lookup_capital, city_population]
    runs: 20
    models: []
    timeout_s: 30
    max_turns: 8
    temperature: 0
    skip_rules: {empty_output: false, unknown_tool: true}
    volatile_keys: [trace_id, request_id]
    masks: [{pattern: '\\d+ ms'}]
    tolerance: {margins: {tool_calls: 0.5}, fdr_q: 0.1}
    keep_order: true
    checks:
      tools_in_order: [lookup_capital, city_population]
      all_tools_succeeded: true
      answer_matches: '\\d'
"""


def write_full(tmp_path: Path, text: str = FULL) -> Path:
    # 'defaults' is not a suite field; the valid suite drops it (it only checks anchors parse).
    path = tmp_path / "demo.yaml"
    path.write_text(text.replace("defaults: &base\n  agent: pkg.mod:fn\n", ""), encoding="utf-8")
    return path
