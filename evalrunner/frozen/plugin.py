"""The pytest plugin (registered through the ``pytest11`` entry point): its hooks and fixture.

- ``golden_trajectory`` fixture: run an agent under strict replay, capture,
  normalise and compare with ``__goldens__/<module>/<test>.json`` beside the test.
- Scenarios tagged ``frozen`` in ``suites/*.yaml`` are collected as test
  items, so plain ``pytest`` runs the PR subset.
- ``--golden-update`` rewrites goldens from the recorded responses;
  ``--golden-record`` records fresh responses from the live model, then
  rewrites the golden. Environment fallbacks: ``EVALRUNNER_GOLDEN_UPDATE=1``,
  ``EVALRUNNER_GOLDEN_RECORD=1``.
- At the end of the session: what was written, what passing replays noticed
  (requests that differed, recorded calls not used), and goldens no test used.

The items and the checker are in :mod:`evalrunner.frozen._items`, the
session's bookkeeping in :mod:`evalrunner.frozen._session`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalrunner._litellm import prepare
from evalrunner.frozen import _session
from evalrunner.frozen._golden import script_path_for
from evalrunner.frozen._items import GoldenChecker, SuiteFile, golden_dir

# pytest imports its plugins before any test module: litellm's settings are in
# place before an agent module (or a replay) first imports litellm.
prepare()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalrunner", "evalrunner golden trajectories")
    group.addoption(
        "--golden-update",
        action="store_true",
        default=False,
        help="Rewrite goldens from the recorded model responses (env: EVALRUNNER_GOLDEN_UPDATE=1).",
    )
    group.addoption(
        "--golden-record",
        action="store_true",
        default=False,
        help="Record fresh model responses from the live model, then rewrite goldens (env: EVALRUNNER_GOLDEN_RECORD=1).",
    )
    group.addoption(
        "--golden-strict",
        action="store_true",
        default=False,
        help="Fail when a request differs from the recorded one (default: count and show it).",
    )


def pytest_configure(config: pytest.Config) -> None:
    _session.start(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    _session.end(config)


@pytest.fixture
def golden_trajectory(request: pytest.FixtureRequest) -> GoldenChecker:
    """Compare an agent run with its golden trajectory: ``golden_trajectory(agent, *args)``."""
    return GoldenChecker(request)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "suites":
        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = _session.state(config)
    partial = "::" in " ".join(config.args)
    for item in items:
        found = golden_dir(item)
        if found is not None:
            state.selected_test(*found, partial=partial)


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        found = golden_dir(item)
        if found is not None:
            _session.state(item.config).partial_dirs.add(found[0])


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = _session.state(config)
    if state.reports:
        terminalreporter.section("evalrunner goldens")
        for line in state.reports:
            terminalreporter.write_line(line)
    if state.notes:
        terminalreporter.section("evalrunner: replay notes")
        for line in state.notes:
            terminalreporter.write_line(line)
    unused = state.unused()
    if unused:
        terminalreporter.section("evalrunner: unused goldens")
        for path in unused:
            terminalreporter.write_line(f"{path} (and {script_path_for(path).name} if present)")
        terminalreporter.write_line(
            f"{len(unused)} golden(s) belong to no test that ran; delete them if their tests are gone."
        )
