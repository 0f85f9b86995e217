"""Finding suites by name in a directory, with the available ones named when one is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_texts import one_scenario

from evalrunner.errors import ConfigError
from evalrunner.suite._loader import find_suites, load_suite_by_name


def test_find_and_load_by_name(tmp_path: Path) -> None:
    (tmp_path / "smoke.yaml").write_text(
        one_scenario().replace("name: demo", "name: smoke"), encoding="utf-8"
    )
    (tmp_path / "nightly.yml").write_text(
        one_scenario().replace("name: demo", "name: nightly"), encoding="utf-8"
    )
    (tmp_path / "README.md").write_text("# suites\n", encoding="utf-8")
    assert find_suites(tmp_path) == {
        "nightly": tmp_path / "nightly.yml",
        "smoke": tmp_path / "smoke.yaml",
    }
    assert load_suite_by_name("smoke", tmp_path).name == "smoke"
    assert load_suite_by_name(str(tmp_path / "nightly.yml")).name == "nightly"
    with pytest.raises(
        ConfigError,
        match=r"no suite named 'smok' in .*; did you mean 'smoke'\? available: nightly, smoke$",
    ):
        load_suite_by_name("smok", tmp_path)


def test_find_suites_missing_dir_and_duplicates(tmp_path: Path) -> None:
    assert find_suites(tmp_path / "nope") == {}
    with pytest.raises(ConfigError, match=r"nope/ does not exist; create .*nope/smoke\.yaml"):
        load_suite_by_name("smoke", tmp_path / "nope")
    (tmp_path / "a.yaml").write_text("", encoding="utf-8")
    (tmp_path / "a.yml").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="suite 'a' is defined twice"):
        find_suites(tmp_path)
