"""How verdicts rank and read in the report.

A scenario x model's verdict is the worst verdict of its gating metrics, in the
order regression > changed > improvement > inconclusive > ok (``changed``: a
two-sided metric moved and no direction of it is harmful): a detected change, good or
bad, needs a human before "not enough runs to tell" does. Without gating
verdicts the cell reads "young baseline" when it was compared with a baseline too
young to gate (its rows and unconfirmed changes still show); "not compared on this
night" when its night compared nothing at all and an earlier night compared the cell
(so it has had a baseline); else "no baseline".
"""

from __future__ import annotations

from evalrunner.stats._metric_result import FLAGGED, VERDICT_ORDER

__all__ = ["FLAGGED", "VERDICT_ORDER"]
NO_BASELINE = "none"
YOUNG = "young"
"""Compared with a baseline too young to gate: nothing gating, but not nothing."""
NOT_COMPARED = "uncompared"
"""Its night compared nothing (--no-compare, a failed comparison, or no usable baseline
for any cell: the history does not say which), and an earlier night compared the cell."""
VERDICT_TEXT = {
    "regression": "regression",
    "changed": "change",
    "improvement": "improvement",
    "inconclusive": "inconclusive",
    "ok": "ok",
    YOUNG: "young baseline",
    NOT_COMPARED: "not compared on this night",
    NO_BASELINE: "no baseline",
}
UNGATED = (YOUNG, NOT_COMPARED, NO_BASELINE)
"""Cell verdicts without a gating verdict, after VERDICT_ORDER in every listing."""


def severity(verdict: str) -> int:
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER)


def safe_verdict(value: str) -> str:
    """A verdict usable as a CSS class: one of the known five, else inconclusive."""
    return value if value in VERDICT_ORDER else "inconclusive"


def verdict_label(n: int, verdict: str) -> str:
    """'regression' or 'regressions' (flags take a plural; 'ok' and 'inconclusive' do not)."""
    return VERDICT_TEXT[verdict] + ("s" if n != 1 and verdict in FLAGGED else "")


def counted(n: int, verdict: str) -> str:
    """'1 regression', '2 regressions', '3 ok'."""
    return f"{n} {verdict_label(n, verdict)}"
