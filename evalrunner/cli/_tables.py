"""Plain-text tables for the terminal: the per-scenario run summary and the verdicts."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalrunner.cli._options import terminal_safe
from evalrunner.stats._metric_result import FAILING, UNCONFIRMED
from evalrunner.suite._cost import spent
from evalrunner.suite._metrics import DEFAULT_GATING, SCALES, metric, rank, sequence_label
from evalrunner.suite._record import OUTCOMES, CellKey, Outcome, RunRecord, group_records

if TYPE_CHECKING:
    from evalrunner.stats._metric_result import MetricResult


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A plain aligned text table."""

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        # Tool names and answers are the model's: never a terminal's escape sequence.
        return f"{v:.1f}" if isinstance(v, float) else terminal_safe(str(v))

    header = [title for _, title in columns]
    body = [[cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip() for b in body]
    return "\n".join(lines)


def _outcome_columns() -> list[tuple[str, str]]:
    """A column per outcome, titled with its label; the skips' reasons beside them."""
    columns = []
    for outcome in OUTCOMES:
        columns.append((outcome.traits.label, outcome.traits.label))
        if outcome is Outcome.SKIPPED:
            columns.append(("skip_reasons", "top skip reasons"))
    return columns


SUMMARY_COLUMNS = (
    ("scenario", "scenario"),
    ("model", "model"),
    ("n", "N"),
    *_outcome_columns(),
    ("mean_steps", metric("step_count").label),
    ("mean_tokens", "tokens"),
    ("cost", "cost"),
    ("pass_hat_3", "pass^3"),
    ("pass_at_3", "pass@3"),
    ("top_tools", "most common tools"),
)


def summary_rows(records: Sequence[RunRecord], *, measured: bool = True) -> list[dict[str, Any]]:
    """Per scenario x model: counts by outcome, top skip reasons, means, modal tool sequence.

    pass^k and pass@k count the runs that measured the agent (infra errors are
    the endpoint's); ``measured=False`` (an outage) leaves them out altogether.
    """
    return [_summary_row(cell, rs, measured) for cell, rs in group_records(records).items()]


def _summary_row(cell: CellKey, rs: Sequence[RunRecord], measured: bool) -> dict[str, Any]:
    from evalrunner.stats._summary import CellCounts  # numpy and scipy: not for --help

    counts = CellCounts.of(rs)
    valid = [r for r in rs if r.measured] or list(rs)
    seqs = Counter(sequence_label(r.tools) for r in valid)
    return {
        "scenario": cell.scenario,
        "model": cell.model,
        "n": len(rs),
        **_outcome_cells(counts.outcomes, rs),
        "mean_steps": sum(r.step_count for r in valid) / len(valid),
        "mean_tokens": sum(r.prompt_tokens + r.completion_tokens for r in valid) / len(valid),
        "cost": dollars(rs),
        "top_tools": seqs.most_common(1)[0][0],
        **_pass_k(counts.pass_k(3) if measured else None, 3),
    }


def dollars(records: Sequence[RunRecord]) -> str:
    """What ``records`` cost together (:func:`~evalrunner.endpoints._pricing.spent`)."""
    return spent([r.cost_usd for r in records])


def unpriced_line(records: Sequence[RunRecord]) -> str | None:
    """The models whose runs have no cost, and how to price them (None: every run priced)."""
    models = sorted({r.model for r in records if r.cost_usd is None})
    if not models:
        return None
    return (
        f"cost: unpriced for {', '.join(models)} (not in litellm's price table): give "
        "each a pricing: entry in the suite, USD per million tokens (suites/README.md)"
    )


def _outcome_cells(outcomes: Counter[str], rs: Sequence[RunRecord]) -> dict[str, Any]:
    """Runs per outcome, keyed by its label; the two most common skip reasons beside them."""
    skips = Counter(r.reason or "?" for r in rs if r.outcome == Outcome.SKIPPED)
    cells: dict[str, Any] = {}
    for outcome in OUTCOMES:
        cells[outcome.traits.label] = outcomes[outcome]
        if outcome is Outcome.SKIPPED:
            cells["skip_reasons"] = ", ".join(f"{k} x{v}" for k, v in skips.most_common(2))
    return cells


def _pass_k(pass_k: tuple[float, float] | None, k: int) -> dict[str, str]:
    """pass^k and pass@k as the table shows them; reported, not gated."""
    if pass_k is None:
        return {f"pass_hat_{k}": "-", f"pass_at_{k}": "-"}
    return {f"pass_hat_{k}": f"{pass_k[0]:.2f}", f"pass_at_{k}": f"{pass_k[1]:.2f}"}


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}"


