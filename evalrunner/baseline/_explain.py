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

import difflib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner._jsonio import canonical
from evalrunner._next import NextStep
from evalrunner.baseline._file import Baseline, load_baselines
from evalrunner.baseline._traces import FirstRequest, run_trace
from evalrunner.baseline._traces import first_moves as _first_moves
from evalrunner.core._actions import (
    ANSWER,
    PARAMETERS,
    TOGETHER,
    Action,
    request_view,
)
from evalrunner.live._results import ResultsDir
from evalrunner.suite._checks import NO_STRUCTURED_TOOL_CALLS
from evalrunner.suite._record import CellKey, RunRecord, group_records, measured_rows
from evalrunner.suite._settings import Suite

if TYPE_CHECKING:
    from evalrunner.core._normalize import NormalizeConfig

__all__ = [
    "DEFAULT_ALPHA",
    "CheckMove",
    "Divergence",
    "Explanation",
    "RowMove",
    "SentinelResult",
    "checks_moved",
    "explain",
    "explain_night",
    "explain_results",
    "explain_runs",
    "rows_moved",
]

DEFAULT_ALPHA = 0.05
_MAX_DEPTH = 12


NONE_FOUND = (
    "cause: none found (the first request, the tools' answers and the runs' actions are "
    "as in the baseline)"
)
"""The line of a scenario in which nothing the attribution looks at differs: not
"unexplained", which would say there was a change to explain (``evalrunner explain``
is asked about unchanged scenarios too)."""


@dataclass(frozen=True)
class Divergence:
    """The first action where tonight's runs choose differently from the baseline's."""

    depth: int
    """1-based: the first tool call is depth 1."""
    after: tuple[str, ...]
    """The baseline's most common path before it (tool names)."""
    baseline: Mapping[str, int]
    tonight: Mapping[str, int]
    """Next-action counts among the runs that followed ``after`` on each side."""
    p: float
    """Boschloo's exact p for the baseline's favourite next action, Bonferroni-adjusted."""

    def line(self) -> str:
        where = "at the first action" if not self.after else f"after {' > '.join(self.after)}"
        if any(TOGETHER in k for k in (*self.baseline, *self.tonight)):
            where = "at the first model response"  # its tool calls made at once
        favourite = max(self.baseline, key=lambda k: self.baseline[k])
        theirs = max(self.tonight, key=lambda k: self.tonight[k])
        nb, nt = sum(self.baseline.values()), sum(self.tonight.values())
        said = f"baseline {favourite} {self.baseline[favourite]}/{nb}"
        said += f", tonight {favourite} {self.tonight.get(favourite, 0)}/{nt}"
        if theirs != favourite:
            said += f" and {theirs} {self.tonight[theirs]}/{nt}"
        return f"{where}: {said} (p={self.p:.2g})"


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
            return f"sentinel: {self.unavailable}"
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
        """A sentinel that had nothing to send, or no budget: ``why`` is its line."""
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
        if self.request:
            return causes  # the request changed: what the model did next is not its doing
        seen, first = self.sentinel, self.divergence
        if seen is not None and (change := seen.change()):
            causes.append(f"model (the baseline's first request sent again: {change})")
        elif first is not None and first.depth == 1 and not (seen and seen.unchanged):
            causes.append(f"model (same first request; {first.line()})")
        return causes

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


@dataclass(frozen=True)
class RowMove:
    """One dataset row's runs in the baseline and tonight."""

    row: str
    baseline: tuple[int, int]
    """(passed, runs) over the baseline's nights."""
    tonight: tuple[int, int]
    steps: tuple[float, float]
    """Mean steps per run, baseline and tonight."""

    @property
    def drop(self) -> float:
        (kb, nb), (kt, nt) = self.baseline, self.tonight
        return kb / nb - kt / nt

    def line(self) -> str:
        (kb, nb), (kt, nt) = self.baseline, self.tonight
        before, after = self.steps
        steps = (
            f", steps {before:.1f} -> {after:.1f}" if round(before, 1) != round(after, 1) else ""
        )
        return f"{self.row}: passed {kb}/{nb} -> {kt}/{nt}{steps}"


def answers_moved(baseline: Sequence[RunRecord], tonight: Sequence[RunRecord]) -> str | None:
    """``'CORRECT' 30/30 -> 0/20 (now 'wrong' 20/20)`` when the baseline's usual final answer
    (given by at least half its runs) is given by less than half as many of tonight's; None
    otherwise, and for a dataset scenario, whose rows each have an answer of their own."""

    def answers(records: Sequence[RunRecord]) -> Counter[str]:
        return Counter(
            r.final_answer for r in records if r.outcome != "infra_error" and r.final_answer
        )

    if any(r.row is not None for r in baseline):
        return None
    before, now = answers(baseline), answers(tonight)
    if not before or not now:
        return None
    usual, count = before.most_common(1)[0]
    nb, nt = sum(before.values()), sum(now.values())
    share = now[usual] / nt
    if count / nb < 0.5 or share >= count / nb / 2:
        return None
    top, times = now.most_common(1)[0]
    return f"{_quoted(usual)} {count}/{nb} -> {now[usual]}/{nt} (now {_quoted(top)} {times}/{nt})"


