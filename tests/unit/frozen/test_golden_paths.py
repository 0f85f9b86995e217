"""Where goldens and their recordings live: beside the test module, beside the suite."""

from __future__ import annotations

from pathlib import Path

from evalrunner.frozen import GOLDEN_DIR
from evalrunner.frozen._golden import (
    golden_path_for,
    golden_path_for_test,
    is_script,
    module_golden_dir,
    script_path_for,
)


def test_a_tests_golden_sits_beside_its_module() -> None:
    module = Path("/repo/tests/test_agent.py")
    assert GOLDEN_DIR == "__goldens__"
    assert module_golden_dir(module) == Path("/repo/tests/__goldens__/test_agent")
    assert golden_path_for_test(module, "test_refund-small") == Path(
        "/repo/tests/__goldens__/test_agent/test_refund-small.json"
    )


def test_a_scenarios_golden_sits_beside_its_suite() -> None:
    assert golden_path_for(Path("/repo/suites/example.yaml"), "example", "fanout") == Path(
        "/repo/suites/goldens/example/fanout.json"
    )


def test_the_recording_sits_next_to_its_golden() -> None:
    golden = Path("/g/test_x.json")
    assert script_path_for(golden) == Path("/g/test_x.llm.json")
    assert is_script(script_path_for(golden)) and not is_script(golden)
