"""The public API: what each package exports is exactly its `__all__`, and it imports."""

from __future__ import annotations

import importlib
import importlib.metadata
import types

import pytest

PACKAGES = [
    "evalrunner",
    "evalrunner.core",
    "evalrunner.frozen",
    "evalrunner.live",
    "evalrunner.stats",
    "evalrunner.baseline",
    "evalrunner.report",
    "evalrunner.cli",
]


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