def _ci(ci: tuple[float, float] | None) -> str:
    return f"[{_num(ci[0])}, {_num(ci[1])}]" if ci else ""


def verdict_columns(reference: str, candidate: str) -> tuple[tuple[str, str], ...]:
    """The verdict table's columns, naming the two sides compared."""
    return (
        ("scenario", "scenario"),
        ("model", "model"),
        ("metric", "metric"),
        ("verdict", "verdict"),
        ("baseline", f"{reference} (N)"),
        ("night", f"{candidate} (N)"),
        ("effect", "effect [interval]"),
        ("q", "q"),
        ("margin", "margin"),
        ("hint", "note"),
    )


VERDICT_COLUMNS = verdict_columns("baseline", "tonight")


@dataclass(frozen=True)
class Settles:
    """What settles an inconclusive row, in the words of what was compared."""

    reference: str
    """More of the reference side: needed first where no number of runs on the other
    would settle a row (and then runs too: the reference's growth only brings the row
    within reach of the other side's runs)."""
    candidate: str
    """More of the side compared with it."""
    pointer: str
    """Where to read more ({suite}: the suite's name); empty: nowhere."""


AGAINST_BASELINES = Settles(
    "more baseline nights", "runs", "`evalrunner plan --suite {suite}` says what settles them"
)
BETWEEN_DIRECTORIES = Settles("a larger A", "a larger B", "")
"""``compare A B``: A is one results directory, not a baseline that accepts nights."""


def verdict_rows(
    results: Sequence[MetricResult],
    *,
    all_metrics: bool = False,
    settles: Settles = AGAINST_BASELINES,
    attention_only: bool = False,
) -> list[dict[str, Any]]:
    """The rows of :func:`shown_results`, formatted (``attention_only``: those of them
    :func:`needs_attention`; :func:`folded` counts the others in a line)."""
    shown = shown_results(results, all_metrics=all_metrics)
    if attention_only:
        shown = [(r, young) for r, young in shown if needs_attention(r)]
    return [_verdict_row(r, young, settles) for r, young in shown]


def needs_attention(r: MetricResult) -> bool:
    """A row someone should read tonight: a flag or an unconfirmed change, a cell nothing
    measured, or an inconclusive row that more runs tonight could settle. The rest (ok, and
    what no number of runs tonight settles against this baseline) is counted in one line."""
    if _unmeasured(r) or r.unconfirmed or r.verdict in (*FAILING, "improvement"):
        return True
    return r.verdict == "inconclusive" and r.runs_needed is not None


def folded(results: Sequence[MetricResult], option: str) -> str:
    """The line for the table's rows that need no attention ('' when there are none)."""
    rest = [r for r, _ in shown_results(results) if not needs_attention(r)]
    if not rest:
        return ""
    ok = sum(r.verdict == "ok" for r in rest)
    parts = [f"{ok} rows ok"] if ok else []
    if len(rest) > ok:
        parts.append(f"{len(rest) - ok} inconclusive that no number of runs tonight settles")
    return f"{', '.join(parts)} ({option} lists every row)"


def shown_results(
    results: Sequence[MetricResult], *, all_metrics: bool = False
) -> list[tuple[MetricResult, bool]]:
    """(result, young) for the table: gating metrics always; diagnostics only when flagged or
    unconfirmed (or with ``all_metrics``).

    A cell whose baseline is too young to gate has no gating metric: its rows are the
    metrics that gate by default, marked "(young)", so what it would say still shows.
    """
    gating_cells = {(r.scenario, r.model) for r in results if r.gating}
    rows = []
    for r in results:
        young = (r.scenario, r.model) not in gating_cells and r.baseline_nights > 0
        if all_metrics or _shown(r, young):
            rows.append((r, young))
    return rows


