"""What moved between a cell's baseline and tonight besides the agent's path: the dataset rows
whose runs moved most, the usual final answer, and the checks that pass otherwise (the cause
when nothing the agent did differs: a check's own code may be what changed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evalrunner.suite._checks import NO_STRUCTURED_TOOL_CALLS
from evalrunner.suite._record import Outcome, RunRecord

__all__ = [
    "DEFAULT_ALPHA",
    "CheckMove",
    "RowMove",
    "answers_moved",
    "checks_moved",
    "rows_moved",
]


DEFAULT_ALPHA = 0.05
"""The chance of a change reported where there is none, for one explanation."""


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
        return Counter(r.final_answer for r in records if r.measured and r.final_answer)

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
    ends = _next_checks_at(said, run, check)
    return said[: min(ends)] if ends else said.removesuffix(")")


def _next_checks_at(said: str, run: RunRecord, check: str) -> list[int]:
    """Where in ``said`` (the reason after ``check``'s name) another failed check starts."""
    others = [name for name, held in run.checks.items() if not held and name != check]
    names = [*others, NO_STRUCTURED_TOOL_CALLS]
    return [at for name in names if (at := said.find(f"); {name}")) >= 0]


def _verdicts(records: Sequence[RunRecord], check: str) -> list[RunRecord]:
    return [r for r in records if check in r.checks and r.measured]


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
            if r.row is not None and r.measured:
                out.setdefault(r.row, []).append(r)
        return out

    before, now = by_row(baseline), by_row(tonight)
    moves = []
    for row in sorted(before.keys() & now.keys()):
        b, t = before[row], now[row]
        move = RowMove(
            row,
            (sum(r.outcome == Outcome.PASSED for r in b), len(b)),
            (sum(r.outcome == Outcome.PASSED for r in t), len(t)),
            (sum(r.step_count for r in b) / len(b), sum(r.step_count for r in t) / len(t)),
        )
        if move.drop != 0 or round(move.steps[0], 1) != round(move.steps[1], 1):
            moves.append(move)
    moves.sort(key=lambda m: (-abs(m.drop), -abs(m.steps[1] - m.steps[0]), m.row))
    return moves[:limit]
