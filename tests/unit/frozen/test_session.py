"""The plugin's session bookkeeping: which goldens belong to no test that ran."""

from __future__ import annotations

from pathlib import Path

from evalrunner.frozen._session import SessionState


def _goldens(directory: Path, *names: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        path = directory / name
        path.write_text("{}")
        paths.append(path)
    return paths


def test_unused_goldens_of_a_fully_run_module_are_all_listed(tmp_path: Path) -> None:
    used, gone, _script = _goldens(tmp_path / "m", "test_a.json", "test_b.json", "test_b.llm.json")
    state = SessionState()
    state.selected_test(tmp_path / "m", "test_a", partial=False)
    state.ran_test(used)
    assert state.unused() == [gone]


def test_a_partly_run_module_is_judged_on_its_selected_tests_only(tmp_path: Path) -> None:
    directory = tmp_path / "m"
    used, named, _other = _goldens(directory, "test_a.json", "test_a-old.json", "test_b.json")
    state = SessionState()
    state.selected_test(directory, "test_a", partial=True)
    state.ran_test(used)
    assert state.unused() == [named]  # `test_a-<name>` belongs to test_a


def test_a_session_that_stopped_early_judges_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "m"
    _goldens(directory, "test_a.json", "test_b.json")
    state = SessionState()
    state.selected_test(directory, "test_a", partial=False)
    state.selected_test(directory, "test_b", partial=False)
    state.ran_test(directory / "test_a.json")
    assert state.unused() == []
    state.selected_test(tmp_path / "missing", "test_c", partial=False)
    state.ran_test(tmp_path / "missing" / "test_c.json")
    state.ran_test(directory / "test_b.json")
    assert state.unused() == []  # a directory that does not exist holds nothing unused
