"""What one night did, and the exit code it means: :class:`LiveResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalrunner.baseline._compare import Comparison
from evalrunner.baseline._explain import Explanation
from evalrunner.live._driver import RunReport
from evalrunner.live._outage import Outage
from evalrunner.suite._record import OUTCOME_TRAITS, CellKey, Outcome

OUTAGE_EXIT = 3
BUDGET_EXIT = 4
"""The night reached its --budget before every run had started (docs/live.md)."""
"""What ``evalrunner run`` exits with when an endpoint failed (see :meth:`LiveResult.exit_code`)."""


@dataclass
class LiveResult:
    """What one night did: its runs, the comparison with the baselines, the history entry.

    For a gate in your own code, :meth:`exit_code` is what ``evalrunner run`` would exit
    with (0 fine, 1 failed, 3 an endpoint failed); :attr:`regressed` alone misses crashed
    runs, outages and failed steps after the runs.
    """

    report: RunReport
    """The night's runs (``report.records``) and where they are (``report.out``)."""
    comparison: Comparison | None = None
    """Each scenario x model against its baseline; None: not compared (no baselines
    directory, or an outage)."""
    history_path: str | None = None
    """The history entry written for the night, if one was."""
    outage: Outage | None = None
    """Set when every model's endpoint failed (too many infra_error runs): nothing compared."""
    problems: list[str] = field(default_factory=list)
    """Steps after the runs that failed (comparison, history), one line each."""
    history_note: str | None = None
    """Why nothing was appended to the history, when nothing was."""
    explanations: dict[CellKey, Explanation] = field(default_factory=dict)
    """Why each cell that fails the night changed (``NightOptions.explain``)."""
    resent: dict[CellKey, list[str]] = field(default_factory=dict)
    """Cells not compared because their scenario's configuration changed: what their runs
    sent otherwise than the baseline's ("temperature 0.8 -> 0.2"; empty: the same)."""
    model_outages: dict[str, Outage] = field(default_factory=dict)
    """Models whose endpoint failed tonight while others answered: their scenarios were not
    compared; the other models' were."""

    @property
    def regressed(self) -> bool:
        """A gating metric of some scenario x model regressed against its baseline."""
        return bool(self.comparison and self.comparison.regressions)

    def exit_code(
        self, *, gate: bool = True, fail_on_failure: bool = False, fail_on_unmatched: bool = False
    ) -> int:
        """What ``evalrunner run`` exits with for this night: 3 when every endpoint failed;
        1 for a crashed run, a regression (with ``gate``), a failed step after the runs,
        (with ``fail_on_failure``) a run that failed its checks, or (with
        ``fail_on_unmatched``) a scenario x model not compared because its baseline is for
        another configuration or model; 3 when one model's endpoint failed and nothing else
        did; 4 when the night reached its budget with runs left to start; else 0."""
        stopped = self._stopped_short()
        if stopped is not None:
            return stopped
        # All records of the night, so a resumed run still fails on earlier crashes.
        outcomes = {r.outcome for r in self.report.records}
        fails = any(OUTCOME_TRAITS[o].fails_command for o in outcomes)  # a run crashed
        if fails or (gate and self.regressed) or self.problems:
            return 1
        if self.model_outages:
            return OUTAGE_EXIT
        return 1 if self._fails_by_choice(outcomes, fail_on_failure, fail_on_unmatched) else 0

    def _stopped_short(self) -> int | None:
        """The code of a night that compared nothing because it stopped short: at its
        budget, or in an outage of every model."""
        if self.report.budget_spent is not None:
            return BUDGET_EXIT
        return OUTAGE_EXIT if self.outage is not None else None

    def _fails_by_choice(
        self, outcomes: set[Outcome], fail_on_failure: bool, fail_on_unmatched: bool
    ) -> bool:
        """What the options that fail more nights than the default ask about this one."""
        failed = fail_on_failure and Outcome.FAILED in outcomes
        return failed or (fail_on_unmatched and bool(self.comparison and self.comparison.unfit))
