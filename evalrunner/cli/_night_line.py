"""The last line of a night: what it found, and the command to run next."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalrunner._next import NextStep, Placeholder, Said, each
from evalrunner.baseline._compare import Comparison
from evalrunner.cli import _options
from evalrunner.cli._tables import (
    beside_flags,
    dollars,
    flagged_names,
    undecided,
)
from evalrunner.live._driver import RunReport, check_named
from evalrunner.live._outage import what_to_check
from evalrunner.night import LiveResult
from evalrunner.suite import OUTCOMES, Outcome
from evalrunner.suite._cost import spent
from evalrunner.suite._record import RunRecord

if TYPE_CHECKING:
    from evalrunner.stats._metric_result import MetricResult


def night_line(result: LiveResult, suite: str, where: str = "") -> str:
    """What the night found, in one line, and the command to run next (``where``: the
    locations given, as words after the suite)."""
    report = result.report
    head = _counted(report.records)
    stopped = _stopped(result, head, suite + where)
    if stopped is not None:
        return stopped
    head += _models_down(list(result.model_outages)) + _checks_broken(report)
    if report.records and all(r.outcome == Outcome.CRASHED for r in report.records):
        # Not offered as a baseline: a night of crashes measured the agent's bug, not it.
        return (
            f"{head}; every run crashed (the CRASHED sections above say where). Next: fix the "
            "agent and run the night again."
        )
    comparison = result.comparison
    if comparison is None:
        return f"{head}."
    if not comparison.results:
        return f"{head}; {_nothing_compared(comparison, suite, report.out)}"
    left = _not_compared(comparison)
    named = suite + where
    if comparison.regressions:
        return f"{head}; {_flagged(comparison, report)}{left}. {_next_when_flagged(comparison, report, suite)}"
    if not any(r.gating for r in comparison.results):
        young, grow = _nothing_can_fail_yet(comparison, suite, report.out)
        return f"{head}; {young}{left}{undecided(comparison.results, named)}. {grow}"
    return (
        f"{head}; nothing flagged against the baselines{left}"
        f"{undecided(comparison.results, named)}."
    )


def _nothing_can_fail_yet(comparison: Comparison, suite: str, out: Path) -> tuple[str, str]:
    """Every baseline compared tonight is too young to gate, said as what it means ("nothing
    flagged" over a night that could flag nothing reads as a pass), and what grows them."""
    most = max((len(b.nights) for b in comparison.baselines.values()), default=0)
    grow = _options.say(NextStep("baseline", suite, ("--from", str(out), "--append")))
    return (
        f"nothing could fail tonight: every baseline is too young to gate (the most nights "
        f"one holds: {most}; a scenario gates from its tolerance's min_baseline_nights, "
        "default 3)",
        f"Next, once this night behaved as intended: {grow}",
    )


def _stopped(result: LiveResult, head: str, named: str) -> str | None:
    """The line of a night that compared nothing because it stopped short: at its budget
    (runs left to start), or in an outage. None for any other night."""
    report = result.report
    if report.budget_spent is not None:
        finish = f"evalrunner run --suite {named} --out {report.out} --resume --budget USD"
        return f"{head}; {report.budget_spent.line()}. Next, to finish it: {finish}"
    if result.outage is not None:
        check = what_to_check(report.records)
        return f"{head}; an outage, so nothing was compared. Next: {check}."
    return None


def _counted(records: Sequence[RunRecord]) -> str:
    """'night: 6 runs (5 passed, 1 failed)', and what they cost where any was priced."""
    from collections import Counter

    counts = Counter(r.outcome for r in records)
    runs = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts.get(o))
    return f"night: {len(records)} runs ({runs or 'none'}){_cost(records)}"


def _cost(records: Sequence[RunRecord]) -> str:
    """', cost $0.02 (and the judge's $0.004)' where any run was priced; '' where none was."""
    if not any(r.cost_usd is not None for r in records):
        return ""
    judged = [r.judge_cost_usd for r in records if r.judge_cost_usd is not None]
    return f", cost {dollars(records)}" + (f" (and the judge's {spent(judged)})" if judged else "")


