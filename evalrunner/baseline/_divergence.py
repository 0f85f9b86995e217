"""The divergence point: following the baseline's most common path action by action, the first
action whose next choice is distributed differently tonight (Boschloo's exact test, Bonferroni
over the depths looked at). A run is followed by its k-th tool call, not its k-th step, so an
extra message step is no divergence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalrunner.core._actions import (
    ANSWER,
    TOGETHER,
    Action,
)

__all__ = [
    "Divergence",
    "divergence",
]


_MAX_DEPTH = 12


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
    base, night = _paths(baseline), _paths(tonight)
    parallel = moves if moves and any(TOGETHER in m for side in moves for m in side) else None
    looked = _looks(base, night, parallel)
    for depth, after, b, t, p in looked:
        adjusted = min(1.0, p * len(looked))
        if adjusted <= alpha:
            return Divergence(depth, after, dict(b), dict(t), adjusted)
    return None


_Look = tuple[int, tuple[str, ...], Counter[str], Counter[str], float]
"""(depth, the path before it, next-action counts baseline and tonight, unadjusted p)."""


def _looks(
    base: Sequence[tuple[str, ...]],
    night: Sequence[tuple[str, ...]],
    parallel: tuple[Sequence[str], Sequence[str]] | None,
) -> list[_Look]:
    """Each depth looked at, along the baseline's favourite path, until too few runs are
    left on a side or the favourite is the answer."""
    from evalrunner.stats._formulas import two_proportions_p  # scipy: only when explaining

    looked: list[_Look] = []
    prefix: tuple[str, ...] = ()
    for depth in range(1, _MAX_DEPTH + 1):
        if depth == 1 and parallel is not None:
            b, t = Counter(parallel[0]), Counter(parallel[1])
        else:
            b, t = _next(base, depth, prefix), _next(night, depth, prefix)
        nb, nt = sum(b.values()), sum(t.values())
        if nb < 2 or nt < 2:
            break
        favourite = b.most_common(1)[0][0]
        looked.append((depth, prefix, b, t, two_proportions_p(b[favourite], nb, t[favourite], nt)))
        if favourite == ANSWER:
            break
        prefix = (*prefix, favourite.split(TOGETHER)[0])
    return looked


def _next(paths: Sequence[tuple[str, ...]], depth: int, prefix: tuple[str, ...]) -> Counter[str]:
    """The action at ``depth`` of the paths that took ``prefix`` before it."""
    return Counter(p[depth - 1] for p in paths if len(p) >= depth and p[: depth - 1] == prefix)