def _shown(r: MetricResult, young: bool) -> bool:
    """A row the table shows without ``--all-metrics``."""
    if r.gating or (young and r.metric in DEFAULT_GATING) or r.unconfirmed:
        return True
    return r.verdict in (*FAILING, "improvement")


def _verdict_row(r: MetricResult, young: bool, settles: Settles) -> dict[str, Any]:
    hint = _hint(r, settles)
    return {
        "scenario": r.scenario,
        "model": r.model,
        "metric": r.metric + ("" if r.gating else " (young)" if young else " (diag)"),
        "verdict": _verdict_word(r),
        "baseline": f"{_num(r.baseline_estimate)} ({r.baseline_n})",
        "night": f"{_num(r.night_estimate)} ({r.night_n})",
        "effect": f"{_num(r.effect)} {_ci(r.effect_ci)} {r.effect_label}".strip(),
        # An improvement was judged in the good direction: show that q.
        "q": _num(r.shown_pq[1]),
        "margin": _num(r.margin),
        "hint": _short(hint or (r.note or "")),
    }


def _hint(r: MetricResult, settles: Settles) -> str:
    """The note column's own hint: why nothing was measured, or what settles the row."""
    if _unmeasured(r):
        return f"no run measured tonight ({r.night_infra} infra_error): the endpoint failed"
    if r.verdict != "inconclusive":
        return ""
    # What settles it, in the column's width: the note that says so is longer.
    settle = (
        f"~{r.runs_needed} runs to settle"
        if r.runs_needed
        else f"{settles.reference} first, then {settles.candidate}"
    )
    return ", ".join(([f"MDE {_num(r.mde)}"] if r.mde is not None else []) + [settle])


def _verdict_word(r: MetricResult) -> str:
    if r.verdict in FAILING:
        return r.verdict.upper()
    return "unconfirmed" if r.unconfirmed else r.verdict


def detectable(results: Sequence[MetricResult]) -> str:
    """The smallest change tonight's runs would catch, per gating metric: its MDE (flagged
    with probability 0.8 at the verdict's own bar), the median over the scenario × models
    that gate and measured it. '' when nothing gates.

    A night of "ok" rows says little unless it says what it could have seen: at 5 runs
    against 3 baseline nights a success rate can fall 0.5 unseen."""
    found: dict[str, list[float | None]] = {}
    for r in results:
        if r.gating and r.night_n:
            found.setdefault(r.metric, []).append(r.mde)
    if not found:
        return ""
    cells = len({(r.scenario, r.model) for r in results if r.gating and r.night_n})
    over = f"median of {cells} scenario × models" if cells > 1 else "one scenario × model"
    parts = [_smallest(name, found[name]) for name in sorted(found, key=rank)]
    return f"smallest change tonight's runs detect (80 % power, {over}): {', '.join(parts)}"


def _smallest(name: str, mdes: Sequence[float | None]) -> str:
    """'success_rate ±0.31' (a median over cells), or 'none at these runs'."""
    known = [m for m in mdes if m is not None]
    if len(known) * 2 < len(mdes):  # most cells could not detect any change of it
        return f"{name} none at these runs"
    return f"{name} {SCALES[metric(name).kind].margin_prefix}{_num(statistics.median(known))}"


def undecided(
    results: Sequence[MetricResult], suite: str, settles: Settles = AGAINST_BASELINES
) -> str:
    """What the night could not decide, counted: changes every run showed that it could not
    confirm (named), and rows no number of runs tonight would settle."""
    parts = _undecided_parts(results, settles)
    if not parts:
        return ""
    pointer = f" ({settles.pointer.format(suite=suite)})" if settles.pointer else ""
    return f"; {'; '.join(parts)}{pointer}"