def several_models(report: RunReport) -> bool:
    return len({r.model for r in report.records}) > 1


def _flagged(comparison: Comparison, report: RunReport) -> str:
    several = several_models(report)
    flagged = flagged_names(comparison.regressions, several_models=several)
    return f"flagged: {', '.join(flagged)}{beside_flags(comparison.results)}"


def _next_when_flagged(comparison: Comparison, report: RunReport, suite: str) -> str:
    """The report, then a new baseline of only the flagged scenarios: the suite-wide
    command replaced every baseline, and cut the unflagged ones back to one young night
    (a review)."""
    scope = scope_of(comparison.regressions, several_models(report))
    more = Placeholder("[--from ANOTHER_NIGHT ...]")
    accept = NextStep("baseline", suite, ("--from", str(report.out), more, *scope))
    return _options.say(
        Said(
            "Next: evalrunner report, and if the change is intended, a new baseline from "
            "nights that show it: ",
            accept,
            " (not --append: a baseline of both behaviours flags neither)",
        )
    )


def _checks_broken(report: RunReport) -> str:
    """The checks that failed themselves, named in the last line: "4 passed; nothing
    flagged" under them read as a clean night, the notes saying otherwise scrolled away."""
    found = [
        f"{scenario}: {check_named(check)} ({runs} run{'s' if runs > 1 else ''})"
        for scenario, checks in sorted(report.broken_checks.items())
        for check, runs in sorted(checks.items())
    ]
    if not found:
        return ""
    named = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return f"; checks that failed themselves, their runs judged without them: {named}"


def scope_of(flagged: Sequence[MetricResult], several_models: bool) -> list[str]:
    """``--scenario`` (and with several models ``--model``) for each flagged cell's."""
    words = [*each("--scenario", sorted({r.scenario for r in flagged}))]
    if several_models:
        words += each("--model", sorted({r.model for r in flagged}))
    return words


def _not_compared(comparison: Comparison) -> str:
    """The cells the night ran and did not compare, named: a line that says "nothing
    flagged" over them reads as if they had passed (a review)."""
    parts = []
    for cells, why in (
        (comparison.unfit, "their baseline is for another configuration or model"),
        (comparison.missing, "no baseline"),
    ):
        if cells:
            named = ", ".join(str(c) for c in cells[:3]) + (
                f" and {len(cells) - 3} more" if len(cells) > 3 else ""
            )
            parts.append(f"{len(cells)} not compared ({why}: {named})")
    return "".join(f"; {part}" for part in parts)


def young_cells(results: Sequence[MetricResult]) -> list[MetricResult]:
    """A result of each cell compared with a baseline too young to gate (no gating metric
    tonight)."""
    gating = {(r.scenario, r.model) for r in results if r.gating}
    young = {(r.scenario, r.model): r for r in results if r.baseline_nights > 0}
    return [r for key, r in sorted(young.items()) if key not in gating]


def _models_down(out: list[str]) -> str:
    if not out:
        return ""
    if len(out) == 1:
        return f"; the endpoint of {out[0]} failed, so its scenarios were not compared"
    return (
        f"; the endpoints of {', '.join(out[:-1])} and {out[-1]} failed, so their scenarios "
        "were not compared"
    )


def _nothing_compared(comparison: Comparison, suite: str, out: Path) -> str:
    """Why no scenario was compared, and the baseline command that would change that."""
    accept = _options.say(NextStep("baseline", suite, ("--from", str(out))))
    if comparison.unfit:
        return (
            f"nothing was compared: {len(comparison.unfit)} baseline(s) are for another model or "
            f"configuration (the notes above name them). Next, to make this night the "
            f"baseline: {accept}"
        )
    if comparison.other_models:
        return (
            "no baseline for tonight's models yet (the suite's baselines are for "
            f"{', '.join(comparison.other_models)}), so nothing was compared. Next, to make "
            f"this night theirs: {accept}"
        )
    return (
        f"no baselines yet, so nothing was compared. Next, to make this night the baseline: "
        f"{accept}"
    )
