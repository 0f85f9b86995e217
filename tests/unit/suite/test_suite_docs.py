"""suites/README.md documents the suite format: every field, and an example that loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import REPO
from pydantic import BaseModel

from evalrunner import suite as spec
from evalrunner.suite._tolerance import Tolerance

MODELS: list[type[BaseModel]] = [
    spec.SuiteSpec,
    spec.ScenarioSpec,
    spec.RunSettings,
    spec.Checks,
    spec.RetryPolicy,
    spec.RateLimit,
    spec.SkipRules,
    spec.Mask,
    Tolerance,
    spec.ResolvedScenario,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_is_described(model: type[BaseModel]) -> None:
    assert model.__doc__
    assert [name for name, info in model.model_fields.items() if not info.description] == []


def test_readme_documents_every_field() -> None:
    readme = (REPO / "suites" / "README.md").read_text(encoding="utf-8")
    for model in MODELS[:-1]:
        for name in model.model_fields:
            assert f"`{name}`" in readme or f"{name}:" in readme, (
                f"{model.__name__}.{name} is not documented"
            )


def test_readme_example_is_a_valid_suite(tmp_path: Path) -> None:
    readme = (REPO / "suites" / "README.md").read_text(encoding="utf-8")
    example = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.yaml"
    path.write_text(example, encoding="utf-8")
    suite = spec.load_suite(path)
    assert [s.id for s in suite.scenarios] == [
        "direct_answer",
        "single_tool",
        "tool_chain",
        "fanout",
    ]


def test_readme_names_every_metric_a_tolerance_may_set() -> None:
    from evalrunner.suite._metrics import REGISTRY

    readme = (REPO / "suites" / "README.md").read_text(encoding="utf-8")
    section = readme.split("### `tolerance`", 1)[1].split("### Scenario", 1)[0]
    assert [m.name for m in REGISTRY if f"| `{m.name}` |" not in section] == []
