"""Why a cell changed: where tonight's runs leave the baseline's, and what changed first.

Three observations, each from data both sides hold, and a cause only where one
of them says it (docs/explain.md has the method and what it cannot tell):

- **Request drift** (our side): the first request tonight's runs sent (system
  prompt, first user message, tool definitions) against the baseline's most
  sent one.
- **Tool drift**: a tool called with the same arguments on both sides that
  always answered the same in the baseline and answers otherwise tonight.
- **The divergence point**: following the baseline's most common path action by
  action, the first action whose next choice is distributed differently tonight
  (Boschloo's exact test, Bonferroni over the depths looked at). A run is followed
  by its k-th tool call, not its k-th step, so an extra message step is no
  divergence.

The cause: the request, when it changed; a tool, when one answers otherwise for
the same arguments; the model, when the first request is the same and the runs
diverge at the very first action (the one answer that depends on nothing but
that request); several of these; otherwise ``unexplained`` where the runs diverge
later, and ``none found`` where nothing differs (:data:`NONE_FOUND`). Where nothing
the agent did differs but a check passes otherwise, the check is named
(:func:`checks_moved`): its own code may be what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner._next import NextStep, Said
from evalrunner.baseline._divergence import Divergence, divergence
from evalrunner.baseline._drift import most_sent, parameter_changes, request_changes, tool_changes
from evalrunner.baseline._file import Baseline, load_baselines
from evalrunner.baseline._moves import (
    DEFAULT_ALPHA,
    CheckMove,
    RowMove,
    answers_moved,
    checks_moved,
    rows_moved,
)
from evalrunner.baseline._traces import FirstRequest, RunTrace, run_trace
from evalrunner.baseline._traces import first_moves as _first_moves
from evalrunner.core._actions import Action, first_request
from evalrunner.live._results import ResultsDir
from evalrunner.suite._record import CellKey, Outcome, RunRecord, group_records, measured_rows
from evalrunner.suite._settings import Suite

if TYPE_CHECKING:
    from evalrunner.core._normalize import NormalizeConfig

__all__ = [
    "Explanation",
    "SentinelResult",
    "explain",
    "explain_night",
    "explain_results",
    "explain_runs",
]


NONE_FOUND = (
    "cause: none found (the first request, the tools' answers and the runs' actions are "
    "as in the baseline)"
)
"""The line of a scenario in which nothing the attribution looks at differs: not
"unexplained", which would say there was a change to explain (``evalrunner explain``
is asked about unchanged scenarios too)."""


@dataclass(frozen=True)
class SentinelResult:
    """One cell's sentinel: the baseline's first actions against tonight's to the same request."""

    cell: CellKey
    baseline: Mapping[str, int]
    tonight: Mapping[str, int]
    unreachable: list[str]
    """Why each call that failed under the retry policy failed (not counted as actions)."""
    p: float | None
    """Boschloo's exact p for the baseline's favourite first action; None: nothing to test."""
    alpha: float
    unavailable: str | None = None

    @property
    def changed(self) -> bool:
        return self.p is not None and self.p <= self.alpha

    def counts(self) -> str:
        favourite = max(self.baseline, key=lambda k: self.baseline[k])
        nb, nt = sum(self.baseline.values()), sum(self.tonight.values())
        text = f"first action {favourite} {self.baseline[favourite]}/{nb} -> "
        text += f"{self.tonight.get(favourite, 0)}/{nt}"
        others = [k for k in sorted(self.tonight, key=lambda k: -self.tonight[k]) if k != favourite]
        if others:
            text += f" ({others[0]} {self.tonight[others[0]]}/{nt})"
        return text

    def line(self) -> str:
        if self.unavailable:
            return Said("sentinel: ", self.unavailable)  # it may suggest a command
        sent = sum(self.tonight.values()) + len(self.unreachable)
        head = f"sentinel: the baseline's first request sent {sent} times"
        if self.unreachable:
            head += f" ({len(self.unreachable)} unreachable: {self.unreachable[-1]})"
        if self.p is None:
            return f"{head}: too few answers to compare"
        verdict = "the model answers it otherwise" if self.changed else "no change"
        return f"{head}: {self.counts()}, p={self.p:.2g} (alpha {self.alpha:.2g}): {verdict}"

    def change(self) -> str | None:
        """The change for a cause line, when the sentinel saw one."""
        return f"{self.counts()}, p={self.p:.2g}" if self.changed and self.p is not None else None

    @classmethod
    def not_run(cls, cell: CellKey, why: str) -> SentinelResult:
        """A sentinel that had nothing to send, or too few calls to spare: ``why`` is its line."""
        return cls(cell, {}, {}, [], None, 0.0, unavailable=why)

    @property
    def unchanged(self) -> bool:
        """It got enough answers and saw the model answer as before."""
        return self.p is not None and not self.changed


