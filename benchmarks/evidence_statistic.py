"""Which statistic the evidence since the anchor should sum for a rate (issue 52, item 1).

The evidence adds each night's rate as its exact test's tail reads it (the predictive
pmf's mid-p, turned back into a mean); the issue proposed summing the raw counts instead,
since the tail reads a 0.9 rate's night at 0.8 as about 0.81. Two parts:

1. No engine, numpy only: a cumulative z on the raw summed counts against the exact
   season boundary (``evalrunner.stats._evidence.boundary``), 5 x 20 anchor, 20 runs a
   night, a 90-night season, alpha 0.01 (the engine's share for one of 5 gating
   metrics). Its variance taken (a) at the true rate (the season oracle: no user knows
   it), (b) at the baseline's own estimate (what an engine has), (c) pooled over the
   baseline and the nights (the classic two-proportion test). Printed: the season's real
   false-alarm chance at several true rates, on the harmful side, and the share of
   persistent 0.9 -> 0.8 drops flagged by night 7.
2. ``--engine N``: the engine as shipped on N seeded sequences of the same drop (quiet
   endpoint, escalation, tonight's test and the evidence, as ``evalrunner run`` does;
   ``benchmarks/calibrate_stats.py``'s season machinery), flagged by night 7.

    PYTHONPATH=. python benchmarks/evidence_statistic.py                # part 1, ~1 min
    PYTHONPATH=. python benchmarks/evidence_statistic.py --engine 400 --jobs 2   # + ~2 min

What it showed (seed 1, 40,000 sequences): the raw sum with the baseline's own rate in
its variance spends 3.8 % of a 1 % season bar at a 0.9 rate, 7.9 % at 0.98 and 7.6 % for
a 0.02 rate rising (a baseline that happened to read high, or a rare event, makes every
later night's z too large); pooled, it keeps the bar (0.1-0.6 %) and finds 27.2 % of the
drops by night 7 against the oracle's 47.8 %. So the engine adds a rate's raw share only
where a night's runs expect at least five of the rarer outcome (``RAW_RARER``; a 0.9
rate's escalated nights, any rate between 0.25 and 0.75) and its tail elsewhere.
``--engine 400 --seasons 40``: 46.8 % of the drops by night 7 against 44.5 % through the
tail alone; the evidence's false alarms over unchanged 90-night seasons 1.5 / 9.5 % (quiet
/ logit drift) against 1.5 / 7.5 % (docs/calibration.md, "Evidence that accumulates").
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from evalrunner.stats._evidence import FIRST_LOOK, boundary

ANCHORED, RUNS, SEASON, ALPHA = 100, 20, 90, 0.01
VARIANCES = ("true rate (oracle)", "baseline's estimate", "pooled")
FloatPair = tuple[float, float]


def flagged(p0: float, p1: float, sequences: int, seed: int, low: bool) -> dict[str, FloatPair]:
    """Per variance: the share flagged by night 7 and within the season."""
    rng = np.random.default_rng([seed, int(p0 * 1000), int(p1 * 1000)])
    nights = np.arange(1, SEASON + 1)
    limit = boundary(RUNS / ANCHORED, SEASON, ALPHA, two_sided=False)
    k_b = rng.binomial(ANCHORED, p0, sequences)[:, None]
    total = np.cumsum(rng.binomial(RUNS, p1, (sequences, SEASON)), axis=1)
    n = RUNS * nights
    base = (k_b + 0.5) / (ANCHORED + 1)
    at = {
        VARIANCES[0]: np.full_like(base, p0),
        VARIANCES[1]: base,
        VARIANCES[2]: (k_b + total + 0.5) / (ANCHORED + n + 1),
    }
    out = {}
    for name, p in at.items():
        z = (base - total / n) / np.sqrt(p * (1 - p) * (1 / ANCHORED + 1 / n))
        z = z if low else -z
        z[:, : FIRST_LOOK - 1] = -np.inf
        crossed = np.maximum.accumulate(z >= limit, axis=1)
        out[name] = (float(crossed[:, 6].mean()), float(crossed[:, -1].mean()))
    return out


def numpy_part(sequences: int, seed: int) -> None:
    print(
        f"raw summed counts, {ANCHORED // RUNS} x {RUNS} anchor, {RUNS} runs a night, alpha {ALPHA}"
    )
    print(f"{'':34}" + "".join(f"{v:>22}" for v in VARIANCES))
    for p0, low in ((0.5, True), (0.9, True), (0.95, True), (0.98, True), (0.02, False)):
        side = "falls" if low else "rises"
        got = flagged(p0, p0, sequences, seed, low)
        cells = "".join(f"{got[v][1]:>22.2%}" for v in VARIANCES)
        print(f"{f'season false alarms, {p0} {side}':34}{cells}")
    got = flagged(0.9, 0.8, sequences, seed, True)
    print(
        f"{'0.9 -> 0.8 flagged by night 7':34}" + "".join(f"{got[v][0]:>22.1%}" for v in VARIANCES)
    )


STATISTICS = {"share where n p >= 5 (as shipped)": None, "tail only (before)": math.inf}
"""The engine's two ways of adding a rate's night: ``RAW_RARER`` as shipped, or infinite."""


def engine_part(count: int, seasons: int, jobs: int) -> None:
    """The engine on the same seeded sequences with each statistic: a persistent 0.9 -> 0.8
    flagged by night 7 (quiet endpoint), and unchanged 90-night seasons of a 5 x 1 suite
    flagged by the evidence (quiet and the logit drift law)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import calibrate_stats as cs

    from evalrunner.stats import _evidence

    shipped = _evidence.RAW_RARER
    suite = cs.Suite(5, 1)
    tag = f"season|{cs.PERSISTENT.name}|{cs.MATURE}"
    drops = [
        cs.SeasonTask(s, suite, cs.PERSISTENT, 7, cs.MATURE, cs.QUIET)
        for s in cs.seeds(1, tag, count)
    ]
    nulls = {
        law: [
            cs.SeasonTask(s, suite, cs.NONE, 90, cs.MATURE, law)
            for s in cs.seeds(1, f"aa-evidence|{law}", seasons)
        ]
        for law in (cs.QUIET, cs.LOGIT)
    }
    for label, rarer in STATISTICS.items():
        # Set before the worker processes fork, so every night sees it.
        _evidence.RAW_RARER = shipped if rarer is None else rarer
        got = cs.run_all(cs.one_season, drops, jobs)
        found = sum(0 < cs._first(s) <= 7 for s in got)
        by_evidence = sum(s.evidence[0] != 0 and s.evidence[0] == cs._first(s) for s in got)
        runs = np.mean([s.changed_runs for s in got])
        line = (
            f"{label}: 0.9 -> 0.8 flagged by night 7 in {cs.pct(found, len(got))} % of "
            f"{len(got)} sequences ({by_evidence} first by the evidence); the changed cell "
            f"ran {runs:.1f} runs a night on average (benchmarks/season_oracle.py --runs "
            f"{round(runs)}: the oracle at those runs)"
        )
        for law, tasks in nulls.items() if seasons else ():
            null = cs.run_all(cs.one_season, tasks, jobs)
            hit = sum(1 for s in null for e in s.evidence if e)
            cells = sum(len(s.evidence) for s in null)
            line += f"; {cs.ENDPOINTS[law]}: evidence flagged {cs.pct(hit, cells)} % of {cells} scenario-seasons"
        print(line, flush=True)
    _evidence.RAW_RARER = shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=40_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", type=int, default=0, help="engine sequences (0: skip)")
    parser.add_argument(
        "--seasons", type=int, default=0, help="with --engine: unchanged 90-night seasons per law"
    )
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    numpy_part(args.sequences, args.seed)
    if args.engine:
        engine_part(args.engine, args.seasons, args.jobs)


if __name__ == "__main__":
    main()
