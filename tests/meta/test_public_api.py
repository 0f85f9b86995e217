"""The public API: each package exports exactly its `__all__`, and docs/api.md documents it."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import types

import pytest
from paths import REPO

PACKAGES = [
    "evalrunner",
    *sorted(
        f"evalrunner.{p.name}"
        for p in (REPO / "evalrunner").iterdir()
        if (p / "__init__.py").exists()
    ),
]


def _readme_api() -> dict[str, set[str]]:
    """Package -> the names the "Python API" table (docs/api.md) lists for it."""
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("# Python API\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) == 5 and cells[1].strip().startswith("`evalrunner"):
            rows[cells[1].strip(" `")] = set(re.findall(r"`([A-Za-z_]\w*)`", cells[3]))
    return rows


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    assert exported == sorted(set(exported), key=exported.index), "no duplicates"
    for member in exported:
        assert hasattr(package, member), f"{name}.__all__ names {member!r}, which is missing"
    public = {
        attr
        for attr, value in vars(package).items()
        if not attr.startswith("_")
        and not isinstance(value, types.ModuleType)
        and attr not in ("annotations",)
    }
    assert public - set(exported) == set(), f"{name} has public names missing from __all__"


def test_the_top_level_exports_what_users_reach_for() -> None:
    import evalrunner

    for member in (
        "capture",
        "normalize",
        "shape",
        "diff",
        "load_trajectory",
        "RunContext",
        "RunRecord",
        "Suite",
        "load_suite",
        "load_records",
        "run_live",
        "EvalrunnerError",
        "UserError",
    ):
        assert member in evalrunner.__all__


def test_version_comes_from_the_package_metadata() -> None:
    import evalrunner

    assert evalrunner.__version__ == importlib.metadata.version("evalrunner")


def test_every_package_is_covered() -> None:
    assert {"evalrunner.proxy", "evalrunner.suite", "evalrunner.night"} <= set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_the_readme_documents_exactly_what_a_package_exports(name: str) -> None:
    documented = _readme_api().get(name)
    assert documented is not None, f"docs/api.md's Python API table has no row for {name}"
    exported = set(importlib.import_module(name).__all__)
    if name == "evalrunner.core":  # its row says "the top level's capture names, plus ..."
        documented |= exported & set(importlib.import_module("evalrunner").__all__)
    assert exported - documented == set(), f"{name} exports names docs/api.md does not list"
    assert documented - exported == set(), f"docs/api.md lists names {name} does not export"
