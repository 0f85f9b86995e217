"""Baseline files: committed raw per-run records of accepted nights.

One file per scenario and model, ``baselines/<suite>/<scenario>--<model>.json``:
reviewable JSON holding every accepted run (so any statistic can be recomputed
or swapped later), grouped by the night it came from, plus a short summary.

A baseline is anchored: it holds the nights someone accepted with
``evalrunner baseline`` and nothing else, never rolled forward by a nightly run
(a rolling window would absorb a slow regression into its own reference).
Accepting nights changes its :attr:`Baseline.anchor`, which resets the evidence
accumulated against it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalrunner import _clock as clock
from evalrunner._jsonio import canonical, load_model, write_json
from evalrunner._next import NextStep, Said
from evalrunner.baseline._traces import RunTrace, Traces, first_moves
from evalrunner.core._actions import first_action
from evalrunner.errors import EvalrunnerError, FileFormatError
from evalrunner.live._results import ResultsDir
from evalrunner.suite._record import CellKey, Outcome, RunRecord, model_slug, rows_of

if TYPE_CHECKING:
    from evalrunner.core._normalize import NormalizeConfig

__all__ = [
    "BASELINE_FORMAT_VERSION",
    "DEFAULT_WINDOW",
    "AcceptedNight",
    "Baseline",
    "baseline_path",
    "load_baseline",
    "load_baselines",
    "save_baseline",
    "typical_run",
    "typical_trajectory",
]

BASELINE_FORMAT_VERSION = 7
"""2 added each night's ``traces``, 3 each traced run's ``first_response``; older files
still load (without them). 4: a dataset scenario's pass^k and pass@k in the summary are
per row, averaged (3 pooled the rows). 5: runs may hold prompt-cache tokens, a traced
response its thinking blocks (issue 53). 6: runs may hold their tool errors, 7 their tool
latency (issue 56)."""
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7)
_SUMMARY_CHECKED = 3
"""The first format whose summary is checked against its runs (older releases summed up
otherwise)."""
_PER_ROW_SUMMARY = 4
"""The first format whose summary takes a dataset scenario's pass^k and pass@k per row."""
DEFAULT_WINDOW = 5


class AcceptedNight(BaseModel):
    """The runs one accepted night contributed."""

    model_config = ConfigDict(extra="forbid")

    started_at: str = Field(description="When that night's run started (ISO 8601 UTC).")
    source: str = Field(
        description="Name of the results directory the runs came from (older files: its path)."
    )
    records: list[RunRecord] = Field(description="Raw per-run records.")
    traces: Traces | None = Field(
        default=None,
        description=f"The runs' actions and first requests, for '{NextStep('explain')}' "
        "(absent in files written before format 2).",
    )


