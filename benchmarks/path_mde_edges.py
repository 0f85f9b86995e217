"""The tool path's stated MDE at the edges: young baselines, a usual path taking nearly
every run, a middling one (docs/calibration.md, "Reported MDE").

Part 1, power at each baseline's own MDE: many five-scenario suites' baselines drawn from
one truth (the changed scenario's usual path at ``truth``, the others 50-85 %), each fitted
as the night fits it; a night of ``n`` runs whose usual share fell by that baseline's stated
MDE is flagged by the path test itself with a chance summed exactly over tonight's runs
(binomial, or beta-binomial where the nights drift). Printed: the mean MDE, the mean
power (80 % is what the MDE states) and how many baselines stated none.

Part 2 (``--grid``), the stated MDE itself over baselines of 1 x 10 to 10 x 40 runs, usual
shares 0.5-1 and night shares 0-0.2, at 10-300 runs: run it on two versions of the code
and compare the outputs line by line.

    PYTHONPATH=. .venv/bin/python benchmarks/path_mde_edges.py            # ~1 min
    PYTHONPATH=. .venv/bin/python benchmarks/path_mde_edges.py --grid     # seconds
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "unit", "stats"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "support"))

from conftest import cell_night, make_runs
from path_fit import PathFit

from evalrunner.stats import fit_references
from evalrunner.stats._kinds import KINDS
from evalrunner.stats._paths import mde
from evalrunner.suite._record import CellKey

USUAL, OTHER = ("search", "read"), ("search",)
BAR, MARGIN, LEVEL = 0.002, 0.1, 0.9
SETUPS = (  # (truth, tonight's runs, suites, baseline nights, runs a night, drift concentration)
    (0.97, 60, 60, 2, 10, None),
    (0.97, 150, 30, 2, 10, None),
    (0.97, 60, 60, 3, 20, None),
    (0.97, 150, 30, 3, 20, None),
    (0.93, 60, 60, 3, 20, 200.0),
    (0.55, 60, 60, 3, 20, None),
)


def _suite_reference(
    truth: float, nights: int, per: int, drift: float | None, rng: np.random.Generator
):  # type: ignore[no-untyped-def]
    cells = []
    for i, share in enumerate((truth, *rng.uniform(0.5, 0.85, 4))):
        runs = []
        for night in range(nights):
            s = share if drift is None else rng.beta(drift * share, drift * (1 - share))
            tools = [USUAL if took else OTHER for took in rng.random(per) < s]
            runs.append(make_runs(per, tools=tools, start=per * night, scenario=f"s{i}"))
        cells.append(cell_night(runs, [], scenario=f"s{i}").baseline)
    fitted = fit_references(cells)[CellKey("s0", "m")]
    return fitted.reference(next(c for c in fitted.codings() if c.metric == "tool_sequence"))


def power_at_own_mde(
    truth: float, n: int, suites: int, nights: int, per: int, drift: float | None
) -> str:
    rng = np.random.default_rng(5)
    powers, stated, none = [], [], 0
    for _ in range(suites):
        ref = _suite_reference(truth, nights, per, drift, rng)
        found = mde(ref, n, BAR, MARGIN, LEVEL, 1)
        if found is None:
            none += 1
            continue
        stated.append(found)
        away = np.arange(n + 1)
        q = min(1 - truth + found, 1 - 1e-9)
        pmf = (
            sps.binom.pmf(away, n, q)
            if drift is None
            else sps.betabinom.pmf(away, n, drift * q, drift * (1 - q))
        )
        flagged = 0.0
        for a in away:
            m = KINDS["categorical"].measure(ref, np.repeat([0.0, 1.0], [n - a, a]), LEVEL)
            flagged += pmf[a] if m.p_higher <= BAR and m.effect_ci[1] >= MARGIN else 0.0
        powers.append(flagged)
    return (
        f"| {truth} | {nights} x {per} | {drift or 'none'} | {n} | {np.mean(stated):.4f} "
        f"| {np.mean(powers):.3f} (se {np.std(powers) / np.sqrt(len(powers)):.3f}) | {none} of {suites} |"
    )


def grid() -> None:
    for nights, per in ((1, 10), (2, 10), (3, 20), (5, 20), (10, 40)):
        for usual in (0.5, 0.7, 0.85, 0.95, 1.0):
            for icc in (0.0, 0.05, 0.2):
                total = nights * per
                k = round(usual * total)
                t = total + 1.5
                fit = PathFit(((k + 0.5) / t, (total - k + 0.5) / t, 0.5 / t), icc, nights, per)
                row = [mde(fit, n, BAR, MARGIN, LEVEL, 1) for n in (10, 20, 60, 150, 300)]  # type: ignore[arg-type]
                cells = " ".join("None" if m is None else f"{m:.4f}" for m in row)
                print(f"{nights}x{per} u={usual} icc={icc} {cells}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--grid", action="store_true", help="the stated MDEs over a grid of baselines"
    )
    if parser.parse_args(argv).grid:
        grid()
        return 0
    print(
        "| truth | baseline | nightly drift | runs tonight | mean MDE | power at own MDE | no MDE |"
    )
    print("|---|---|---|---|---|---|---|")
    for setup in SETUPS:
        print(power_at_own_mde(*setup), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
