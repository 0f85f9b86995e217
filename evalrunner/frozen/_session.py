"""What the pytest plugin keeps for one session: goldens used and selected, reports, endpoints.

It answers one question at the end of the session: which goldens belong to no
test that ran (their tests are gone, or were renamed)? Only goldens in
directories of selected tests are judged, and only those of the selected
tests when a module ran in part.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalrunner.frozen import GOLDEN_DIR, SUITE_GOLDENS

if TYPE_CHECKING:
    from evalrunner.endpoints._endpoints import Endpoint, EndpointPool


@dataclass
class SessionState:
    """One pytest session's golden bookkeeping."""

    used: set[Path] = field(default_factory=set)
    reports: list[str] = field(default_factory=list)  # what --golden-update/-record wrote
    notes: list[str] = field(default_factory=list)  # passing checks' replay notes, by test
    golden_dirs: dict[Path, set[str]] = field(default_factory=dict)  # dir -> selected test names
    partial_dirs: set[Path] = field(default_factory=set)  # dirs whose module ran only in part
    failed: set[tuple[Path, str]] = field(default_factory=set)  # (dir, test): failed or skipped
    test_dirs: set[Path] = field(default_factory=set)  # directories of the collected tests
    shared: dict[str, list[str]] = field(default_factory=dict)  # node id -> the tests whose
    # default golden is the same file as its own (the file name holds no class and is
    # file-name-safe), each of them included
    selected: int = 0
    ran: int = 0
    pool: EndpointPool | None = None  # started on the first --golden-record of a scenario

    def selected_test(self, directory: Path, test: str, *, partial: bool) -> None:
        """A test with a golden in ``directory`` was selected to run."""
        self.selected += 1
        self.golden_dirs.setdefault(directory, set()).add(test)
        if partial:
            self.partial_dirs.add(directory)

    def ran_test(self, golden: Path) -> None:
        self.used.add(golden)
        self.ran += 1

    def worker_output(self) -> dict[str, Any]:
        """What a pytest-xdist worker hands its controller, which alone prints the summary."""
        return {
            "used": sorted(map(str, self.used)),
            "reports": self.reports,
            "notes": self.notes,
            "golden_dirs": {str(d): sorted(tests) for d, tests in self.golden_dirs.items()},
            "partial_dirs": sorted(map(str, self.partial_dirs)),
            "failed": sorted([str(d), test] for d, test in self.failed),
            "test_dirs": sorted(map(str, self.test_dirs)),
            "selected": self.selected,
            "ran": self.ran,
        }

    def merge_worker(self, out: Mapping[str, Any]) -> None:
        """Add one xdist worker's :meth:`worker_output`. Every worker collects (and selects)
        every test and runs its share, so the tests run add up and the selected do not."""
        self.used.update(map(Path, out["used"]))
        self.reports += out["reports"]
        self.notes += out["notes"]
        for directory, tests in out["golden_dirs"].items():
            self.golden_dirs.setdefault(Path(directory), set()).update(tests)
        self.partial_dirs.update(map(Path, out["partial_dirs"]))
        self.failed.update((Path(d), test) for d, test in out["failed"])
        self.test_dirs.update(map(Path, out["test_dirs"]))
        self.selected = max(self.selected, out["selected"])
        self.ran += out["ran"]

    def endpoint(self, model: str) -> Endpoint:
        """The live endpoint for ``model`` (starting the embedded model if it is ``local``)."""
        if self.pool is None:
            from evalrunner.endpoints._endpoints import EndpointPool

            self.pool = EndpointPool()
        return self.pool.resolve(model)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def unused(self) -> list[Path]:
        """Goldens no test used: all unused ones of fully-run modules, else those of selected tests."""
        unused: list[Path] = []
        if self.ran < self.selected:
            return unused  # stopped early (-x, Ctrl-C, a crash): nothing can be judged
        gone = self._owners_gone()
        if not (self.golden_dirs or gone):
            return unused
        from evalrunner.frozen._golden import is_script  # pydantic: only where goldens are

        for directory, selected in self.golden_dirs.items():
            if directory.is_dir():
                unused += self._unused_in(directory, selected)
        for folder in gone:
            unused += [p for p in sorted(folder.glob("*.json")) if not is_script(p)]
        return unused

    def _owners_gone(self) -> list[Path]:
        """A deleted module's goldens, found from any test collected beside where it was
        (its directory may hold no other test with goldens); a deleted suite's likewise."""
        roots = {d.parent for d in self.golden_dirs} | {d / GOLDEN_DIR for d in self.test_dirs}
        suite_roots = {d.parent for d in self.golden_dirs if d.parent.name == SUITE_GOLDENS} | {
            d / SUITE_GOLDENS for d in self.test_dirs if d.name == "suites"
        }
        modules = _owners_gone({r for r in roots if r.name == GOLDEN_DIR}, (".py",))
        return modules + _owners_gone(suite_roots, (".yaml", ".yml"))

    def _unused_in(self, directory: Path, selected: set[str]) -> list[Path]:
        from evalrunner.frozen._golden import is_script

        full = directory not in self.partial_dirs
        unused = []
        for path in sorted(directory.glob("*.json")):
            if is_script(path) or path in self.used:
                continue
            test = path.stem.split("-", 1)[0]  # test_x-second.json: test_x's name="second"
            # A test that failed may not have reached its later goldens (name=...).
            if (directory, test) in self.failed:
                continue
            if full or path.stem in selected or test in selected:
                unused.append(path)
        return unused


def _owners_gone(roots: set[Path], suffixes: tuple[str, ...]) -> list[Path]:
    """Golden folders under ``roots`` whose owner is no longer beside them: the test module
    (``__goldens__/<module>/``, ``.py``) or the suite (``goldens/<suite>/``, ``.yaml``) was
    deleted or renamed, so no run can use them."""
    return [
        d
        for root in sorted(roots)
        if root.is_dir()
        for d in sorted(root.iterdir())
        if d.is_dir() and not any((root.parent / f"{d.name}{ext}").exists() for ext in suffixes)
    ]


_STATE = pytest.StashKey[SessionState]()


def flag(config: pytest.Config, option: str, env: str) -> bool:
    """A pytest option given, or its environment variable set to 1/true/yes."""
    return bool(config.getoption(option)) or os.environ.get(env, "").lower() in ("1", "true", "yes")


def start(config: pytest.Config) -> None:
    record = flag(config, "--golden-record", "EVALRUNNER_GOLDEN_RECORD")
    if record and flag(config, "--golden-update", "EVALRUNNER_GOLDEN_UPDATE"):
        # Together, one of them was a slip: record would call the live model (and bill it)
        # where update only rewrote goldens from the recordings, or the other way round.
        raise pytest.UsageError(
            "--golden-record and --golden-update (or their EVALRUNNER_GOLDEN_* variables) "
            "given together: --golden-record calls the live model and records its answers "
            "afresh, --golden-update rewrites goldens from the recorded answers; give one"
        )
    config.stash[_STATE] = SessionState()


def state(config: pytest.Config) -> SessionState:
    return config.stash[_STATE]


def end(config: pytest.Config) -> None:
    session = config.stash.get(_STATE, None)
    if session is not None:
        session.close()
