"""Synthetic run history for the report tests and ``benchmarks/bench_report.py``.

:func:`build_entries` makes one :class:`~evalrunner.history._store.HistoryEntry` per night
for S scenarios x M models x N runs, seeded, with plausible outcomes, tools,
tokens, skip and infra reasons, typical trajectories, baseline summaries and
per-metric verdicts. Verdicts come either from the real statistics
(``real_stats=True``: :func:`stats_bridges.compare_scenario` + ``finalize``, about
30 ms per scenario x model, fine for a handful of nights) or from a fast
normal-approximation stand-in (same fields, verdicts still decided by
``stats.finalize``), which makes a year of a 50-scenario suite in seconds.

``hostile=True`` puts markup and script into everything a model or tool can
write (final answers, reasons, tool names, trajectory messages and tool output)
so tests can prove the report escapes it.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import stats_bridges as stats

from evalrunner import _clock as clock
from evalrunner.history._entry import BaselineSummary, HistoryEntry, Trajectory
from evalrunner.history._store import History, append
from evalrunner.live._results import Manifest
from evalrunner.stats._evidence_state import EvidenceState, MetricEvidence
from evalrunner.suite._metrics import DEFAULT_GATING, EFFECT_LABELS, sequence_label
from evalrunner.suite._record import CellKey, RunRecord

HOSTILE_SCRIPT = "<script>window.__pwned=1</script>"
HOSTILE_IMG = '<img src=x onerror="window.__pwned=1">'
HOSTILE_BREAKOUT = "</pre></div></details></td></tr></table></svg>"
HOSTILE = f"{HOSTILE_SCRIPT}{HOSTILE_IMG}{HOSTILE_BREAKOUT}<b>bold?</b> | pipe {{{{ 7*7 }}}}"
"""Everything a hostile model could write, in one string."""
HOSTILE_TOOL = '<svg onload="window.__pwned=1">tool'

TOOLS = ("search", "fetch_page", "lookup_capital", "calculator", "summarize", "write_file")
MODELS = ("openai/gpt-4o-mini", "anthropic/claude-3-5-haiku", "ollama/llama3.2")
SKIP_REASONS = (
    "rate limited: daily quota exhausted",
    "requires network access",
    "tool sandbox unavailable",
)
INFRA_REASONS = ("endpoint returned 503 Service Unavailable", "timeout after 60 s")
_TOL = stats.Tolerance()


@dataclass(frozen=True)
class _Profile:
    """How one scenario x model behaves on a normal night."""

    scenario: str
    model: str
    p_pass: float
    modal: tuple[str, ...]
    alt: tuple[str, ...]
    p_alt: float
    p_skip: float
    p_infra: float
    p_crash: float
    prompt_mu: float
    answer: str

    def regressed(self) -> _Profile:
        """A clearly worse agent: fails more, takes a longer and different path."""
        return _Profile(
            self.scenario,
            self.model,
            max(0.05, self.p_pass - 0.6),
            (*self.alt, "search", "search"),
            self.modal,
            0.2,
            self.p_skip,
            self.p_infra,
            self.p_crash,
            self.prompt_mu + 0.4,
            self.answer,
        )


def scenario_name(i: int) -> str:
    return f"scenario-{i:02d}"


def model_name(j: int) -> str:
    return MODELS[j] if j < len(MODELS) else f"openai/model-{j}"


def _profiles(
    scenarios: int, models: int, rng: np.random.Generator, hostile: bool
) -> list[_Profile]:
    out = []
    for i in range(scenarios):
        k = int(rng.integers(1, 4))
        modal = tuple(str(t) for t in rng.choice(TOOLS, size=k, replace=False))
        alt = modal[:-1] if k > 1 else (*modal, "summarize")
        if hostile and i == 0:
            modal = (HOSTILE_TOOL, *modal)
        answer = HOSTILE if hostile and i == 0 else f"Answer {i}: Paris"
        for j in range(models):
            out.append(
                _Profile(
                    scenario_name(i),
                    model_name(j),
                    p_pass=float(rng.uniform(0.75, 0.97)),
                    modal=modal,
                    alt=alt,
                    p_alt=float(rng.uniform(0.0, 0.15)),
                    p_skip=float(rng.choice([0.0, 0.03, 0.08])),
                    p_infra=float(rng.choice([0.0, 0.0, 0.04])),
                    p_crash=float(rng.choice([0.0, 0.0, 0.01])),
                    prompt_mu=float(rng.uniform(5.5, 7.5)),
                    answer=answer,
                )
            )
    return out


def _records(
    prof: _Profile, n: int, suite: str, rng: np.random.Generator, started: str, hostile: bool
) -> list[RunRecord]:
    u = rng.random((n, 4))
    out = []
    slug = prof.model.replace("/", "-")
    for i in range(n):
        reason: str | None = None
        tools: tuple[str, ...] = ()
        if u[i, 0] < prof.p_infra:
            outcome, reason = "infra_error", INFRA_REASONS[int(u[i, 1] * len(INFRA_REASONS))]
        elif u[i, 0] < prof.p_infra + prof.p_skip:
            outcome = "skipped"
            reason = (
                HOSTILE
                if hostile and i % 2 == 0
                else SKIP_REASONS[int(u[i, 1] * len(SKIP_REASONS))]
            )
        elif u[i, 0] < prof.p_infra + prof.p_skip + prof.p_crash:
            outcome, reason = "crashed", "ValueError: tool returned malformed JSON"
        else:
            outcome = "passed" if u[i, 2] < prof.p_pass else "failed"
            reason = None if outcome == "passed" else "check 'answer_matches' failed"
            tools = prof.alt if u[i, 3] < prof.p_alt else prof.modal
        ran = outcome in ("passed", "failed", "crashed")
        k = len(tools)
        prompt = (
            int(math.exp(prof.prompt_mu + 0.15 * rng.standard_normal()) * (1 + 0.3 * k))
            if ran
            else 0
        )
        completion = int(math.exp(4 + 0.3 * rng.standard_normal())) if ran else 0
        out.append(
            RunRecord(
                run_id=f"{prof.scenario}/{slug}/{i}",
                suite=suite,
                scenario=prof.scenario,
                model=prof.model,
                index=i,
                outcome=outcome,
                reason=reason,
                step_count=3 + 2 * k if ran else 0,
                llm_calls=k + 1 if ran else 0,
                tool_calls=k,
                tools=list(tools),
                crashed=outcome == "crashed",
                prompt_tokens=prompt,
                completion_tokens=completion,
                final_answer=prof.answer
                if outcome == "passed"
                else ("I could not find it." if ran else None),
                latency_s=round(math.exp(0.5 + 0.3 * rng.standard_normal()) * (1 + 0.5 * k), 3)
                if ran
                else 0.0,
                started_at=started,
                checks={"answer_matches": outcome == "passed"} if ran else {},
            )
        )
    return out


def trajectory(tools: Sequence[str], answer: str, *, hostile: bool = False) -> dict[str, Any]:
    """A small normalised ATIF trajectory calling ``tools`` in order, then answering."""
    steps: list[dict[str, Any]] = [
        {
            "step_id": 1,
            "source": "system",
            "message": "You are a helpful assistant. Use the tools.",
        },
        {"step_id": 2, "source": "user", "message": "What is the capital of France?"},
    ]
    for n, tool in enumerate(tools, start=1):
        result = HOSTILE if hostile else f"result of {tool}"
        steps.append(
            {
                "step_id": len(steps) + 1,
                "source": "agent",
                "message": HOSTILE if hostile and n == 1 else "",
                "llm_call_count": 1,
                "metrics": {"prompt_tokens": 200 + 50 * n, "completion_tokens": 8},
                "tool_calls": [
                    {
                        "tool_call_id": f"call_{n}",
                        "function_name": tool,
                        "arguments": {"q": "France"},
                    }
                ],
                "observation": {"results": [{"source_call_id": f"call_{n}", "content": result}]},
            }
        )
        steps.append(
            {"step_id": len(steps) + 1, "source": "user", "message": f"Tool results:\n- {result}"}
        )
    steps.append(
        {
            "step_id": len(steps) + 1,
            "source": "agent",
            "message": answer,
            "llm_call_count": 1,
            "metrics": {"prompt_tokens": 300, "completion_tokens": 12},
        }
    )
    return {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "synthetic", "version": "0", "model_name": "synthetic"},
        "steps": steps,
    }


# ---------------------------------------------------------------------------
# Fast stand-in for stats.compare_scenario: same fields, normal approximations.

_Z = 1.6448536269514722  # one-sided 5 %
_Z_POWER = 0.8416212335729143


@functools.cache
def _wilson(k: int, n: int) -> tuple[float, float]:
    return stats.wilson(k, n, _TOL.ci_level)


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample sd in plain Python: faster than numpy for a few dozen values."""
    n = len(values)
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, math.sqrt(var)


