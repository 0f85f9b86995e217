"""Writing baselines from results directories (each one accepted night)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from evalrunner._clock import iso_now
from evalrunner._jsonio import pydantic_message
from evalrunner._next import NextStep, Said, each
from evalrunner.baseline._file import (
    AcceptedNight,
    Baseline,
    baseline_path,
    load_baseline,
    night_key,
    save_baseline,
    typical_trajectory,
)
from evalrunner.baseline._traces import traces_of
from evalrunner.errors import BaselineMismatch
from evalrunner.live._outage import model_outages, outage_of
from evalrunner.live._results import Manifest, ResultsDir
from evalrunner.suite._record import CellKey, RunRecord, group_records, measured_rows
from evalrunner.suite._settings import ResolvedScenario, Suite

__all__ = ["build_baselines"]


@dataclass(frozen=True)
class _Found:
    """One night's runs of one cell, and where they came from."""

    night: AcceptedNight
    results: ResultsDir
    fingerprint: str | None
    """The scenario's fingerprint when that night ran (from its manifest)."""


def _check_night(
    source: Path,
    manifest: Manifest,
    records: Sequence[RunRecord],
    suite: Suite,
    seen: dict[tuple[str, str], Path],
) -> None:
    """Refuse a directory that is not one whole night, or a night given twice.

    A baseline counts its nights: the same night accepted twice would pass for two, and
    an unfinished one for a whole night, and either would make a baseline gate early.
    The same night is the same start and the same runs: two shards of one nightly job
    (two --out directories) may start in the same second, never with the same runs.
    """
    if manifest.suite != suite.name:
        raise BaselineMismatch(f"{source}: holds suite {manifest.suite!r}, not {suite.name!r}")
    if manifest.status != "finished":
        finish = ("--out", str(source), "--resume", "--no-compare", "--no-history")
        raise BaselineMismatch(
            Said(
                f"{source}: its night is not finished (manifest status {manifest.status!r}), "
                "and a baseline accepts whole nights: finish it with ",
                NextStep("run", suite.name, finish, locations=("suites_dir",)),
                ", or leave it out",
            )
        )
    _check_measured(source, records, suite.name)
    key = night_key(manifest.started_at, records)
    if key in seen:
        raise BaselineMismatch(
            f"{source}: the same night as {seen[key]} (started {manifest.started_at}, the same "
            "runs); a baseline counts each night once: give it once"
        )
    seen[key] = source


def _check_measured(source: Path, records: Sequence[RunRecord], suite: str) -> None:
    """Refuse a night the endpoints failed: it measured them, not the agent.

    A cell whose every run is infra_error would enter the baseline as a night of no
    runs, yet count towards the nights a baseline needs to gate (and replace a good
    baseline without ``--append``). The rest of such a night can be accepted on its own.
    """
    _refuse_an_outage(source, records)
    _refuse_a_model_outage(source, records, suite)
    _refuse_an_unmeasured_cell(source, records, suite)


_LEAVE_OUT = "a baseline accepts nights that measured the agent"


def _refuse_an_outage(source: Path, records: Sequence[RunRecord]) -> None:
    outage = outage_of(records)
    if outage is None:
        return
    if 2 * outage.no_calls > outage.infra:  # the agent's wiring, not the endpoints
        failed, again = (
            "most of them made no model call that reached the model (how the agent reaches "
            "its model: each run's reason says what capture saw)",
            "once its calls reach the model",
        )
    else:
        failed, again = "the endpoints failed, not the agent", "once they answer"
    raise BaselineMismatch(
        f"{source}: an outage night ({outage.infra} of {outage.total} runs ended in "
        f"infra_error, more than {outage.threshold:.0%}): {failed}; {_LEAVE_OUT}: leave it "
        f"out, and run the night again {again}"
    )


def _refuse_a_model_outage(source: Path, records: Sequence[RunRecord], suite: str) -> None:
    others = sorted({r.model for r in records})
    for model, out in model_outages(records).items():
        rest = each("--model", [m for m in others if m != model])
        raise BaselineMismatch(
            Said(
                f"{source}: the endpoint of {model} failed ({out.infra} of {out.total} runs "
                f"ended in infra_error): {_LEAVE_OUT}; accept the other models' runs with ",
                NextStep("baseline", suite, ("--from", str(source), *rest)),
            )
        )