class Baseline(BaseModel):
    """A baseline for one scenario x model."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=BASELINE_FORMAT_VERSION, description="Baseline file format version."
    )
    suite: str = Field(description="Suite name.")
    scenario: str = Field(description="Scenario id.")
    model: str = Field(description="Model label the runs used ('local' = embedded model).")
    fingerprint: str = Field(
        description="Scenario configuration fingerprint; a different one is not compared."
    )
    created_at: str = Field(description="When this file was last written (ISO 8601 UTC).")
    evalrunner_version: str = Field(description="evalrunner version that wrote it.")
    window: int = Field(
        default=DEFAULT_WINDOW,
        ge=1,
        description="Unused; kept so files from before baselines were anchored still load.",
    )
    nights: list[AcceptedNight] = Field(description="Pooled nights, oldest first.")
    summary: dict[str, Any] = Field(
        default_factory=dict, description="Rates with intervals, medians, tool sequences."
    )
    typical: dict[str, Any] | None = Field(
        default=None, description="Normalised trajectory of a typical run."
    )

    @field_validator("nights")
    @classmethod
    def _some_night(cls, value: list[AcceptedNight]) -> list[AcceptedNight]:
        # A baseline of no nights compares every metric with nothing, and says little.
        if not value:
            raise ValueError("empty: a baseline holds the nights it accepted")
        # The same night twice (a merge of two branches that each appended, resolved by
        # keeping both) would pass for two nights, as `baseline --from` refuses it to.
        seen: dict[tuple[str, str], int] = {}
        for i, night in enumerate(value):
            key = night_key(night.started_at, night.records)
            if key in seen:
                j = seen[key]
                raise ValueError(
                    f"night {i} (started {night.started_at}, from {night.source}) is an earlier "
                    f"night again (night {j}, from {value[j].source}), the same runs; a baseline "
                    "counts each night once: remove one"
                )
            seen[key] = i
            _runs_of_its_own(i, night)
        return value

    @model_validator(mode="after")
    def _summary_of_its_runs(self) -> Baseline:
        # Reviewers read the summary in a baseline's diff, and nothing compares with it:
        # an edit of it (or a merge that took it from one side and the runs from the
        # other) would show one thing and test another. Checked for the entries both have,
        # summed up as the file's format did.
        if self.summary and self.format_version >= _SUMMARY_CHECKED:
            from evalrunner.stats import summarize  # scipy: only once a summary is there to check

            runs = summarize(self.records).model_dump(mode="json", exclude_none=True)
            if self.format_version < _PER_ROW_SUMMARY and rows_of(self.records):
                # Format 3 pooled a dataset scenario's rows for these two: not comparable.
                runs = {k: v for k, v in runs.items() if k not in ("pass_hat_k", "pass_at_k")}
            found = _first_difference(self.summary, runs, "summary")
            if found is not None:
                where, written, worked_out = found
                # The fix follows, as for every problem of the file (load_baseline's).
                raise ValueError(
                    f"{where} is {written!r}, but its runs give {worked_out!r}: the summary is "
                    "worked out from the runs, and an edit or a merge changed one and not the "
                    "other"
                )
        return self

    @property
    def records(self) -> list[RunRecord]:
        return [r for night in self.nights for r in night.records]

    @property
    def traced(self) -> list[Traces]:
        """The traces of the accepted nights that kept them, oldest first."""
        return [n.traces for n in self.nights if n.traces is not None]

    @property
    def sent(self) -> dict[str, Any] | None:
        """The first request its runs sent most, in full, from the newest night that kept one."""
        return next((t.sent for t in reversed(self.traced) if t.sent is not None), None)

    def first_actions(self) -> list[str]:
        """What each traced run that sent :attr:`sent`'s request did first: the tool it
        called, or answering. For a dataset scenario, the runs of that request's row (other
        rows ask other things); otherwise every traced run."""
        return [first_action(r.as_actions()) for r in self._sent_runs()]

    def first_moves(self) -> list[str] | None:
        """:meth:`first_actions` as whole first responses (``lookup + lookup`` for two calls
        at once); None when a run's traces predate keeping them (format 3)."""
        return first_moves(self._sent_runs())

    def _sent_runs(self) -> list[RunTrace]:
        newest = next((t for t in reversed(self.traced) if t.sent is not None), None)
        row = newest.sent_row if newest is not None else None
        rows = {r.run_id: r.row for r in self.records}
        return [r for t in self.traced for r in t.runs if row is None or rows.get(r.run_id) == row]

    @property
    def anchor(self) -> str:
        """Names exactly the accepted nights (and configuration): accumulated evidence is
        measured against it and resets when nights are accepted into or out of it."""
        accepted = sorted(f"{n.started_at}|{n.source}" for n in self.nights)
        text = "\n".join([self.fingerprint, self.model, *accepted])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _first_difference(written: Any, worked_out: Any, where: str) -> tuple[str, Any, Any] | None:
    """The first entry present in both whose values differ: (its path, written, worked out)."""
    if isinstance(written, dict) and isinstance(worked_out, dict):
        for key in written.keys() & worked_out.keys():
            found = _first_difference(written[key], worked_out[key], f"{where}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(written, float | int) and isinstance(worked_out, float | int):
        same = math.isclose(written, worked_out, rel_tol=1e-9, abs_tol=1e-12)
    else:
        same = written == worked_out
    return None if same else (where, written, worked_out)


def night_key(started_at: str, records: Sequence[RunRecord]) -> tuple[str, str]:
    """What makes a night the same night: its start and its runs. Two shards of one nightly
    job (two --out directories) may start in the same second, never with the same runs."""
    runs = "\n".join(sorted(canonical(r.model_dump(mode="json")) for r in records))
    return started_at, hashlib.sha256(runs.encode()).hexdigest()


_SKEW = _dt.timedelta(minutes=10)
"""How far before its night's start a run may seem to start (clocks of other machines)."""


def _runs_of_its_own(i: int, night: AcceptedNight) -> None:
    """Refuse a night holding a run that started well before the night did: runs of two
    nights mixed, as resolving a merge of two appended nights hunk by hunk does."""
    try:
        start = clock.parse(night.started_at)
        runs = [(r, clock.parse(r.started_at)) for r in night.records if r.started_at]
    except ValueError:
        return  # a time that does not parse is not this check's to judge
    early = next((r for r, t in runs if t < start - _SKEW), None)
    if early is not None:
        raise ValueError(
            f"night {i} (started {night.started_at}) holds run {early.run_id!r}, started "
            f"{early.started_at}, before the night: it mixes the runs of two nights (a merge "
            "resolved line by line?); keep one side of the merge whole"
        )


def baseline_path(root: Path, suite: str, scenario: str, model: str) -> Path:
    """Where a scenario x model's baseline lives: ``<root>/<suite>/<scenario>--<model>.json``."""
    return Path(root) / suite / f"{scenario}--{model_slug(model)}.json"


def load_baseline(path: Path) -> Baseline:
    """Read one baseline file; a missing or malformed one is a one-line FileFormatError."""
    return load_model(
        path,
        Baseline,
        what="baseline",
        version=READABLE_VERSIONS,
        fix=f"rebuild it with '{NextStep('baseline')}'",
    )


def load_baselines(root: Path, suite: str, cells: Iterable[CellKey]) -> dict[CellKey, Baseline]:
    """The baseline of each cell that has a file under ``root``; a broken file raises."""
    found = {}
    for cell in cells:
        path = baseline_path(root, suite, cell.scenario, cell.model)
        if path.exists():
            found[cell] = load_baseline(path)
            held = (found[cell].suite, found[cell].scenario)
            if held != (suite, cell.scenario):
                # A file copied from another suite's baselines would be compared as this
                # one's, its fingerprint matching whenever the scenario is the same.
                raise FileFormatError(
                    Said(
                        f"{path}: holds the baseline of suite {held[0]!r}, scenario "
                        f"{held[1]!r}, not of {suite!r}, {cell.scenario!r}; build this one with ",
                        NextStep("baseline", suite, ("--from", "NIGHT")),
                        ' (after renaming a suite or scenario, set the file\'s "suite" and '
                        '"scenario" fields to the new names)',
                    )
                )
    return found


def baseline_models(root: Path, suite: str) -> list[str]:
    """The models the suite's baselines under ``root`` are for (a damaged file is left
    out: it is refused, naming itself, when it is used)."""
    found = set()
    for path in sorted((Path(root) / suite).glob("*.json")):
        try:
            found.add(load_baseline(path).model)
        except EvalrunnerError:
            continue
    return sorted(found)


def save_baseline(path: Path, baseline: Baseline) -> None:
    """Write one baseline file atomically (canonical JSON: a reviewable diff)."""
    write_json(path, baseline.model_dump(mode="json", exclude_none=True))


def typical_run(records: Sequence[RunRecord]) -> RunRecord | None:
    """A run of the modal tool sequence and step count, preferring passed runs."""
    valid = [r for r in records if r.measured]
    if not valid:
        return None
    mode = Counter((tuple(r.tools), r.step_count) for r in valid).most_common(1)[0][0]
    same = [r for r in valid if (tuple(r.tools), r.step_count) == mode]
    return sorted(same, key=lambda r: (r.outcome != Outcome.PASSED, r.index))[0]


def typical_trajectory(
    results: ResultsDir, records: Sequence[RunRecord], config: NormalizeConfig | None = None
) -> dict[str, Any] | None:
    """The normalised trajectory of :func:`typical_run`, read from its run file."""
    from evalrunner.core._normalize import DEFAULT_CONFIG, normalize

    run = typical_run(records)
    if run is None:
        return None
    path = results.run_path(run.run_id)
    if not path.exists():
        return None
    return normalize(results.read_run(path)[1], config or DEFAULT_CONFIG)
