"""The night share (rho) the tests use, against what the law gives: how well a 5 x 20
anchor's night variance is estimated, per metric, on the calibration's generator.

Two tables (issue 52):

* ``pool``: the changed cell's profile (success 0.9, steps 5) in a 5 x 1 suite of
  random profiles, over seeded anchors: the rho its tests use (the estimate, pooled
  across the suite, plus the padding), the pooled point estimate, and the cell's own
  estimate, on a quiet endpoint (truth 0) and under the logit-normal law.
* ``steps``: one cell, steps under the logit law: the mean own estimate of the
  step count's night share against the share tonight's mean placement really varies
  by (its null spread over many anchors and nights).

    PYTHONPATH=. python benchmarks/night_share.py            # 100 suites, 400 anchors
    PYTHONPATH=. python benchmarks/night_share.py --suites 30 --anchors 100
"""

from __future__ import annotations

import argparse

import numpy as np
from calibrate_stats import LOGIT, QUIET, TOL, Endpoint, Profile, Suite, draw, null_profile

from evalrunner.stats import CellBaseline, fit_references
from evalrunner.stats._formulas import placements
from evalrunner.suite._record import CellKey

METRICS = ("success_rate", "skip_rate", "step_count", "tool_sequence")


def pool(drift: Endpoint, suites: int) -> None:
    rows = []
    for seed in range(suites):
        rng = np.random.default_rng(seed)
        keys = Suite(5, 1).cells()
        profiles = {k: Profile() if i == 0 else null_profile(rng) for i, k in enumerate(keys)}
        base = {
            k: [draw(profiles[k].night(rng, drift), k, rng, 20, j * 20) for j in range(5)]
            for k in keys
        }
        refs = fit_references([CellBaseline(k, TOL, base[k], "a") for k in keys])[keys[0]]
        rows.append(
            [
                (m.icc, m.point_icc or 0.0, m.own_icc[0] if m.own_icc else np.nan)
                for m in (refs.metrics[name] for name in METRICS)
            ]
        )
    got = np.array(rows)
    for i, name in enumerate(METRICS):
        print(
            f"{'quiet' if not drift else 'logit':>6} {name:<14} used {got[:, i, 0].mean():.4f}  "
            f"pooled {got[:, i, 1].mean():.4f}  own {np.nanmean(got[:, i, 2]):.4f}"
        )


def steps(anchors: int) -> None:
    rng = np.random.default_rng(5)
    key, profile = CellKey("s", "m"), Profile()
    deviations, own, run_vars = [], [], []
    for _ in range(anchors):
        nights = [draw(profile.night(rng, LOGIT), key, rng, 20, j * 20) for j in range(5)]
        tonight = draw(profile.night(rng, LOGIT), key, rng, 20, 100)
        ref = fit_references([CellBaseline(key, TOL, nights, "a")])[key].metrics["step_count"]
        counts = np.array([r.step_count for r in tonight], dtype=float)
        deviations.append(float(placements(counts, ref.sorted_base).mean()) - ref.mean)
        own.append(ref.own_icc[0] if ref.own_icc else np.nan)
        run_vars.append(ref.run_var)
    run_var, noise = float(np.mean(run_vars)), 1 / 20 + 1 / 100
    implied = (float(np.var(deviations)) / run_var - noise) / (1 + 1 / 5 - noise)
    print(
        f"steps, logit law: own estimate {np.nanmean(own):.4f}, tonight's spread says {implied:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--suites", type=int, default=100)
    parser.add_argument("--anchors", type=int, default=400)
    args = parser.parse_args()
    for drift in (QUIET, LOGIT):
        pool(drift, args.suites)
    steps(args.anchors)


if __name__ == "__main__":
    main()