@dataclass
class Explanation:
    """What changed between a cell's baseline and tonight, and the cause it supports."""

    request: list[str] = field(default_factory=list)
    """What changed in the first request, one short item each ("system prompt, 2 lines")."""
    request_diff: list[str] = field(default_factory=list)
    """A unified diff of the system prompt and user message, when they changed."""
    tools: list[str] = field(default_factory=list)
    """Tools that answer otherwise tonight for arguments they answered the same before."""
    silent_tools: list[str] = field(default_factory=list)
    """Tools called tonight with such arguments that gave no result at all (not run)."""
    divergence: Divergence | None = None
    sentinel: SentinelResult | None = None
    """What the sentinel saw, when the night ran it for this cell (``night._sentinel``)."""
    unavailable: str | None = None
    """Why the baseline cannot be explained against (written before it kept traces)."""
    moved: list[RowMove] = field(default_factory=list)
    """A dataset scenario's rows that moved most (:func:`rows_moved`)."""
    answers: str | None = None
    """How the usual final answer moved, where it did (:func:`answers_moved`): what a
    "none found" line can still say when only the answers changed."""
    checks: list[CheckMove] = field(default_factory=list)
    """Checks that passed otherwise than in the baseline (:func:`checks_moved`): the cause
    when nothing the agent did differs."""
    stale: str | None = None
    """What the baseline is for instead of tonight's runs (``for another configuration
    (fingerprint A -> B)``), when the night would not compare the cell with it."""
    runs: int = 0
    """Tonight's runs of the cell, infra errors included (0: not known, as to :func:`explain`)."""
    infra: int = 0
    """Those of them that ended in infra_error: they measured nothing of the agent."""
    no_call: int = 0
    """Those of them that crashed before their first model call (:func:`_sent_nothing`):
    left out of the request and the divergence, which would read an empty request and an
    answer at the first action off runs that sent nothing."""

    @property
    def rows(self) -> list[str]:
        """:attr:`moved`, one line each."""
        return [m.line() for m in self.moved]

    @property
    def causes(self) -> list[str]:
        causes = []
        if self.request:
            causes.append(f"request changed ({'; '.join(self.request)})")
        if self.tools:
            names = ", ".join(f"'{t}'" for t in self.tools)
            causes.append(f"tool {names} output changed for the same arguments")
        if self.silent_tools:
            names = ", ".join(f"'{t}'" for t in self.silent_tools)
            causes.append(f"tool {names} called but no result came back (the tool did not run)")
        if self.request:
            return causes  # the request changed: what the model did next is not its doing
        model = self._model()
        return causes + ([model] if model else [])

    def _model(self) -> str | None:
        """The model as the cause, when the first request is the same: the sentinel saw it
        answer otherwise, or the runs diverge at the very first action (unless the sentinel
        saw it answer as before)."""
        seen, first = self.sentinel, self.divergence
        if seen is not None and (change := seen.change()):
            return f"model (the baseline's first request sent again: {change})"
        if first is not None and first.depth == 1 and not (seen and seen.unchanged):
            return f"model (same first request; {first.line()})"
        return None

    def line(self) -> str:
        """The one verdict line: ``cause: ...``."""
        # Before all else: with no run that sent a request, "none found" or a request
        # "changed" to nothing would be said of runs that never reached the model.
        measured = self.runs - self.infra
        if self.runs and not measured:
            return (
                f"cause: unavailable (all {self.runs} of tonight's runs ended in infra_error: "
                "none measured the agent)"
            )
        of = f"{self.no_call} of {measured} runs{', infra errors aside' if self.infra else ''}"
        if self.no_call and self.no_call == measured:
            return (
                f"cause: the agent crashed before its first model call ({of}); "
                "no request to compare"
            )
        cause = self._cause()
        if self.no_call:
            cause += f"; {of} crashed before their first model call (left out)"
        return cause

    def _cause(self) -> str:
        if self.unavailable:
            return f"cause: unavailable ({self.unavailable})"
        causes = self.causes
        if causes:
            return "cause: " + "; ".join(causes)
        if self.divergence is not None:
            return f"cause: unexplained (runs diverge {self.divergence.line()})"
        if self.answers:
            return f"{NONE_FOUND}; what moved is the final answer: {self.answers}"
        if self.checks:
            return _checks_line(self.checks)
        return NONE_FOUND