def beside_flags(results: Sequence[MetricResult]) -> str:
    """For a night that flagged something: the changes it could not confirm and the cells
    it measured nothing of, which a line naming only the flags would leave unsaid."""
    shown = shown_results(results)
    unconfirmed = _named([r for r in results if r.unconfirmed], among=results)
    unmeasured = _unmeasured_cells(shown)
    parts = [f"also {UNCONFIRMED}: {unconfirmed}"] if unconfirmed else []
    if unmeasured:
        parts.append(unmeasured)
    return "".join(f"; {part}" for part in parts)


def _unmeasured_cells(shown: Sequence[tuple[MetricResult, bool]]) -> str:
    """'2 scenario × models with no run measured tonight (...)' ('' for none)."""
    unmeasured = len({(r.scenario, r.model) for r, _ in shown if _unmeasured(r)})
    if not unmeasured:
        return ""
    return (
        f"{unmeasured} scenario × model{'s' if unmeasured > 1 else ''} with no run measured "
        "tonight (every run infra_error: the endpoint failed)"
    )


def _undecided_parts(results: Sequence[MetricResult], settles: Settles) -> list[str]:
    shown = shown_results(results)  # the rows the table shows
    # What would fail the night once these baselines are old enough: said here, not only
    # in the table, so the line never reads "nothing flagged" over a regression.
    young = _named([r for r, y in shown if y and r.verdict in FAILING], among=results)
    unconfirmed = _named([r for r in results if r.unconfirmed], among=results)
    moved = _moved_diagnostics(shown)
    said = [
        (young, f"flagged against baselines too young to gate (not failing the night): {young}"),
        (unconfirmed, f"{UNCONFIRMED}: {unconfirmed}"),
        (moved, f"diagnostics that moved (they never fail a night): {moved}"),
        (True, _unmeasured_cells(shown)),
        (True, _open_rows([r for r, _ in shown], settles)),
    ]
    return [text for found, text in said if found and text]


def _moved_diagnostics(shown: Sequence[tuple[MetricResult, bool]]) -> str:
    """Diagnostics flagged against gating baselines, named. They never fail a night, but a
    table showing "latency_s (diag) REGRESSION" above a line that says "nothing flagged"
    reads as a contradiction."""
    return _named([r for r, y in shown if not y and not r.gating and r.verdict in FAILING])


def _open_rows(shown: Sequence[MetricResult], settles: Settles) -> str:
    """'3 rows inconclusive, 2 of them need more baseline nights before runs can settle
    them' ('' for none)."""
    open_ = [
        r for r in shown if r.verdict == "inconclusive" and not r.unconfirmed and not _unmeasured(r)
    ]
    if not open_:
        return ""
    nights = sum(r.runs_needed is None for r in open_)
    need = (
        f", {nights} of them need {settles.reference} before {settles.candidate} can settle them"
        if nights
        else ""
    )
    return f"{len(open_)} rows inconclusive{need}"


def _unmeasured(r: MetricResult) -> bool:
    """Nothing measured the agent tonight: every run of the cell ended in infra_error."""
    return r.night_n == 0 and r.night_infra > 0


def _named(
    results: Sequence[MetricResult], shown: int = 5, among: Sequence[MetricResult] = ()
) -> str:
    """'s1 success_rate, s2 step_count and 3 more': gating metrics first, as the registry
    orders them, so the ones named are the ones that matter."""
    several = len({r.model for r in among or results}) > 1
    found = sorted({(rank(r.metric), r.scenario, r.model, r.metric) for r in results})
    named = ", ".join(_name(s, m, name, several) for _, s, m, name in found[:shown])
    return named + (f" and {len(found) - shown} more" if len(found) > shown else "")


def flagged_names(flagged: Sequence[MetricResult], *, several_models: bool) -> list[str]:
    """'s step_count', or with ``several_models`` 's [model] step_count': the closing lines
    of ``run`` and ``compare`` name what failed, and in which model."""
    return sorted({_name(r.scenario, r.model, r.metric, several_models) for r in flagged})


def _name(scenario: str, model: str, metric: str, with_model: bool) -> str:
    return f"{scenario} [{model}] {metric}" if with_model else f"{scenario} {metric}"
