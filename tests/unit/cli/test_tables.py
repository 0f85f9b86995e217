"""The terminal tables: the per-cell run summary (counts, means, pass^k) and the verdict rows."""

from __future__ import annotations

from typing import Any

from evalrunner.cli._tables import detectable, format_table, summary_rows, verdict_rows
from evalrunner.stats._metric_result import MetricResult
from evalrunner.suite._record import RunRecord


def run(
    index: int,
    outcome: str,
    *,
    scenario: str = "s",
    steps: int = 3,
    tools: tuple[str, ...] = ("search",),
    tokens: tuple[int, int] = (100, 20),
    reason: str | None = None,
) -> RunRecord:
    return RunRecord(
        run_id=f"{scenario}/m/{index}",
        suite="demo",
        scenario=scenario,
        model="m",
        index=index,
        outcome=outcome,
        reason=reason,
        step_count=steps,
        tools=list(tools),
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
    )


def result(
    metric: str, verdict: str = "ok", *, gating: bool = True, scenario_: str = "s", **fields: Any
) -> MetricResult:
    return MetricResult(
        scenario=scenario_,
        model="m",
        metric=metric,
        kind="binary",
        gating=gating,
        direction="lower",
        margin=0.1,
        verdict=verdict,  # type: ignore[arg-type]
        **fields,
    )


def test_pass_k_columns_are_dashes_below_three_measured_runs() -> None:
    # Three runs, but the infra error measured the endpoint, not the agent: two measured runs.
    (row,) = summary_rows([run(0, "passed"), run(1, "passed"), run(2, "infra_error")])
    assert row["n"] == 3 and row["infra"] == 1
    assert (row["pass_hat_3"], row["pass_at_3"]) == ("-", "-")


def test_pass_k_counts_the_measured_runs_only() -> None:
    # 3 of 4 measured runs passed: pass^3 = C(3,3)/C(4,3) = 0.25; pass@3 = 1 (one failure < 3).
    # Counting the infra error too would give pass^3 = C(3,3)/C(5,3) = 0.10.
    records = [run(0, "passed"), run(1, "passed"), run(2, "passed"), run(3, "failed")]
    (row,) = summary_rows([*records, run(4, "infra_error")])
    assert (row["pass_hat_3"], row["pass_at_3"]) == ("0.25", "1.00")


def test_an_outage_night_shows_no_pass_k() -> None:
    records = [run(i, "passed") for i in range(5)]
    (row,) = summary_rows(records, measured=False)
    assert (row["pass_hat_3"], row["pass_at_3"]) == ("-", "-")
    (measured,) = summary_rows(records)
    assert (measured["pass_hat_3"], measured["pass_at_3"]) == ("1.00", "1.00")


def test_means_and_the_modal_tools_leave_infra_errors_out() -> None:
    big = (9000, 999)
    records = [
        run(0, "passed", steps=2, tools=("search", "read")),
        run(1, "passed", steps=5, tools=("search", "read")),
        run(2, "passed", steps=3, tools=("search", "read")),
        run(3, "failed", steps=4, tools=("search",), tokens=(200, 40)),
        run(4, "failed", steps=4, tools=("search",), tokens=(200, 40)),
        run(5, "skipped", steps=0, tools=(), tokens=(0, 0), reason="rate limited"),
        # Counted in, these four would make "retry" the most common path.
        *(run(6 + i, "infra_error", steps=100, tools=("retry",), tokens=big) for i in range(4)),
    ]
    (row,) = summary_rows(records)
    assert {k: row[k] for k in ("n", "passed", "failed", "skipped", "infra", "crashed")} == {
        "n": 10,
        "passed": 3,
        "failed": 2,
        "skipped": 1,
        "infra": 4,
        "crashed": 0,
    }
    assert row["mean_steps"] == 3.0  # (2 + 5 + 3 + 4 + 4 + 0) / 6
    assert row["mean_tokens"] == 140.0  # (3 * 120 + 2 * 240 + 0) / 6
    assert row["top_tools"] == "search > read"
    assert row["skip_reasons"] == "rate limited x1"


def test_one_summary_row_per_cell_in_sorted_order() -> None:
    rows = summary_rows([run(0, "passed", scenario="b"), run(0, "failed", scenario="a")])
    assert [(r["scenario"], r["model"], r["n"]) for r in rows] == [("a", "m", 1), ("b", "m", 1)]


def test_a_table_aligns_its_columns_and_shows_missing_values_as_dashes() -> None:
    rows: list[dict[str, Any]] = [{"a": 1.26, "b": None}, {"a": "long text", "b": 3}, {}]
    table = format_table(rows, [("a", "A"), ("b", "Bee")])
    assert table.splitlines() == [
        "A          Bee",
        "---------  ---",
        "1.3        -",
        "long text  3",
        "-          -",
    ]


def test_diagnostics_show_only_when_flagged_or_asked_for() -> None:
    results = [
        result("success_rate"),
        result("latency_s", gating=False),
        result("tool_calls", "regression", gating=False),
        result("first_tool", "improvement", gating=False),
    ]
    shown = [row["metric"] for row in verdict_rows(results)]
    assert shown == ["success_rate", "tool_calls (diag)", "first_tool (diag)"]
    every = [row["metric"] for row in verdict_rows(results, all_metrics=True)]
    assert every == ["success_rate", "latency_s (diag)", "tool_calls (diag)", "first_tool (diag)"]


def test_a_young_baseline_shows_the_default_gating_metrics_marked_young() -> None:
    # No gating result in the cell: the baseline is too young to gate.
    young = [
        result("success_rate", gating=False, baseline_nights=1),
        result("success_rate_valid", gating=False, baseline_nights=1),
    ]
    assert [row["metric"] for row in verdict_rows(young)] == ["success_rate (young)"]
    # Without a baseline night there is nothing to show.
    none = [result("success_rate", gating=False, baseline_nights=0)]
    assert verdict_rows(none) == []