def _checks_line(moved: Sequence[CheckMove]) -> str:
    """The cause when only checks moved: the runs did what they did before, so what judges
    them is the suspect. Where the same final answers got other verdicts the agent is out of
    it; otherwise the answers' text, which the attribution does not compare, may have moved."""
    checks = "; ".join(m.line() for m in moved)
    one = len(moved) == 1
    itself = "the check itself" if one else "the checks themselves"
    if any(m.same_answers for m in moved):
        return (
            f"cause: {checks}; the agent's runs are as in the baseline, so {itself} may have "
            "changed"
        )
    answers = "the final answers it reads" if one else "the final answers they read"
    return (
        f"cause: {checks}; the first request, the tools' answers and the runs' actions are as "
        f"in the baseline, so {itself}, or {answers}, may have changed"
    )


def explain_runs(
    requests: Sequence[FirstRequest],
    baseline: Sequence[Sequence[Action]],
    tonight: Sequence[Mapping[str, Any]],
    alpha: float = DEFAULT_ALPHA,
    *,
    sent_before: Mapping[str, Any] | None = None,
    sent_tonight: Sequence[Mapping[str, Any]] = (),
    first_moves: Sequence[str] | None = None,
) -> Explanation:
    """Explain tonight's normalised trajectories against a baseline's requests and actions.

    ``sent_before`` / ``sent_tonight``: the first requests in full (the baseline's most
    sent one, tonight's runs'), when kept: their sampling parameters are compared too.
    ``first_moves``: the baseline's runs' first model responses, when it kept them.
    """
    out = Explanation()
    if requests and tonight:
        out.request, out.request_diff = _request_drift(requests, tonight)
    if sent_before is not None:
        out.request += parameter_changes(sent_before, sent_tonight)
    night = [run_trace("tonight", t) for t in tonight]  # as a baseline keeps its runs
    night_actions = [r.as_actions() for r in night]
    out.tools, out.silent_tools = tool_changes(baseline, night_actions)
    night_moves = _first_moves(night)
    moves = None if first_moves is None or night_moves is None else (first_moves, night_moves)
    out.divergence = divergence(baseline, night_actions, alpha, moves)
    return out


def _request_drift(
    requests: Sequence[FirstRequest], tonight: Sequence[Mapping[str, Any]]
) -> tuple[list[str], list[str]]:
    """What changed from the baseline's most sent first request to tonight's, and its diff."""
    ours = most_sent((r.view(), r.runs) for r in requests)
    theirs = most_sent((first_request(t), 1) for t in tonight)
    if theirs["user"] in {r.user for r in requests}:
        # A dataset's runs send one user message per row: tonight's most sent one is
        # no drift when the baseline sent it too (whichever row happens to lead).
        ours = {**ours, "user": theirs["user"]}
    return request_changes(ours, theirs)


def explain(
    baseline: Baseline,
    tonight: Sequence[Mapping[str, Any]],
    alpha: float = DEFAULT_ALPHA,
    sent_tonight: Sequence[Mapping[str, Any]] = (),
    rows: frozenset[str] | None = None,
) -> Explanation:
    """Explain tonight's normalised trajectories of one cell against its baseline
    (``sent_tonight``: their first requests in full, where the run files kept them;
    ``rows``: a dataset scenario's rows tonight ran, the baseline's runs of others left out)."""
    traced = baseline.traced
    if not traced:
        return Explanation(
            unavailable="this baseline was written before baselines kept traces; "
            f"request drift unavailable: accept a new baseline with '{NextStep('baseline')}'"
        )
    requests = [r for t in traced for r in t.requests]
    traces = _traces_on(baseline, rows)
    return explain_runs(
        requests,
        [r.as_actions() for r in traces],
        tonight,
        alpha,
        sent_before=baseline.sent,
        sent_tonight=sent_tonight,
        first_moves=_first_moves(traces),
    )