def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def _p_pair(z: float, direction: str) -> tuple[float, float]:
    """(harmful p, good p) for a z statistic of night - baseline."""
    if direction == "lower":
        return _phi(z), 1 - _phi(z)
    if direction == "higher":
        return 1 - _phi(z), _phi(z)
    return min(1.0, 2 * min(_phi(z), 1 - _phi(z))), 1.0


def _fast_metrics(
    base: list[RunRecord], night: list[RunRecord], scenario: str, model: str
) -> list[stats.MetricResult]:
    b = [r for r in base if r.outcome != "infra_error"]
    n = [r for r in night if r.outcome != "infra_error"]
    bv = [r for r in b if r.outcome in ("passed", "failed")]
    nv = [r for r in n if r.outcome in ("passed", "failed")]
    common = {
        "scenario": scenario,
        "model": model,
        "baseline_infra": len(base) - len(b),
        "night_attempted": len(night),
        "night_infra": len(night) - len(n),
        "ci_level": _TOL.ci_level,
    }
    out: list[stats.MetricResult] = []

    def result(metric: str, **values: Any) -> None:
        kind, direction = stats._metric_info(metric)
        out.append(
            stats.MetricResult(
                metric=metric,
                kind=kind,
                direction=direction,
                gating=_TOL.is_gating(metric),
                margin=_TOL.margin_for(metric),
                effect_label=EFFECT_LABELS[kind],
                **common,
                **values,
            )
        )

    def binary(metric: str, kb: int, nb: int, kn: int, nn: int, note: str | None = None) -> None:
        if not nb or not nn:
            result(metric, baseline_n=nb, night_n=nn, note="no runs on one side")
            return
        _, direction = stats._metric_info(metric)
        pb, pn = kb / nb, kn / nn
        effect, low, high = stats.newcombe_diff(kn, nn, kb, nb, _TOL.ci_level)
        pool = (kb + kn) / (nb + nn)
        se = math.sqrt(pool * (1 - pool) * (1 / nb + 1 / nn))
        p, p_good = _p_pair(effect / se, direction) if se > 0 else (1.0, 1.0)
        spread = math.sqrt(max(pb * (1 - pb), 0.01) * (1 / nb + 1 / nn))
        room = (
            _TOL.margin_for(metric) ** 2 / ((_Z + _Z_POWER) ** 2 * max(pb * (1 - pb), 0.01))
            - 1 / nb
        )
        result(
            metric,
            baseline_estimate=pb,
            baseline_ci=_wilson(kb, nb),
            baseline_n=nb,
            night_estimate=pn,
            night_ci=_wilson(kn, nn),
            night_n=nn,
            effect=effect,
            effect_ci=(low, high),
            test="normal approximation (synthetic)",
            p=p,
            p_improvement=p_good,
            p_min=1.0 if se == 0 else None,
            mde=min(1.0, (_Z + _Z_POWER) * spread),
            runs_needed=None if room <= 0 else max(2, math.ceil(1 / room)),
            note=note,
        )

    def counted(rows: list[RunRecord], outcome: str) -> int:
        return sum(r.outcome == outcome for r in rows)

    binary("success_rate", counted(b, "passed"), len(b), counted(n, "passed"), len(n))
    binary("crash_rate", counted(b, "crashed"), len(b), counted(n, "crashed"), len(n))
    binary("skip_rate", counted(b, "skipped"), len(b), counted(n, "skipped"), len(n))
    binary("success_rate_valid", counted(b, "passed"), len(bv), counted(n, "passed"), len(nv))
    answers = Counter(r.final_answer for r in bv)
    if answers:
        modal_answer = answers.most_common(1)[0][0]
        binary(
            "final_answer_match",
            answers[modal_answer],
            len(bv),
            sum(r.final_answer == modal_answer for r in nv),
            len(nv),
            note=f"share of runs answering the baseline's usual {modal_answer!r}",
        )
    firsts = Counter(r.tools[0] if r.tools else None for r in bv)
    modal_first = firsts.most_common(1)[0][0] if firsts else None
    binary(
        "first_tool",
        firsts[modal_first],
        len(bv),
        sum((r.tools[0] if r.tools else None) == modal_first for r in nv),
        len(nv),
    )

    seq_b = [sequence_label(tuple(r.tools)) for r in bv]
    seq_n = [sequence_label(tuple(r.tools)) for r in nv]
    if seq_b and seq_n:
        labels = sorted(set(seq_b) | set(seq_n))
        cb, cn = Counter(seq_b), Counter(seq_n)
        vb, vn = np.array([cb[x] for x in labels], float), np.array([cn[x] for x in labels], float)
        js = stats.js_distance(vn, vb)
        modal = cb.most_common(1)[0][0]
        p = 1.0
        if len(labels) > 1:
            from scipy.special import chdtrc

            table = np.array([vb, vn]) + 0.5
            expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
            p = float(chdtrc(len(labels) - 1, ((table - expected) ** 2 / expected).sum()))
        result(
            "tool_sequence",
            baseline_estimate=cb[modal] / len(seq_b),
            baseline_n=len(seq_b),
            night_estimate=cn[modal] / len(seq_n),
            night_n=len(seq_n),
            effect=js,
            effect_ci=(max(0.0, js - 0.15), min(1.0, js + 0.15)),
            test="chi-square approximation (synthetic)",
            p=p,
            p_min=None if len(labels) > 1 else 1.0,
            mde=0.25,
            runs_needed=20,
            note=f"estimates are the share of the baseline's modal sequence ({modal})",
        )
    for metric in ("step_count", "llm_calls", "tool_calls"):
        xb = [float(getattr(r, metric)) for r in bv]
        xn = [float(getattr(r, metric)) for r in nv]
        if not xb or not xn:
            continue
        (mb, sb), (mn, sn) = _mean_sd(xb), _mean_sd(xn)
        delta = stats.cliffs_delta(xn, xb)
        se = math.sqrt((len(xb) + len(xn) + 1) / (3 * len(xb) * len(xn)))
        p, p_good = _p_pair(delta / se, "higher")
        result(
            metric,
            baseline_estimate=mb,
            baseline_ci=(mb - _Z * sb / math.sqrt(len(xb)), mb + _Z * sb / math.sqrt(len(xb))),
            baseline_n=len(xb),
            night_estimate=mn,
            night_ci=(mn - _Z * sn / math.sqrt(len(xn)), mn + _Z * sn / math.sqrt(len(xn))),
            night_n=len(xn),
            effect=delta,
            effect_ci=(max(-1.0, delta - _Z * se), min(1.0, delta + _Z * se)),
            mean_diff=mn - mb,
            test="normal approximation of Cliff's delta (synthetic)",
            p=p,
            p_improvement=p_good,
            p_min=1.0 if len(set(xb + xn)) == 1 else None,
            mde=min(1.0, (_Z + _Z_POWER) * se),
            runs_needed=12,
        )
    for metric in ("prompt_tokens", "completion_tokens", "latency_s"):
        offset = stats.LOG_OFFSETS[metric]
        lb = [math.log(getattr(r, metric) + offset) for r in bv]
        ln = [math.log(getattr(r, metric) + offset) for r in nv]
        if len(lb) < 2 or len(ln) < 2:
            continue
        (mb, sb), (mn, sn) = _mean_sd(lb), _mean_sd(ln)
        diff = mn - mb
        se = math.sqrt(sb * sb / len(lb) + sn * sn / len(ln)) or 1e-9
        p, p_good = _p_pair(diff / se, "higher")
        hb, hn = _Z * sb / math.sqrt(len(lb)), _Z * sn / math.sqrt(len(ln))
        result(
            metric,
            baseline_estimate=math.exp(mb) - offset,
            baseline_ci=(math.exp(mb - hb) - offset, math.exp(mb + hb) - offset),
            baseline_n=len(lb),
            night_estimate=math.exp(mn) - offset,
            night_ci=(math.exp(mn - hn) - offset, math.exp(mn + hn) - offset),
            night_n=len(ln),
            effect=math.exp(diff),
            effect_ci=(math.exp(diff - _Z * se), math.exp(diff + _Z * se)),
            test="Welch t on log values (synthetic)",
            p=p,
            p_improvement=p_good,
            p_min=0.0,
            mde=math.exp(min((_Z + _Z_POWER) * se, 50.0)),
            runs_needed=8,
        )
    for tool in sorted({t for r in bv + nv for t in r.tools}):
        binary(
            f"tool_used:{tool}",
            sum(tool in r.tools for r in bv),
            len(bv),
            sum(tool in r.tools for r in nv),
            len(nv),
        )
    return out