def test_a_verdict_row_shows_estimates_interval_and_the_runs_an_inconclusive_needs() -> None:
    (failing,) = verdict_rows(
        [
            result(
                "success_rate",
                "regression",
                baseline_estimate=0.9,
                baseline_n=20,
                night_estimate=0.6,
                night_n=10,
                effect=-0.3,
                effect_ci=(-0.45, -0.12),
                effect_label="difference",
                q=0.01234,
            )
        ]
    )
    assert failing == {
        "scenario": "s",
        "model": "m",
        "metric": "success_rate",
        "verdict": "REGRESSION",
        "baseline": "0.9 (20)",
        "night": "0.6 (10)",
        "effect": "-0.3 [-0.45, -0.12] difference",
        "q": "0.0123",
        "margin": "0.1",
        "hint": "",
    }
    (unsettled,) = verdict_rows(
        [result("success_rate", "inconclusive", mde=0.2346, runs_needed=40)]
    )
    assert unsettled["verdict"] == "inconclusive"
    assert unsettled["hint"] == "MDE 0.235, ~40 runs to settle"
    assert unsettled["baseline"] == "- (0)"
    # Out of reach tonight: the table says what settles it, not the note cut at 60 characters.
    (far,) = verdict_rows([result("success_rate", "inconclusive", note="nothing flagged; " * 9)])
    assert far["hint"] == "more baseline nights first, then runs"


def test_an_improvement_shows_the_q_of_the_good_direction() -> None:
    (row,) = verdict_rows([result("success_rate", "improvement", q=0.9, q_improvement=0.002)])
    assert row["verdict"] == "improvement"
    assert row["q"] == "0.002"


def test_a_cell_no_run_measured_says_the_endpoint_failed_not_more_baseline_nights() -> None:
    # Before: "more baseline nights to settle", and the night's line counted it among the
    # rows that need more baseline nights (a review: one scenario's endpoint was down).
    from evalrunner.cli._tables import undecided

    down = result("success_rate", "inconclusive", night_n=0, night_infra=5, baseline_n=20)
    other = result("success_rate", "inconclusive", baseline_n=20, night_n=5)
    other = other.model_copy(update={"scenario": "t"})
    (row, _) = verdict_rows([down, other])
    assert row["hint"] == "no run measured tonight (5 infra_error): the endpoint failed"
    assert undecided([down, other], "demo") == (
        "; 1 scenario × model with no run measured tonight (every run infra_error: the "
        "endpoint failed); 1 rows inconclusive, 1 of them need more baseline nights before runs can settle them "
        "(`evalrunner plan --suite demo` says what settles them)"
    )


def test_the_night_line_names_diagnostics_that_moved_beside_nothing_flagged() -> None:
    # Before: "nothing flagged against the baselines" under a table row that read
    # "latency_s (diag) REGRESSION", and nothing else on the line.
    from evalrunner.cli._tables import undecided

    results = [result("success_rate"), result("latency_s", "regression", gating=False)]
    assert undecided(results, "demo") == (
        "; diagnostics that moved (they never fail a night): s latency_s "
        "(`evalrunner plan --suite demo` says what settles them)"
    )


def test_a_night_says_the_smallest_change_it_could_detect_per_gating_metric() -> None:
    """Median over the cells that gate, in each metric's own units; a metric most cells
    cannot detect at any size says so instead of a number; diagnostics are left out."""
    found = detectable(
        [
            result("success_rate", mde=0.3, night_n=20),
            result("success_rate", mde=0.5, night_n=20, scenario_="t"),
            result("success_rate", mde=0.4, night_n=20, scenario_="u"),
            result("crash_rate", mde=None, night_n=20),
            result("latency_s", mde=0.01, night_n=20, gating=False),
        ]
    )
    assert found.startswith("smallest change tonight's runs detect (80 % power, median of 3")
    assert "success_rate ±0.4" in found and "crash_rate none at these runs" in found
    assert "latency_s" not in found
    assert detectable([result("latency_s", mde=0.01, night_n=20, gating=False)]) == ""


def test_table_cells_show_control_characters_instead_of_sending_them() -> None:
    table = format_table([{"tool": "a\x1b[31mb", "n": 1}], [("tool", "tool"), ("n", "n")])
    assert "\x1b" not in table and "a\\x1b[31mb" in table


def test_the_verdict_table_lists_what_needs_attention_and_counts_the_rest() -> None:
    """The README's main job printed a 30-row table of which nearly every row read
    "inconclusive ... more baseline nights to settle" (issue 54, item 3): the rows a person
    should read tonight are listed, the rest counted in one line."""
    from evalrunner.cli._tables import folded

    results = [
        result("success_rate", "regression", scenario_="a"),
        result("crash_rate", "ok", scenario_="a"),
        result("skip_rate", "inconclusive", scenario_="a", runs_needed=40),  # runs settle it
        result("success_rate", "inconclusive", scenario_="b"),  # only more baseline nights
        result("crash_rate", "ok", scenario_="b"),
        result("skip_rate", "ok", scenario_="b"),
    ]
    listed = verdict_rows(results, attention_only=True)
    assert [(r["scenario"], r["metric"]) for r in listed] == [
        ("a", "success_rate"),
        ("a", "skip_rate"),
    ]
    assert folded(results, "--verbose") == (
        "3 rows ok, 1 inconclusive that no number of runs tonight settles (--verbose lists every row)"
    )
    assert len(verdict_rows(results)) == 6  # --verbose
    assert folded(results[:1], "--verbose") == ""