def _quoted(answer: str, width: int = 40) -> str:
    text = " ".join(answer.split())
    return repr(text if len(text) <= width else text[: width - 3] + "...")


@dataclass(frozen=True)
class CheckMove:
    """One check's verdicts on the baseline's runs and on tonight's."""

    check: str
    """As the run records name it (``code:mentions_city``, ``answer_contains:Paris``)."""
    baseline: tuple[int, int]
    tonight: tuple[int, int]
    """(runs it passed, runs it judged) on each side."""
    reason: tuple[str | None, str | None] = (None, None)
    """The reason it gave most often when it failed a run, baseline and tonight."""
    same_answers: bool = False
    """Some final answer given on both sides passed it on one and failed it on the other."""

    @property
    def move(self) -> float:
        (kb, nb), (kt, nt) = self.baseline, self.tonight
        return kt / nt - kb / nb

    def line(self) -> str:
        (kb, nb), (kt, nt) = self.baseline, self.tonight
        before, after = (f' ("{_short(r)}")' if r else "" for r in self.reason)
        if after:
            before = ""  # tonight's reason says what the check now objects to
        said = f"passed {kb}/{nb} in the baseline{before}, {kt}/{nt} tonight{after}"
        return f"check {self.check}: {said}"


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _check_reason(run: RunRecord, check: str) -> str | None:
    """What ``check`` said when it failed ``run``, from the run's reason: the failed checks
    joined by "; ", each ``name (what it said)`` where it said something. What it said may
    hold "); " itself: it ends where the next failed check's name starts."""
    _, found, said = f"; {run.reason or ''}".partition(f"; {check} (")
    if not found:
        return None
    others = [name for name, held in run.checks.items() if not held and name != check]
    ends = [at for name in others if (at := said.find(f"); {name}")) >= 0]
    ends += [at for at in [said.find(f"); {NO_STRUCTURED_TOOL_CALLS}")] if at >= 0]
    return said[: min(ends)] if ends else said.removesuffix(")")


def _verdicts(records: Sequence[RunRecord], check: str) -> list[RunRecord]:
    return [r for r in records if check in r.checks and r.outcome != "infra_error"]


def _check_move(check: str, before: Sequence[RunRecord], now: Sequence[RunRecord]) -> CheckMove:
    def reason(runs: Sequence[RunRecord]) -> str | None:
        said = Counter(x for r in runs if not r.checks[check] and (x := _check_reason(r, check)))
        return said.most_common(1)[0][0] if said else None

    def by_answer(runs: Sequence[RunRecord]) -> dict[str, set[bool]]:
        out: dict[str, set[bool]] = {}
        for r in runs:
            out.setdefault(" ".join((r.final_answer or "").split()), set()).add(r.checks[check])
        return out

    b, t = by_answer(before), by_answer(now)
    return CheckMove(
        check,
        (sum(r.checks[check] for r in before), len(before)),
        (sum(r.checks[check] for r in now), len(now)),
        (reason(before), reason(now)),
        any(len(b[a]) == len(t[a]) == 1 and b[a] != t[a] for a in b.keys() & t.keys()),
    )


def checks_moved(
    baseline: Sequence[RunRecord],
    tonight: Sequence[RunRecord],
    alpha: float = DEFAULT_ALPHA,
    limit: int = 3,
) -> list[CheckMove]:
    """The checks whose share of passed runs moved from the baseline's to tonight's, most
    moved first: those whose move Boschloo's exact test finds at ``alpha``, Bonferroni over
    the checks both sides ran. A run-to-run wobble of a check is no cause."""
    from evalrunner.stats._formulas import two_proportions_p  # scipy: only when explaining

    names = {c for r in baseline for c in r.checks} & {c for r in tonight for c in r.checks}
    sides = {c: (_verdicts(baseline, c), _verdicts(tonight, c)) for c in sorted(names)}
    moves = [_check_move(c, *runs) for c, runs in sides.items() if all(runs)]
    found = [m for m in moves if two_proportions_p(*m.baseline, *m.tonight) * len(moves) <= alpha]
    return sorted(found, key=lambda m: (-abs(m.move), m.check))[:limit]