def _traces_on(baseline: Baseline, rows: frozenset[str] | None) -> list[RunTrace]:
    """The baseline's traced runs, of ``rows`` only where a dataset scenario ran some."""
    kept = None if rows is None else {r.run_id for r in baseline.records if r.row in rows}
    return [r for t in baseline.traced for r in t.runs if kept is None or r.run_id in kept]


def explain_night(
    suite: Suite,
    results: ResultsDir,
    baselines: Mapping[CellKey, Baseline],
    cells: Sequence[CellKey],
    alpha: float = DEFAULT_ALPHA,
) -> dict[CellKey, Explanation]:
    """Explain ``cells`` of a results directory against their baselines.

    ``alpha`` is the chance of any divergence reported where there is none, over all
    ``cells`` together (split equally). A cell without a baseline, or of a scenario no
    longer in the suite, is left out.
    """
    scenarios = {s.id: s for s in suite.scenarios}
    grouped = group_records(results.records())
    each = alpha / max(1, len(cells))
    out: dict[CellKey, Explanation] = {}
    for cell in cells:
        scenario = scenarios.get(cell.scenario)
        if scenario is None or cell not in grouped or cell not in baselines:
            continue
        night, baseline = grouped[cell], baselines[cell]
        tonight, sent = _tonight(results, night, scenario.normalize_config())
        rows = measured_rows(night)  # as the night compared them
        out[cell] = explain(baseline, tonight, each, sent, rows)
        out[cell].runs = len(night)
        out[cell].infra = sum(not r.measured for r in night)
        out[cell].no_call = sum(map(_sent_nothing, night))
        out[cell].moved = rows_moved(baseline.records, night)
        out[cell].answers = answers_moved(baseline.records, night)
        same_rows = [r for r in baseline.records if rows is None or r.row in rows]
        out[cell].checks = checks_moved(same_rows, night, each)
    return out


def _sent_nothing(record: RunRecord) -> bool:
    """A run that crashed before its first model call: it has no first request to compare
    and took no first action (an agent that made no call and did not crash is infra_error)."""
    return record.outcome == Outcome.CRASHED and record.llm_calls == 0


def _tonight(
    results: ResultsDir, records: Sequence[RunRecord], config: NormalizeConfig
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tonight's runs of a cell (infra errors and runs that sent nothing left out): their
    normalised trajectories, and the first requests the run files kept."""
    from evalrunner.core._normalize import normalize

    measured = [r for r in records if r.measured and not _sent_nothing(r)]
    paths = [results.run_path(r.run_id) for r in measured]
    files = [results.read_run_file(p) for p in paths if p.exists()]
    tonight = [normalize(trajectory, config) for _, trajectory, _ in files]
    return tonight, [request for _, _, request in files if request is not None]


def explain_results(
    suite: Suite,
    results: ResultsDir,
    baselines_root: Path,
    cells: Sequence[CellKey],
    alpha: float = DEFAULT_ALPHA,
) -> dict[CellKey, Explanation]:
    """:func:`explain_night` with the baselines read from ``baselines_root``.

    A baseline the night would not compare with (recorded for another configuration of
    the scenario than the night's manifest names, or for another model) is explained
    against all the same, its :attr:`Explanation.stale` saying so.
    """
    loaded = load_baselines(baselines_root, suite.name, cells)
    out = explain_night(suite, results, loaded, cells, alpha)
    fingerprints = results.read_manifest().scenarios
    for cell, why in out.items():
        why.stale = _other_configuration(loaded[cell], cell, fingerprints.get(cell.scenario))
    return out


def _other_configuration(baseline: Baseline, cell: CellKey, fingerprint: str | None) -> str | None:
    """What ``baseline`` is for when it is not tonight's runs' (the night's own test:
    :func:`~evalrunner.baseline._compare.compare_with_baselines`), else None."""
    if baseline.model != cell.model:
        return f"for model {baseline.model!r}"
    if fingerprint is not None and baseline.fingerprint != fingerprint:
        return f"for another configuration (fingerprint {baseline.fingerprint} -> {fingerprint})"
    return None
