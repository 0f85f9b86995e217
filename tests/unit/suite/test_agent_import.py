"""Importing a scenario's agent: every failure is one line naming the file, line and scenario."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_texts import HEAD, SCENARIO

from evalrunner.errors import ConfigError
from evalrunner.suite._loader import load_suite
from evalrunner.suite._settings import ResolvedScenario


@pytest.fixture
def agent_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = tmp_path / "agentpkg_for_suite_tests"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "agents.py").write_text(
        "def answer(task, ctx):\n    return 'ok'\n\nNOT_CALLABLE = 3\n\n"
        "def one_arg(task):\n    return 'ok'\n\ndef by_name(*, task, ctx):\n    return 'ok'\n",
        encoding="utf-8",
    )
    # An agent's module may import litellm or a framework: what the collector was doing then.
    (package / "heavy.py").write_text(
        "import gc\nCOLLECTOR_ON = gc.isenabled()\n\ndef answer(task, ctx):\n    return 'ok'\n",
        encoding="utf-8",
    )
    # An agent's module that imports litellm: litellm reads this when it is imported.
    (package / "litellm_user.py").write_text(
        "import os\nCOST_MAP = os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP')\n\n"
        "def answer(task, ctx):\n    return 'ok'\n",
        encoding="utf-8",
    )
    (package / "broken.py").write_text("raise RuntimeError('no API key\\nset')\n", encoding="utf-8")
    (package / "needs_dep.py").write_text(
        "import surely_missing_dependency_xyz\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return package.name


def load_with_agent(tmp_path: Path, agent: str) -> ResolvedScenario:
    path = tmp_path / "demo.yaml"
    path.write_text(
        HEAD + "scenarios:\n" + SCENARIO + f"  - id: chain\n    input: x\n    agent: {agent}\n",
        encoding="utf-8",
    )
    return load_suite(path).scenarios[1]


def test_an_agent_module_is_imported_with_the_collector_paused(
    tmp_path: Path, agent_module: str
) -> None:
    import gc
    import importlib

    assert gc.isenabled()
    load_with_agent(tmp_path, f"{agent_module}.heavy:answer").load_agent()
    assert importlib.import_module(f"{agent_module}.heavy").COLLECTOR_ON is False
    assert gc.isenabled()  # and on again after it


def test_an_agent_module_that_imports_litellm_finds_its_cost_map_kept_local(
    tmp_path: Path, agent_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: from Python (run_live, not the CLI) an agent module that imported litellm at
    # its top made litellm fetch its cost map over the network (a review saw the retries).
    import importlib

    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    load_with_agent(tmp_path, f"{agent_module}.litellm_user:answer").load_agent()
    assert importlib.import_module(f"{agent_module}.litellm_user").COST_MAP == "True"


def test_load_agent(tmp_path: Path, agent_module: str) -> None:
    scenario = load_with_agent(tmp_path, f"{agent_module}.agents:answer")
    assert scenario.load_agent()("t", None) == "ok"
    assert load_suite(tmp_path / "demo.yaml").scenarios[1].load_agent()("t", None) == "ok"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "nosuchpkg_xyz.agents:answer",
            "cannot import 'nosuchpkg_xyz.agents:answer': no module named 'nosuchpkg_xyz'; install it",
        ),
        ("{pkg}.nomodule:answer", "no module named '{pkg}.nomodule'"),
        ("{pkg}.agents:answr", "'{pkg}.agents' has no attribute 'answr'; did you mean 'answer'?"),
        ("{pkg}.agents:answer.sub", "'{pkg}.agents.answer' has no attribute 'sub'"),
        ("{pkg}.agents:NOT_CALLABLE", "'{pkg}.agents:NOT_CALLABLE' is a int, not a callable"),
        # Each used to pass `validate`, then crash every run of the night (a review found it).
        (
            "{pkg}.agents:one_arg",
            "'{pkg}.agents:one_arg' is one_arg(task), which cannot be called as one_arg(task, ctx) "
            "(too many positional arguments); give it those parameters",
        ),
        (
            "{pkg}.agents:by_name",
            "by_name(*, task, ctx), which cannot be called as by_name(task, ctx)",
        ),
        ("{pkg}.broken:fn", "importing '{pkg}.broken' raised RuntimeError: no API key set"),
        (
            "{pkg}.needs_dep:fn",
            "module '{pkg}.needs_dep' needs 'surely_missing_dependency_xyz', which is not installed",
        ),
    ],
    ids=[
        "no-package",
        "no-module",
        "no-attribute",
        "no-nested-attribute",
        "not-callable",
        "one-parameter",
        "keyword-only",
        "import-raises",
        "missing-dependency",
    ],
)
def test_load_agent_errors(tmp_path: Path, agent_module: str, target: str, expected: str) -> None:
    scenario = load_with_agent(tmp_path, target.format(pkg=agent_module))
    with pytest.raises(ConfigError) as info:
        scenario.load_agent()
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'demo.yaml'}:9: scenarios[1] (id 'chain').agent: ")
    assert expected.format(pkg=agent_module) in message
    assert "\n" not in message


def test_load_agent_without_a_file() -> None:
    scenario = ResolvedScenario(suite="demo", id="x", agent="nosuchpkg_xyz:fn", input="t")
    with pytest.raises(ConfigError, match=r"^scenario 'x'\.agent: cannot import"):
        scenario.load_agent()
