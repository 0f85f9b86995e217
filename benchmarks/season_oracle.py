"""What runs a night would take to find a persistent 0.9 -> 0.8 drop by night 7, at the bound.

The season table's oracle (docs/calibration.md, "Seasons"): the cumulative success rate
since a 5 x 20 anchor, its variance known exactly, against the exact season boundary
(``evalrunner.stats._evidence.boundary``, 90 nights), N runs every night and no
escalation. Printed for N = 20, 40 and 60 (the engine's N, and what escalation to 2N and
3N on every night would give) and for three alphas: the engine's share of a
scenario-season's 5 % for one of its 5 gating metrics (0.01), half of it, and all of it.

    PYTHONPATH=. python benchmarks/season_oracle.py            # 20,000 sequences a line
    PYTHONPATH=. python benchmarks/season_oracle.py --sequences 5000
    PYTHONPATH=. python benchmarks/season_oracle.py --runs 26   # the engine's runs a night

It says where issue 22's "flagged by night 7 in >= 60 %" is out of reach: at the engine's
alpha no test with 20 runs a night gets there, one with 40 runs every night would.
"""

from __future__ import annotations

import argparse

import numpy as np

from evalrunner.stats._evidence import FIRST_LOOK, boundary, metric_alpha
from evalrunner.suite import Tolerance

BASE, CHANGED = 0.9, 0.8
ANCHOR = (5, 20)
SEASON = 90


def oracle(runs: int, alpha: float, sequences: int, seed: int) -> tuple[float, float, float]:
    """The boundary, and the share of sequences flagged by night 7 and by night 20."""
    rng = np.random.default_rng([seed, runs, int(alpha * 1e4)])
    anchored = ANCHOR[0] * ANCHOR[1]
    nights = np.arange(1, 21)
    # The anchor mean's variance over one night's: it ties the nights' z's together.
    limit = boundary(runs / anchored, SEASON, alpha, two_sided=False)
    base = rng.binomial(anchored, BASE, sequences) / anchored
    tonight = rng.binomial(runs, CHANGED, (sequences, nights.size))
    cumulative = np.cumsum(tonight, axis=1) / (runs * nights)
    spread = BASE * (1 - BASE) * (1 / anchored + 1 / (runs * nights))
    z = (base[:, None] - cumulative) / np.sqrt(spread)
    # Looks from FIRST_LOOK on, as the boundary is built for (night 1 too: 1.6 % for 1 %).
    z[:, : FIRST_LOOK - 1] = -np.inf
    crossed = np.maximum.accumulate(z >= limit, axis=1)
    return limit, float(crossed[:, 6].mean()), float(crossed[:, 19].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--runs",
        default="20,40,60",
        help="runs a night, comma-separated (e.g. the mean runs the engine spent a night on "
        "the changed cell, which benchmarks/evidence_statistic.py --engine prints)",
    )
    args = parser.parse_args()
    tol = Tolerance()
    engine = metric_alpha(tol.season_alpha, len(tol.gating))
    print(
        f"persistent {BASE} -> {CHANGED}, {ANCHOR[0]} x {ANCHOR[1]} anchor, {SEASON}-night season"
    )
    print(
        f"{'runs a night':>12} {'alpha':>7} {'boundary':>9} {'by night 7':>11} {'by night 20':>12}"
    )
    for runs in (int(n) for n in args.runs.split(",")):
        for alpha in (engine, engine * 2.5, tol.season_alpha):
            limit, by7, by20 = oracle(runs, alpha, args.sequences, args.seed)
            print(f"{runs:>12} {alpha:>7.3f} {limit:>9.2f} {by7:>11.1%} {by20:>12.1%}")


if __name__ == "__main__":
    main()