# ---------------------------------------------------------------------------


def night_time(start: str, night: int) -> str:
    """The time ``night`` nights after ``start`` (ISO 8601, UTC)."""
    t0 = clock.parse(start)
    return (t0 + _dt.timedelta(days=night)).isoformat(timespec="seconds").replace("+00:00", "Z")


def _typical(records: list[RunRecord], hostile: bool) -> Trajectory | None:
    valid = [r for r in records if r.outcome in ("passed", "failed")]
    if not valid:
        return None
    modal = Counter(tuple(r.tools) for r in valid).most_common(1)[0][0]
    run = next(r for r in valid if tuple(r.tools) == modal)
    return trajectory(run.tools, run.final_answer or "", hostile=hostile)


def build_entries(**kwargs: Any) -> list[HistoryEntry]:
    """One entry per night, oldest first (see :func:`iter_entries` for the arguments)."""
    return list(iter_entries(**kwargs))


def iter_entries(
    *,
    nights: int = 5,
    scenarios: int = 3,
    models: int = 1,
    runs: int = 10,
    baseline_runs: int = 30,
    suite: str = "demo",
    seed: int = 0,
    start: str = "2025-01-01T02:00:00Z",
    hostile: bool = False,
    regressed: Sequence[int] = (0,),
    regress_nights: int = 2,
    real_stats: bool = False,
    n_resamples: int = 200,
    evidence: bool = False,
) -> Iterator[HistoryEntry]:
    """One entry per night, oldest first, each made as it is asked for (a big history
    is written night by night without holding it whole).

    Scenarios whose index is in ``regressed`` behave clearly worse on the last
    ``regress_nights`` nights (lower success, a different, longer tool path, more
    tokens), so those nights carry regression verdicts. ``evidence``: each night also
    carries every cell's accumulated evidence (stand-in sums), as a night's head does.
    """
    rng = np.random.default_rng(seed)
    profiles = _profiles(scenarios, models, rng, hostile)
    base_records = {
        (p.scenario, p.model): _records(
            p, baseline_runs, suite, rng, night_time(start, -1), hostile
        )
        for p in profiles
    }
    base_frames = (
        {k: pd.DataFrame([r.model_dump() for r in v]) for k, v in base_records.items()}
        if real_stats
        else {}
    )
    summaries = {
        CellKey(s, m): BaselineSummary.model_validate(
            stats.summarize(pd.DataFrame([r.model_dump() for r in recs]))
        )
        for (s, m), recs in base_records.items()
    }
    base_typical = {
        CellKey(s, m): t
        for (s, m), recs in base_records.items()
        if (t := _typical(recs, hostile)) is not None
    }
    for night in range(nights):
        created = night_time(start, night)
        records: list[RunRecord] = []
        results: list[stats.MetricResult] = []
        typical: dict[CellKey, Trajectory] = {}
        for prof in profiles:
            index = int(prof.scenario.rsplit("-", 1)[1])
            bad = index in regressed and night >= nights - regress_nights
            recs = _records(prof.regressed() if bad else prof, runs, suite, rng, created, hostile)
            records.extend(recs)
            key = (prof.scenario, prof.model)
            if real_stats:
                results.extend(
                    stats.compare_scenario(
                        base_frames[key],
                        pd.DataFrame([r.model_dump() for r in recs]),
                        scenario=prof.scenario,
                        model=prof.model,
                        seed=seed + night,
                        n_resamples=n_resamples,
                    )
                )
            else:
                results.extend(_fast_metrics(base_records[key], recs, prof.scenario, prof.model))
            if (t := _typical(recs, hostile)) is not None:
                typical[CellKey(prof.scenario, prof.model)] = t
        final = stats.finalize(results)
        yield HistoryEntry(
            suite=suite,
            created_at=created,
            manifest=Manifest(
                suite=suite,
                models=sorted({p.model for p in profiles}),
                runs={scenario_name(i): runs for i in range(scenarios)},
                scenarios={scenario_name(i): f"fingerprint-{i}" for i in range(scenarios)},
                started_at=created,
                ended_at=created,
                status="finished",
                evalrunner_version="0.0.0",
            ),
            records=records,
            verdicts=final,
            baselines=summaries,
            typical=typical,
            baseline_typical=base_typical,
            evidence=_evidence(profiles, night) if evidence else {},
        )


def _evidence(profiles: Sequence[_Profile], night: int) -> dict[CellKey, EvidenceState]:
    """Every cell's evidence after ``night`` (stand-in sums: their size is what matters here)."""
    sums = MetricEvidence(
        nights=night + 1, weight=20.0 * (night + 1), weighted_sum=0.1, z=0.3, boundary=3.1
    )
    return {
        CellKey(p.scenario, p.model): EvidenceState(
            anchor="anchor", nights=night + 1, metrics=dict.fromkeys(DEFAULT_GATING, sums)
        )
        for p in profiles
    }


def history_from_entries(entries: Sequence[HistoryEntry]) -> History:
    """The :class:`History` that ``load_history`` would return for these entries."""
    return History(sorted(entries, key=lambda e: e.created_at))


def make_history(**kwargs: Any) -> History:
    """``build_entries(**kwargs)`` as an in-memory History."""
    return history_from_entries(build_entries(**kwargs))


def write_history(root: str, entries: Sequence[HistoryEntry], *, parquet: bool = True) -> list[str]:
    """Append every entry under ``root`` as ``evalrunner run`` would (``parquet=False``: version 1 JSON)."""
    return [append(entry, root, parquet=parquet) for entry in entries]