def rows_moved(
    baseline: Sequence[RunRecord], tonight: Sequence[RunRecord], limit: int = 5
) -> list[RowMove]:
    """The dataset rows whose runs moved most from the baseline's to tonight's, most first.

    A row is compared with itself (the same input every night): first by how much its
    pass rate dropped, then by how far its mean steps moved. Rows without runs on both
    sides (infra errors aside) and rows that did not move are left out.
    """

    def by_row(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
        out: dict[str, list[RunRecord]] = {}
        for r in records:
            if r.row is not None and r.outcome != "infra_error":
                out.setdefault(r.row, []).append(r)
        return out

    before, now = by_row(baseline), by_row(tonight)
    moves = []
    for row in sorted(before.keys() & now.keys()):
        b, t = before[row], now[row]
        move = RowMove(
            row,
            (sum(r.outcome == "passed" for r in b), len(b)),
            (sum(r.outcome == "passed" for r in t), len(t)),
            (sum(r.step_count for r in b) / len(b), sum(r.step_count for r in t) / len(t)),
        )
        if move.drop != 0 or round(move.steps[0], 1) != round(move.steps[1], 1):
            moves.append(move)
    moves.sort(key=lambda m: (-abs(m.drop), -abs(m.steps[1] - m.steps[0]), m.row))
    return moves[:limit]


def _paths(runs: Sequence[Sequence[Action]]) -> list[tuple[str, ...]]:
    return [(*(a.tool for a in run), ANSWER) for run in runs]


def divergence(
    baseline: Sequence[Sequence[Action]],
    tonight: Sequence[Sequence[Action]],
    alpha: float,
    moves: tuple[Sequence[str], Sequence[str]] | None = None,
) -> Divergence | None:
    """The first depth at which tonight's next action differs (see module doc), if any.

    ``moves``: each side's first model responses (:func:`~evalrunner.core._actions.move`),
    when both kept them. Where some run called tools in parallel, the first look compares
    those instead of the first tool calls: a response of two calls where there was one
    starts with the same call, and is the model's doing all the same.
    """
    from evalrunner.stats._formulas import two_proportions_p  # scipy: only when explaining

    base, night = _paths(baseline), _paths(tonight)
    parallel = moves if moves and any(TOGETHER in m for side in moves for m in side) else None
    looked: list[tuple[int, tuple[str, ...], Counter[str], Counter[str], float]] = []
    prefix: tuple[str, ...] = ()
    for depth in range(1, _MAX_DEPTH + 1):
        if depth == 1 and parallel is not None:
            b, t = Counter(parallel[0]), Counter(parallel[1])
        else:
            b, t = _next(base, depth, prefix), _next(night, depth, prefix)
        if sum(b.values()) < 2 or sum(t.values()) < 2:
            break
        favourite = b.most_common(1)[0][0]
        nb, nt = sum(b.values()), sum(t.values())
        looked.append((depth, prefix, b, t, two_proportions_p(b[favourite], nb, t[favourite], nt)))
        if favourite == ANSWER:
            break
        prefix = (*prefix, favourite.split(TOGETHER)[0])
    for depth, after, b, t, p in looked:
        adjusted = min(1.0, p * len(looked))
        if adjusted <= alpha:
            return Divergence(depth, after, dict(b), dict(t), adjusted)
    return None


def _next(paths: Sequence[tuple[str, ...]], depth: int, prefix: tuple[str, ...]) -> Counter[str]:
    """The action at ``depth`` of the paths that took ``prefix`` before it."""
    return Counter(p[depth - 1] for p in paths if len(p) >= depth and p[: depth - 1] == prefix)


def _tool_changes(
    baseline: Sequence[Sequence[Action]], tonight: Sequence[Sequence[Action]]
) -> list[str]:
    """Tools that answered one same way (at least twice) for some arguments in the baseline
    and otherwise in most of tonight's calls with those arguments."""
    before: dict[tuple[str, str], Counter[str | None]] = {}
    now: dict[tuple[str, str], Counter[str | None]] = {}
    for side, runs in ((before, baseline), (now, tonight)):
        for run in runs:
            for a in run:
                side.setdefault((a.tool, a.args), Counter())[a.observation] += 1
    changed = set()
    for key, seen in before.items():
        if key not in now or len(seen) != 1 or sum(seen.values()) < 2:
            continue
        (answer,) = seen
        if answer is None:
            continue
        tonight_answers = now[key]
        if tonight_answers[answer] * 2 < sum(tonight_answers.values()):
            changed.add(key[0])
    return sorted(changed)


def _lines(text: str) -> list[str]:
    return text.splitlines() or [""]


def _definition_change(before: str, after: str) -> str:
    old, new = json.loads(before), json.loads(after)
    old_f, new_f = old.get("function", old), new.get("function", new)
    parts = [
        what
        for what, key in (("schema", "parameters"), ("description", "description"))
        if old_f.get(key) != new_f.get(key)
    ]
    return " and ".join(parts) or "definition"


def _request_changes(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    changes: list[str] = []
    diff: list[str] = []
    for key, what in (("system", "system prompt"), ("user", "first user message")):
        if before[key] != after[key]:
            old, new = _lines(before[key]), _lines(after[key])
            body = list(
                difflib.unified_diff(
                    old, new, f"baseline {what}", f"tonight {what}", n=0, lineterm=""
                )
            )
            hunks = body[2:]
            removed = sum(1 for x in hunks if x.startswith("-"))
            added = sum(1 for x in hunks if x.startswith("+"))
            changed = max(removed, added, 1)
            changes.append(f"{what}, {changed} line{'s' if changed != 1 else ''}")
            diff.extend(body)
    old_tools, new_tools = before["tools"], after["tools"]
    for name in sorted(set(old_tools) | set(new_tools)):
        if name not in new_tools:
            changes.append(f"tool '{name}' removed")
        elif name not in old_tools:
            changes.append(f"tool '{name}' added")
        elif old_tools[name] != new_tools[name]:
            changes.append(f"tool '{name}' {_definition_change(old_tools[name], new_tools[name])}")
    return changes, diff


def _most_sent(requests: Iterable[tuple[Mapping[str, Any], int]]) -> dict[str, Any]:
    """The request sent most, from (request, how many runs sent it) pairs."""
    counts: Counter[str] = Counter()
    for request, runs in requests:
        counts[canonical(request)] += runs
    found: dict[str, Any] = json.loads(counts.most_common(1)[0][0])
    return found


def _parameter_changes(
    before: Mapping[str, Any], tonight: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Parameters the first request most of tonight's runs sent set otherwise than the baseline's."""
    if not tonight:
        return []
    modal = _most_sent((t, 1) for t in tonight)
    return [
        f"{key} {json.dumps(before.get(key))} -> {json.dumps(modal.get(key))}"
        for key in PARAMETERS  # not in a trajectory: compared from the requests themselves
        if before.get(key) != modal.get(key)
    ]


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
        ours = _most_sent((r.view(), r.runs) for r in requests)
        theirs = _most_sent((request_view(t), 1) for t in tonight)
        if theirs["user"] in {r.user for r in requests}:
            # A dataset's runs send one user message per row: tonight's most sent one is
            # no drift when the baseline sent it too (whichever row happens to lead).
            ours = {**ours, "user": theirs["user"]}
        out.request, out.request_diff = _request_changes(ours, theirs)
    if sent_before is not None:
        out.request += _parameter_changes(sent_before, sent_tonight)
    night = [run_trace("tonight", t) for t in tonight]  # as a baseline keeps its runs
    night_actions = [r.as_actions() for r in night]
    out.tools = _tool_changes(baseline, night_actions)
    night_moves = _first_moves(night)
    moves = None if first_moves is None or night_moves is None else (first_moves, night_moves)
    out.divergence = divergence(baseline, night_actions, alpha, moves)
    return out


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
    kept = None if rows is None else {r.run_id for r in baseline.records if r.row in rows}
    traces = [r for t in traced for r in t.runs if kept is None or r.run_id in kept]
    return explain_runs(
        requests,
        [r.as_actions() for r in traces],
        tonight,
        alpha,
        sent_before=baseline.sent,
        sent_tonight=sent_tonight,
        first_moves=_first_moves(traces),
    )


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
        out[cell].infra = sum(r.outcome == "infra_error" for r in night)
        out[cell].no_call = sum(map(_sent_nothing, night))
        out[cell].moved = rows_moved(baseline.records, night)
        out[cell].answers = answers_moved(baseline.records, night)
        same_rows = [r for r in baseline.records if rows is None or r.row in rows]
        out[cell].checks = checks_moved(same_rows, night, each)
    return out


def _sent_nothing(record: RunRecord) -> bool:
    """A run that crashed before its first model call: it has no first request to compare
    and took no first action (an agent that made no call and did not crash is infra_error)."""
    return record.outcome == "crashed" and record.llm_calls == 0


def _tonight(
    results: ResultsDir, records: Sequence[RunRecord], config: NormalizeConfig
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tonight's runs of a cell (infra errors and runs that sent nothing left out): their
    normalised trajectories, and the first requests the run files kept."""
    from evalrunner.core._normalize import normalize

    measured = [r for r in records if r.outcome != "infra_error" and not _sent_nothing(r)]
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
