"""Calibrate the statistics by simulation: what a user of ``evalrunner run`` gets.

Every simulated night goes through the same public entry points the CLI calls:
``fit_references`` + ``drive`` (escalation / adaptive stopping, one cell at a time)
and ``compare_night`` (every metric of every cell, Benjamini-Hochberg across the
night, accumulated evidence). Runs are generated as :class:`RunRecord`s by
over-dispersed generators:

* outcomes: skip, crash, pass, fail rates per scenario; on a drifting endpoint the
  pass rate moves by U(-0.10, +0.10) each night and the skip rate by U(-0.02, +0.02);
* tool paths: four paths with per-scenario shares (the usual one 50-85 %); drifting
  nights draw their shares from a Dirichlet(200 x shares) (Dirichlet-multinomial);
* steps: negative binomial (size 10: variance 1.5x a Poisson's at mean 5), LLM calls
  follow steps; drifting nights scale the mean by exp(N(0, 0.05));
* tokens and latency: log-normal (sd 0.35 and 0.3 on the log scale); drifting nights
  scale them by exp(N(0, 0.05)) and exp(N(0, 0.10));
* 1 % infra errors.

Suites of 5 and 50 scenarios x 1 and 3 models; young (1 night x 10 runs) and mature
(5 nights x 20 runs) baselines; N = 20 runs a night, escalation up to 3N. The tables
are printed as markdown (docs/calibration.md is this output). Seeded: the same
``--seed`` gives the same tables whatever ``--jobs``.

    .venv/bin/python benchmarks/calibrate_stats.py            # full
    .venv/bin/python benchmarks/calibrate_stats.py --quick    # a few minutes
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from evalrunner.live._record import CellKey, RunRecord
from evalrunner.stats import (
    Budget,
    CellBaseline,
    CellNight,
    EvidenceState,
    MetricResult,
    NightComparison,
    Tolerance,
    compare_night,
    drive,
    fit_references,
)

N = 20
PATHS: tuple[tuple[str, ...], ...] = (
    ("search", "read"),
    ("search",),
    ("lookup", "read"),
    ("search", "read", "read"),
)
NEW_PATH = ("browse", "browse")
STEPS_SIZE = 10.0
TOKEN_SD, LATENCY_SD = 0.35, 0.3
TOL = Tolerance()
NO_ESCALATION = Tolerance(escalate_to=1.0)
GATING = tuple(TOL.gating)


# ---------------------------------------------------------------------------
# Generators


@dataclass(frozen=True)
class Profile:
    """How one scenario x model behaves (one night's parameters, or its long-run ones)."""

    p_pass: float = 0.9
    p_skip: float = 0.03
    p_crash: float = 0.01
    p_infra: float = 0.01
    shares: tuple[float, ...] = (0.7, 0.15, 0.1, 0.05)
    new_path: float = 0.0
    steps: float = 5.0
    tokens: float = 1.0
    latency: float = 1.0

    def changed(self, change: str, night: int) -> Profile:
        """This profile with ``change`` applied on season night ``night`` (1-based)."""
        if change == "success":
            return replace(self, p_pass=0.6)
        if change == "skip":
            rest = 1 - self.p_skip - self.p_crash
            return replace(self, p_skip=0.4, p_pass=self.p_pass * (0.6 - self.p_crash) / rest)
        if change == "path":
            return replace(self, shares=(0.3, 0.35, 0.23, 0.12))
        if change == "steps":
            return replace(self, steps=7.0)
        if change == "tokens":
            return replace(self, tokens=1.5)
        if change == "new path":
            return replace(self, new_path=1.0)
        if change == "+10 steps":
            return replace(self, steps=self.steps + 10)
        if change == "persistent 0.9->0.8":
            return replace(self, p_pass=self.p_pass - 0.1)
        if change == "decline 0.01/night":
            return replace(self, p_pass=self.p_pass - 0.01 * night)
        return self

    def night(self, rng: np.random.Generator, drift: bool) -> Profile:
        """One night's parameters: the profile itself on a quiet endpoint, drifted otherwise."""
        if not drift:
            return self
        skip = min(0.5, max(0.0, self.p_skip + rng.uniform(-0.02, 0.02)))
        top = 1 - skip - self.p_crash
        return replace(
            self,
            p_pass=min(top - 0.005, max(0.02, self.p_pass + rng.uniform(-0.10, 0.10))),
            p_skip=skip,
            shares=tuple(rng.dirichlet(200 * np.asarray(self.shares))),
            steps=self.steps * math.exp(rng.normal(0, 0.05)),
            tokens=self.tokens * math.exp(rng.normal(0, 0.05)),
            latency=self.latency * math.exp(rng.normal(0, 0.10)),
        )


def null_profile(rng: np.random.Generator) -> Profile:
    """An unchanged scenario: rates, paths and sizes vary from scenario to scenario."""
    usual = rng.uniform(0.5, 0.85)
    rest = 1 - usual
    skip = rng.uniform(0.02, 0.12)
    return Profile(
        p_pass=rng.uniform(0.7, 0.97) * (1 - skip - 0.01),
        p_skip=skip,
        shares=(usual, 0.5 * rest, 0.3 * rest, 0.2 * rest),
        steps=rng.uniform(3, 8),
        tokens=rng.uniform(0.5, 2),
    )


_FIELDS = frozenset(RunRecord.model_fields)


def _record(values: dict[str, object]) -> RunRecord:
    """A RunRecord from trusted generator values, as model_construct builds it but ~6x faster.

    The calibration builds ~20,000 records per 50 x 3 night; :func:`check_records`
    validates a sample of them against the model before anything is measured.
    """
    record = RunRecord.__new__(RunRecord)
    object.__setattr__(record, "__dict__", values)
    object.__setattr__(record, "__pydantic_fields_set__", _FIELDS)
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


def check_records() -> None:
    """The fast construction gives records that validate and compare equal to validated ones."""
    rng = np.random.default_rng(0)
    for record in draw(Profile(), CellKey("s", "m"), rng, 50, 0):
        assert RunRecord.model_validate(record.model_dump()) == record


@dataclass
class Batch:
    """Runs of one night drawn up front (so procedures compare on the same runs), built on demand."""

    p: Profile
    key: CellKey
    outcome: list[str]
    tools: list[tuple[str, ...]]
    steps: list[int]
    prompt: list[int]
    completion: list[int]
    latency: list[float]
    wrong: list[str]

    @classmethod
    def draw(cls, p: Profile, key: CellKey, rng: np.random.Generator, n: int) -> Batch:
        u = rng.random(n)
        cut = np.cumsum([p.p_infra, (1 - p.p_infra) * p.p_skip, (1 - p.p_infra) * p.p_crash])
        pass_cut = cut[-1] + (1 - p.p_infra) * p.p_pass
        outcome = np.select(
            [u < cut[0], u < cut[1], u < cut[2], u < pass_cut],
            ["infra_error", "skipped", "crashed", "passed"],
            "failed",
        )
        path = rng.choice(len(PATHS), n, p=np.asarray(p.shares) / sum(p.shares))
        new = rng.random(n) < p.new_path
        mean = max(p.steps, 1e-6)
        steps = np.maximum(1, rng.negative_binomial(STEPS_SIZE, STEPS_SIZE / (STEPS_SIZE + mean), n))
        return cls(
            p,
            key,
            [str(o) for o in outcome],
            [NEW_PATH if new[i] else PATHS[path[i]] for i in range(n)],
            [int(s) for s in steps],
            [int(v) for v in 1500 * p.tokens * np.exp(rng.normal(0, TOKEN_SD, n))],
            [int(v) for v in 300 * p.tokens * np.exp(rng.normal(0, TOKEN_SD, n))],
            [float(v) for v in 4 * p.latency * np.exp(rng.normal(0, LATENCY_SD, n))],
            [str(w) for w in rng.choice(["Lyon", "Nice"], n)],
        )

    def records(self, start: int, stop: int) -> list[RunRecord]:
        key = self.key
        return [
            _record(
                {
                    "run_id": f"{key.scenario}/{key.model}/{i}",
                    "suite": "calibration",
                    "scenario": key.scenario,
                    "model": key.model,
                    "index": i,
                    "outcome": self.outcome[i],
                    "reason": None,
                    "step_count": self.steps[i],
                    "llm_calls": self.steps[i],
                    "tool_calls": len(self.tools[i]),
                    "tools": list(self.tools[i]),
                    "subagent_count": 0,
                    "crashed": self.outcome[i] == "crashed",
                    "prompt_tokens": self.prompt[i],
                    "completion_tokens": self.completion[i],
                    "final_answer": "Paris" if self.outcome[i] == "passed" else self.wrong[i],
                    "content_hash": None,
                    "latency_s": self.latency[i],
                    "attempts": 1,
                    "started_at": None,
                    "checks": {},
                }
            )
            for i in range(start, min(stop, len(self.outcome)))
        ]


def draw(p: Profile, key: CellKey, rng: np.random.Generator, n: int, start: int) -> list[RunRecord]:
    """n runs of one night with parameters ``p``."""
    return Batch.draw(p, key, rng, n).records(0, n)


# ---------------------------------------------------------------------------
# One night of a suite, several procedures on the same runs


@dataclass(frozen=True)
class Procedure:
    """How tonight's runs are spent."""

    name: str
    tolerance: Tolerance
    adaptive: bool = False


FIXED = Procedure("fixed N", NO_ESCALATION)
ESCALATE = Procedure("escalation", TOL)
ADAPTIVE = Procedure("adaptive + escalation", TOL, adaptive=True)
ADAPTIVE_ONLY = Procedure("adaptive", NO_ESCALATION, adaptive=True)


@dataclass(frozen=True)
class Suite:
    scenarios: int
    models: int

    @property
    def label(self) -> str:
        return f"{self.scenarios}x{self.models}"

    def keys(self) -> list[CellKey]:
        return [CellKey(f"s{s:02d}", f"m{m}") for s in range(self.scenarios) for m in range(self.models)]


@dataclass(frozen=True)
class Night:
    """What one procedure gave on one night, for the tables."""

    null_flagged: bool
    """Some unchanged cell failed the night."""
    changed_metrics: frozenset[str]
    """Metrics of the changed cell flagged (gating failures and flagged diagnostics)."""
    changed_gating: bool
    runs_null: float
    """Mean runs per unchanged cell."""
    runs_changed: int
    ok: dict[str, float]
    """Per gating metric: share of unchanged cells with verdict ok."""
    mde: dict[str, float]
    """Changed cell: reported MDE per metric (where reported)."""
    young_flags: bool = False
    """Some unchanged cell got a regression/changed verdict (young baselines: not gating)."""


@dataclass(frozen=True)
class NightTask:
    seed: int
    suite: Suite
    change: str
    drift: bool
    nights: int
    runs_per_night: int
    procedures: tuple[Procedure, ...]


def _cells(task: NightTask, rng: np.random.Generator) -> tuple[list[CellKey], dict[CellKey, Profile]]:
    keys = task.suite.keys()
    profiles = {k: (Profile() if i == 0 else null_profile(rng)) for i, k in enumerate(keys)}
    return keys, profiles


def one_night(task: NightTask) -> dict[str, Night]:
    """A fresh baseline and one night; every procedure in ``task`` on the same runs."""
    rng = np.random.default_rng(task.seed)
    keys, profiles = _cells(task, rng)
    baselines = {
        k: [
            draw(profiles[k].night(rng, task.drift), k, rng, task.runs_per_night, 0)
            for _ in range(task.nights)
        ]
        for k in keys
    }
    pools = {}
    for i, k in enumerate(keys):
        tonight = profiles[k].changed(task.change, 1) if i == 0 else profiles[k]
        pools[k] = Batch.draw(tonight.night(rng, task.drift), k, rng, 3 * N)
    return {
        proc.name: _procedure(proc, keys, baselines, pools, task) for proc in task.procedures
    }


def _procedure(
    proc: Procedure,
    keys: list[CellKey],
    baselines: dict[CellKey, list[list[RunRecord]]],
    pools: dict[CellKey, Batch],
    task: NightTask,
) -> Night:
    cells = [CellBaseline(k, proc.tolerance, baselines[k], "anchor") for k in keys]
    refs = fit_references(cells)
    tonight = {}
    for k in keys:
        budget = Budget.of(proc.tolerance, N, cells=len(keys), adaptive=proc.adaptive)
        tonight[k] = drive(refs[k], budget, _feeder(pools[k])).records
    result = compare_night([CellNight(c, tonight[c.key]) for c in cells], refs)
    return _summarise(result, keys, tonight)


def _feeder(pool: Batch) -> Callable[[int], list[RunRecord]]:
    used = [0]

    def run_more(k: int) -> list[RunRecord]:
        start = used[0]
        used[0] += k
        return pool.records(start, start + k)

    return run_more


def _flags(results: Sequence[MetricResult]) -> frozenset[str]:
    return frozenset(r.metric for r in results if r.verdict in ("regression", "changed"))


def _summarise(result: NightComparison, keys: list[CellKey], tonight: dict[CellKey, list[RunRecord]]) -> Night:
    by_cell = {c.key: c for c in result.cells}
    first = by_cell[keys[0]]
    nulls = [by_cell[k] for k in keys[1:]]
    ok = {
        m: float(np.mean([any(r.metric == m and r.verdict == "ok" for r in c.results) for c in nulls]))
        for m in GATING
    } if nulls else {}
    return Night(
        null_flagged=any(r.fails_night for c in nulls for r in c.results),
        changed_metrics=_flags(first.results),
        changed_gating=any(r.fails_night for r in first.results),
        runs_null=float(np.mean([len(tonight[k]) for k in keys[1:]])) if nulls else 0.0,
        runs_changed=len(tonight[keys[0]]),
        ok=ok,
        mde={r.metric: r.mde for r in first.results if r.mde is not None},
        young_flags=any(r.verdict in ("regression", "changed") for c in nulls for r in c.results),
    )


# ---------------------------------------------------------------------------
# Seasons: one anchored baseline, night after night, evidence carried


@dataclass(frozen=True)
class SeasonTask:
    seed: int
    suite: Suite
    change: str
    nights: int
    baseline_nights: int
    baseline_runs: int
    drift: bool


@dataclass(frozen=True)
class Season:
    """Per cell: the first night flagged by tonight's test, and by the evidence (0 = never)."""

    first_nightly: tuple[int, ...]
    first_evidence: tuple[int, ...]
    runs: float


def one_season(task: SeasonTask) -> Season:
    rng = np.random.default_rng(task.seed)
    keys = task.suite.keys()
    profiles = {k: (Profile() if i == 0 else null_profile(rng)) for i, k in enumerate(keys)}
    nights = {
        k: [
            draw(profiles[k].night(rng, task.drift), k, rng, task.baseline_runs, 0)
            for _ in range(task.baseline_nights)
        ]
        for k in keys
    }
    cells = [CellBaseline(k, TOL, nights[k], "anchor") for k in keys]
    refs = fit_references(cells)
    evidence: dict[CellKey, EvidenceState | None] = dict.fromkeys(keys)
    nightly = dict.fromkeys(keys, 0)
    accumulated = dict.fromkeys(keys, 0)
    runs = 0
    for night in range(1, task.nights + 1):
        tonight = {}
        for i, k in enumerate(keys):
            profile = profiles[k].changed(task.change, night) if i == 0 else profiles[k]
            pool = Batch.draw(profile.night(rng, task.drift), k, rng, 3 * N)
            budget = Budget.of(TOL, N, cells=len(keys))
            tonight[k] = drive(refs[k], budget, _feeder(pool), evidence=evidence[k]).records
            runs += len(tonight[k])
        result = compare_night([CellNight(c, tonight[c.key], evidence[c.key]) for c in cells], refs)
        for cell in result.cells:
            evidence[cell.key] = cell.evidence
            failing = [r for r in cell.results if r.fails_night]
            if any(r.flagged_by == "tonight" for r in failing) and not nightly[cell.key]:
                nightly[cell.key] = night
            if any(r.flagged_by == "evidence" for r in failing) and not accumulated[cell.key]:
                accumulated[cell.key] = night
    return Season(
        tuple(nightly[k] for k in keys),
        tuple(accumulated[k] for k in keys),
        runs / (task.nights * len(keys)),
    )


# ---------------------------------------------------------------------------
# Running many, in parallel, reproducibly


def seeds(base: int, label: str, count: int) -> list[int]:
    """Independent seeds per table row: the row's label is part of the seed."""
    digest = sum(ord(c) * 31**i for i, c in enumerate(label)) % (2**31)
    ss = np.random.SeedSequence([base, digest])
    return [int(s.generate_state(1)[0]) for s in ss.spawn(count)]


def run_all(fn: Callable[..., object], tasks: Sequence[object], jobs: int) -> list[object]:
    if jobs <= 1:
        return [fn(t) for t in tasks]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(fn, tasks, chunksize=max(1, len(tasks) // (8 * jobs))))


def pct(hits: int, n: int) -> str:
    if n == 0:
        return "-"
    low, high = wilson_ci(hits, n)
    return f"{100 * hits / n:.1f} ({100 * low:.0f}-{100 * high:.0f})"


def wilson_ci(k: int, n: int) -> tuple[float, float]:
    from evalrunner.stats import wilson

    return wilson(k, n)


@dataclass
class Config:
    seed: int
    jobs: int
    nights: int
    big_nights: int
    seasons: int
    aa_seasons: int
    quick: bool
    out: list[str] = field(default_factory=list)

    def emit(self, line: str = "") -> None:
        print(line, flush=True)


def aa_table(cfg: Config) -> None:
    cfg.emit("## A/A: nights with any gating flag when nothing changed (N = 20)\n")
    cfg.emit(
        "Share of nights on which some unchanged scenario x model fails the night, in % "
        "(95 % Wilson interval). Escalation on (up to 3N). Mature baseline: 5 nights x 20 runs; "
        "young: 1 night x 10 runs (too young to gate: the column shows nights with any "
        "regression/changed verdict, which is reported but fails nothing). Runs/cell: mean runs "
        "an unchanged cell used (20 without escalation).\n"
    )
    cfg.emit("| suite | endpoint | nights | mature: failed nights | runs/cell | young: nights with a flag (not gating) |")
    cfg.emit("|---|---|---|---|---|---|")
    for suite in (Suite(5, 1), Suite(5, 3), Suite(50, 1), Suite(50, 3)):
        count = cfg.nights if suite.scenarios == 5 else cfg.big_nights
        for drift in (False, True):
            label = f"aa {suite.label} {drift}"
            mature = [NightTask(s, suite, "none", drift, 5, 20, (ESCALATE,)) for s in seeds(cfg.seed, label, count)]
            young = [NightTask(s, suite, "none", drift, 1, 10, (ESCALATE,)) for s in seeds(cfg.seed, label + "y", count)]
            got = [r["escalation"] for r in run_all(one_night, mature, cfg.jobs)]  # type: ignore[index]
            got_y = [r["escalation"] for r in run_all(one_night, young, cfg.jobs)]  # type: ignore[index]
            flagged = sum(n.null_flagged or n.changed_gating for n in got)
            flagged_y = sum(n.young_flags or bool(n.changed_metrics) for n in got_y)
            runs = np.mean([n.runs_null for n in got])
            endpoint = "drift" if drift else "quiet"
            cfg.emit(f"| {suite.label} | {endpoint} | {count} | {pct(flagged, count)} | {runs:.1f} | {pct(flagged_y, count)} |")
            if suite.label == "5x1" and not drift:
                _ok_rates(cfg, got)
    cfg.emit()


def _ok_rates(cfg: Config, nights: list[Night]) -> None:
    rates = {m: np.mean([n.ok[m] for n in nights if n.ok]) for m in GATING}
    cfg.out.append(
        "\"ok\" verdicts on unchanged scenario-nights (5x1, quiet, mature, escalation on): "
        + ", ".join(f"{m} {100 * v:.0f} %" for m, v in rates.items())
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--quick", action="store_true", help="fewer nights (minutes, not hours)")
    parser.add_argument("--only", default="", help="comma-separated tables: aa,power,blatant,seasons,mde,adaptive")
    args = parser.parse_args(argv)
    cfg = Config(
        seed=args.seed,
        jobs=args.jobs,
        nights=100 if args.quick else 1000,
        big_nights=30 if args.quick else 200,
        seasons=40 if args.quick else 200,
        aa_seasons=10 if args.quick else 100,
        quick=args.quick,
    )
    tables = {
        "aa": aa_table,
    }
    wanted = [t for t in (args.only.split(",") if args.only else tables) if t]
    started = time.time()
    cfg.emit(f"# Calibration (seed {cfg.seed}{', --quick' if cfg.quick else ''})\n")
    for name in wanted:
        tables[name](cfg)
    for line in cfg.out:
        cfg.emit(f"- {line}")
    cfg.emit(f"\n_{time.time() - started:.0f} s on {cfg.jobs} processes_")
    return 0


if __name__ == "__main__":
    sys.exit(main())


_ = Iterator