def _refuse_an_unmeasured_cell(source: Path, records: Sequence[RunRecord], suite: str) -> None:
    scenarios = sorted({r.scenario for r in records})
    for cell, runs in sorted(group_records(records).items()):
        if any(r.measured for r in runs):
            continue
        rest = each("--scenario", [s for s in scenarios if s != cell.scenario])
        fix = (
            Said(
                "accept the other scenarios' runs with ",
                NextStep("baseline", suite, ("--from", str(source), *rest)),
                ", or leave the night out",
            )
            if rest
            else "leave it out"
        )
        raise BaselineMismatch(
            Said(
                f"{source}: {cell}: all {len(runs)} runs ended in infra_error, so nothing "
                f"measured the agent there; {_LEAVE_OUT}: ",
                fix,
            )
        )


def _nights_by_cell(
    suite: Suite, sources: Sequence[Path], models: Sequence[str], scenario_ids: Sequence[str]
) -> dict[CellKey, list[_Found]]:
    found: dict[CellKey, list[_Found]] = {}
    scenarios = {s.id: s for s in suite.scenarios}
    seen: dict[tuple[str, str], Path] = {}
    for source in sources:
        results = ResultsDir(source)
        manifest = results.read_manifest()
        every = _chosen(source, results.records(), models, scenario_ids)
        _check_night(source, manifest, every, suite, seen)
        for cell, records in group_records(every).items():
            scenario = scenarios.get(cell.scenario)
            night = AcceptedNight(
                started_at=manifest.started_at,
                # Its name, not its path: a committed file holds no one machine's paths.
                source=Path(source).resolve().name,
                records=sorted(records, key=lambda r: r.index),
                traces=None
                if scenario is None
                else traces_of(results, records, scenario.normalize_config()),
            )
            fingerprint = manifest.scenarios.get(cell.scenario)
            found.setdefault(cell, []).append(_Found(night, results, fingerprint))
    return found


def _chosen(
    source: Path, records: list[RunRecord], models: Sequence[str], scenario_ids: Sequence[str]
) -> list[RunRecord]:
    """The runs of the models and scenarios asked for (all, when none are named)."""
    for wanted, what, held in (
        (models, "model", {r.model for r in records}),
        (scenario_ids, "scenario", {r.scenario for r in records}),
    ):
        missing = sorted(set(wanted) - held)
        if missing:
            raise BaselineMismatch(
                f"{source}: holds no runs of {what} {', '.join(map(repr, missing))}; it has "
                f"{', '.join(sorted(held)) or 'none'}"
            )
    return [r for r in records if _wanted(r, models, scenario_ids)]


def _wanted(record: RunRecord, models: Sequence[str], scenario_ids: Sequence[str]) -> bool:
    return (not models or record.model in models) and (
        not scenario_ids or record.scenario in scenario_ids
    )


def _accepted(
    path: Path, cell: CellKey, fingerprint: str, nights: list[AcceptedNight], old: Baseline | None
) -> list[AcceptedNight]:
    """Tonight's nights, after those of ``old`` (the file they are appended to, if any);
    every accepted night is kept."""
    if old is not None:
        if old.fingerprint != fingerprint or old.model != cell.model:
            raise BaselineMismatch(
                f"{path}: recorded for another configuration or model; rebuild it without --append"
            )
        # Tonight's version of a night replaces the file's: the same directory accepted
        # again (after a resume) or a copy of it elsewhere (the same runs).
        dirs = {(n.started_at, n.source) for n in nights}
        runs = {night_key(n.started_at, n.records) for n in nights}
        nights = [
            n
            for n in old.nights
            if (n.started_at, n.source) not in dirs
            and night_key(n.started_at, n.records) not in runs
        ] + nights
    return sorted(nights, key=lambda n: n.started_at)


def _baseline(
    path: Path,
    scenario: ResolvedScenario,
    cell: CellKey,
    nights: list[AcceptedNight],
    latest: _Found,
) -> Baseline:
    from evalrunner._version import __version__
    from evalrunner.stats._summary import summarize

    records = [r for n in nights for r in n.records]
    summary = summarize(records).model_dump(mode="json", exclude_none=True)
    typical = typical_trajectory(latest.results, latest.night.records, scenario.normalize_config())
    try:
        return Baseline(
            suite=scenario.suite,
            scenario=cell.scenario,
            model=cell.model,
            fingerprint=scenario.fingerprint,
            created_at=iso_now(),
            evalrunner_version=__version__,
            nights=nights,
            summary=summary,
            typical=typical,
        )
    except ValidationError as exc:
        # The file's own checks see one cell's nights, which the checks of whole
        # directories cannot: two directories that differ may share a cell's night (the
        # same start, the same runs).
        said = pydantic_message(exc.errors()[0])
        raise BaselineMismatch(f"{path}: its nights would not be a baseline: {said}") from None


