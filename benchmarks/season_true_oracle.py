"""Season false alarms of the true oracle's nightly tests, and what a season bar costs it.

Issue 52 asks for two things of one nightly test: a first night's success 0.9 -> 0.6
flagged on >= 80 % of nights (logit drift sd 0.3, 5 x 20 anchor), and <= 10 % of 90-night
scenario-seasons with any false flag on the same law. This measures both on the true
oracle (``tests/support/true_oracle.py``: the best test that knows the night law; each
gating metric's statistic is tonight's share or mean minus the anchor's, against its
exact null quantile at the bar), so the gap between them is the law's, not the engine's:

* for each per-night bar (the engine's lone-change bar for a 5 x 1 suite, fdr_q / 25,
  and stricter ones), the share of scenario-seasons (one anchor, then 90 unchanged nights
  of ``--runs`` runs) in which some gating metric's oracle test flags some night;
* the oracle's first-night power on the headline change at that bar, at 20 runs and at
  the runs the engine spends on it (51, docs/calibration.md) and at the cap of 60.

Every night of a season is compared with the same anchor, so its nights' tests are
correlated through the anchor's own error: the season share is below 1 - (1 - size)^90.

    PYTHONPATH=. .venv/bin/python benchmarks/season_true_oracle.py               # 2,000 seasons
    PYTHONPATH=. .venv/bin/python benchmarks/season_true_oracle.py --seasons 500 --draws 100000
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "support"))
from true_oracle import (
    ORACLE_STATISTICS,
    Law,
    anchor_share,
    harmful_sign,
    night_draws,
    statistic,
    true_oracle,
)

from evalrunner.suite import Tolerance

ANCHOR = (5, 20)
SEASON = 90
LONE_BAR = Tolerance().fdr_q / 25
"""The raw p a lone change reaches tonight in a 5 x 1 suite (fdr_q over 25 gating tests)."""
BARS = (LONE_BAR, LONE_BAR / 2, LONE_BAR / 4, LONE_BAR / 6, LONE_BAR / 10)


def criticals(law: Law, runs: int, draws: int, seed: int) -> dict[str, np.ndarray]:
    """Per metric, its exact null ``1 - bar`` quantile for every bar of :data:`BARS`."""
    out = {}
    for metric in ORACLE_STATISTICS:
        null = statistic(metric, law, law, ANCHOR, runs, draws, seed)
        out[metric] = np.array([np.quantile(null, 1 - bar, method="higher") for bar in BARS])
    return out


def season_flags(
    law: Law, runs: int, seasons: int, limits: dict[str, np.ndarray], seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per bar: the share of seasons some metric flagged on some night, and of nights."""
    rng = np.random.default_rng(seed)
    any_season = np.zeros((len(BARS), seasons), dtype=bool)
    nights_flagged = np.zeros(len(BARS))
    for metric in ORACLE_STATISTICS:
        base = anchor_share(metric, law, rng, seasons, ANCHOR)
        a, b = night_draws(metric, law, rng, seasons * SEASON, runs)
        tonight = (a / b).reshape(seasons, SEASON)
        stat = harmful_sign(metric) * (tonight - base[:, None])
        for i, limit in enumerate(limits[metric]):
            past = stat > limit
            any_season[i] |= past.any(axis=1)
            nights_flagged[i] += past.mean()
    return any_season.mean(axis=1), nights_flagged


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seasons", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=20, help="runs a night in the seasons")
    parser.add_argument("--draws", type=int, default=200_000, help="null draws per quantile")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    law = Law("logit")
    changed = Law("logit", p_pass=0.6)
    limits = criticals(law, args.runs, args.draws, args.seed)
    seasons, nightly = season_flags(law, args.runs, args.seasons, limits, args.seed + 1)
    print(
        f"true oracle, logit drift sd 0.3, {ANCHOR[0]} x {ANCHOR[1]} anchor, {args.runs} runs "
        f"a night, {args.seasons} seasons of {SEASON} unchanged nights; gating metrics: "
        f"{', '.join(ORACLE_STATISTICS)}"
    )
    print(
        "| per-night bar (each metric) | unchanged nights with a flag (the 5 metrics' sizes "
        "summed) | scenario-seasons with a flag | first night, success 0.9 -> 0.6 flagged at "
        "20 / 51 / 60 runs |"
    )
    print("|---|---|---|---|")
    for i, bar in enumerate(BARS):
        power = [
            true_oracle("success_rate", law, changed, ANCHOR, n, bar, args.draws, args.seed).power
            for n in (20, 51, 60)
        ]
        shown = " / ".join(f"{100 * p:.1f} %" for p in power)
        print(f"| {bar:.5f} | {100 * nightly[i]:.2f} % | {100 * seasons[i]:.1f} % | {shown} |")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
