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
session's bookkeeping in :mod:`evalrunner.frozen._session`. Every pytest session of a
project with evalrunner installed loads this module, most of them never touching a
golden, so the frozen machinery (pydantic models, the suite loader, capture) is
imported only once a test asks for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalrunner._heap import collector_paused, unfreeze_imports
from evalrunner._litellm import prepare
from evalrunner._net import TELEMETRY_OFF
from evalrunner.frozen import _session

if TYPE_CHECKING:
    from evalrunner.frozen._items import GoldenChecker

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


# pydantic warns as it builds litellm's response types (the openai SDK's TypedDicts mark
# items ReadOnly), once per process, the first time a live call is recorded: a dozen
# warnings that bury the lines saying which goldens were written, about code not the user's.
LITELLM_TYPES_NOISE = "ignore:Items? .* using the `ReadOnly` qualifier:UserWarning"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("filterwarnings", LITELLM_TYPES_NOISE)
    # Before the test modules import their frameworks, which read these then: a report home
    # from a library's thread after one test is blocked in a later test's replay. A
    # variable the project set itself is kept.
    for name, value in TELEMETRY_OFF.items():
        os.environ.setdefault(name, value)
    _session.start(config)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Before pytest's own last collections, which must see every object (evalrunner/_heap.py).
    unfreeze_imports()
    _session.end(config)


@pytest.fixture
def golden_trajectory(request: pytest.FixtureRequest) -> GoldenChecker:
    """Compare an agent run with its golden trajectory: ``golden_trajectory(agent, *args)``."""
    from evalrunner.frozen._items import GoldenChecker

    return GoldenChecker(request)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """Collection imports the test modules, and with them the agents and litellm: the
    collector paused for that, as for a suite's agents (:func:`collector_paused`: every
    full pass during the import walked its million objects again)."""
    with collector_paused():
        yield


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "suites":
        from evalrunner.frozen._items import SuiteFile

        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = _session.state(config)
    state.test_dirs.update(item.path.parent for item in items)
    partial = "::" in " ".join(config.args)
    owners: dict[tuple[Path, str], list[str]] = {}
    for item, (directory, test) in _golden_dirs(items):
        state.selected_test(directory, test, partial=partial)
        # Case folded: on the default disks of macOS and Windows, test_a.json and
        # test_A.json are one file, and a checkout there holds only one of them.
        owners.setdefault((directory, test.casefold()), []).append(item.nodeid)
    # Each xdist worker collects every item, so each finds the same pairs.
    state.shared = {node: ids for ids in owners.values() if len(ids) > 1 for node in ids}


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        state = _session.state(items[0].config)
        state.partial_dirs.update(directory for _, (directory, _) in _golden_dirs(items))


def _golden_dirs(items: list[pytest.Item]) -> Iterator[tuple[pytest.Item, tuple[Path, str]]]:
    """Each item with a golden, and its golden's directory and name there."""
    # A suite scenario's item exists only once its module is imported; a test has
    # a golden only if it asks for the fixture.
    if "evalrunner.frozen._items" not in sys.modules and not any(
        "golden_trajectory" in getattr(item, "fixturenames", ()) for item in items
    ):
        return
    from evalrunner.frozen._items import golden_dir

    for item in items:
        found = golden_dir(item)
        if found is not None:
            yield item, found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed or report.skipped:
        state = _session.state(item.config)
        kept = {(d, name.split("-", 1)[0]) for _, (d, name) in _golden_dirs([item])}
        state.failed.update(kept)
        if report.skipped and kept:
            # A selected test skipped (a missing tool, a marker) ran as far as it will:
            # its goldens are kept, not judged. Uncounted, one skip hid every unused golden
            # of the session as if it had stopped early (no Node installed, issue 53).
            state.ran += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Under pytest-xdist a worker has no terminal: its controller prints what it found.
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:
        worker_output[_WORKER_KEY] = _session.state(session.config).worker_output()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's hook on the controller as each worker ends (absent without xdist)."""
    out = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
    if out is not None:
        _session.state(node.config).merge_worker(out)


_WORKER_KEY = "evalrunner_goldens"


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
        from evalrunner.frozen._golden import with_recordings

        terminalreporter.section("evalrunner: unused goldens")
        for path in unused:
            terminalreporter.write_line(with_recordings(path))
        terminalreporter.write_line(
            f"{len(unused)} golden(s) belong to no test that ran; delete them if their tests are gone."
        )