def _refuse_flagged(
    suite: str,
    scenario: ResolvedScenario,
    cell: CellKey,
    path: Path,
    old: Baseline,
    found: Sequence[_Found],
) -> None:
    """Refuse to append nights that fail a gating metric against the baseline they would
    join: a baseline of both behaviours flags neither, and the night said so, but
    ``--append`` took a night that had failed 0/9 against it, and the next night against
    the mixed baseline passed (a review)."""
    from evalrunner.baseline._compare import CellPair, compare_pairs

    records = [r for each in found for r in each.night.records]
    pair = CellPair(
        cell,
        [n.records for n in old.nights],
        records,
        scenario.tolerance,
        old.anchor,
        None,
        measured_rows(records),
    )
    failed = sorted({r.metric for r in compare_pairs([pair]).regressions})
    if not failed:
        return
    sources = each("--from", [str(night.results.shown) for night in found])
    scope = ("--scenario", cell.scenario, "--model", cell.model)
    raise BaselineMismatch(
        Said(
            f"{path}: the nights given fail {', '.join(failed)} against it ({cell}); appended, "
            "the baseline would hold both behaviours and flag neither. If the new behaviour is "
            "intended, make it the baseline: ",
            NextStep("baseline", suite, (*sources, *scope)),
            " (without --append); to append them anyway, add --accept-flagged",
        )
    )


def build_baselines(
    suite: Suite,
    sources: Sequence[Path],
    root: Path,
    *,
    append: bool = False,
    models: Sequence[str] = (),
    scenarios: Sequence[str] = (),
    accept_flagged: bool = False,
) -> dict[Path, bool]:
    """Write baselines from results directories (each one accepted night); return each file
    they cover and whether it was written (an append that left a file's nights as they were
    does not rewrite it).

    One file per scenario x model the nights ran (only ``models`` and ``scenarios``,
    when given); the suite's other baseline files are left as they are. Without
    ``append`` each file written holds only these nights; with it they are accepted
    into the existing file (all of its nights are kept: baselines are anchored, never
    rolled), and a file of another configuration is refused, as are nights that fail
    a gating metric against the file they would join (``accept_flagged`` takes them
    anyway). A night an endpoint failed is refused (the message names the models or
    scenarios to accept instead). Every file is checked before any is written: a
    refusal leaves them all as they were.
    """
    by_id = {s.id: s for s in suite.scenarios}
    pending: list[tuple[Path, Baseline, Baseline | None]] = []
    for cell, found in sorted(_nights_by_cell(suite, sources, models, scenarios).items()):
        scenario = by_id.get(cell.scenario)
        if scenario is None:
            continue
        _refuse_another_configuration(suite, scenario, found)
        path = baseline_path(root, suite.name, cell.scenario, cell.model)
        old = load_baseline(path) if append and path.exists() else None
        nights = _accepted(path, cell, scenario.fingerprint, [each.night for each in found], old)
        if old is not None and not accept_flagged:
            _refuse_flagged(suite.name, scenario, cell, path, old, found)
        pending.append((path, _baseline(path, scenario, cell, nights, found[-1]), old))
    return {path: _save_if_new(path, baseline, old) for path, baseline, old in pending}


def _refuse_another_configuration(
    suite: Suite, scenario: ResolvedScenario, found: Sequence[_Found]
) -> None:
    """Every night pooled, not only the latest, must have run the scenario as it is now."""
    for night in found:
        if night.fingerprint is not None and night.fingerprint != scenario.fingerprint:
            raise BaselineMismatch(
                f"{night.results.shown}: scenario {scenario.id!r} ran with another configuration than "
                f"{suite.path or suite.name} now has; run it again before making it the baseline"
            )


def _save_if_new(path: Path, new: Baseline, old: Baseline | None) -> bool:
    """Write ``new`` unless it is ``old`` again (the same nights accepted again would only
    move ``created_at``, a change in review for nothing); whether it was written."""
    if old is not None and old.model_dump(exclude={"created_at"}) == new.model_dump(
        exclude={"created_at"}
    ):
        return False
    save_baseline(path, new)
    return True
