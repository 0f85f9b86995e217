"""Trend charts: each metric drawn by its kind (the registry's), long histories in runs of nights."""

from __future__ import annotations

import re
import typing
import warnings

import numpy as np
from history_factory import make_history
from markupsafe import escape

from evalrunner.report._charts import _BY_KIND
from evalrunner.report._html import render_html
from evalrunner.report._svg import row_medians
from evalrunner.suite._metrics import REGISTRY, Kind


def test_each_gating_metric_is_charted_by_its_kind(html: str) -> None:
    """Rates in their units, counts as Cliff's delta, tool paths as their atypicality change
    (the registry's kinds)."""
    axes = dict(re.findall(r'<b>(\w+)</b><span class="axis">([^<]*)', html))
    for m in REGISTRY:
        if m.gating:
            assert axes[m.name].startswith(escape(_BY_KIND[m.kind].axis)), m.name
    assert axes["prompt_tokens"].startswith("geometric mean")  # a default charted diagnostic


def test_every_kind_of_metric_can_be_charted() -> None:
    assert set(_BY_KIND) == set(typing.get_args(Kind))


def test_long_histories_are_drawn_in_runs_of_nights() -> None:
    history = make_history(nights=100, scenarios=1, runs=6)
    page = render_html(history)
    assert "each point: median of 2 nights" in page
    chart = re.search(
        r'<svg class="chart" [^>]*aria-label="success_rate over 100 nights".*?</svg>', page, re.S
    )
    assert chart is not None
    assert chart.group(0).count("V") <= 60  # one range bar per point, not per night


def test_row_medians_are_numpys_nanmedian() -> None:
    rng = np.random.default_rng(0)
    for _ in range(500):
        values = rng.normal(size=(int(rng.integers(1, 20)), int(rng.integers(1, 8))))
        values = np.round(values, int(rng.integers(0, 3)))  # ties
        values[rng.random(values.shape) < rng.random()] = np.nan  # gaps, whole rows included
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmedian(values, axis=1)
        assert np.array_equal(row_medians(values), expected, equal_nan=True)


def test_a_one_night_chart_draws_that_night() -> None:
    import numpy as np

    from evalrunner.report._svg import series_svg

    svg = series_svg(
        label="outcomes",
        frac=np.array([0.5]),
        series=[np.array([3.0]), np.array([1.0])],
        y_high=4.0,
        fmt="num",
        first="2026-12-01",
        last="2026-12-01",
    )
    # A line through one point draws nothing; each series' night is a dot.
    assert svg.count('class="s0 sdot"') == 1 and svg.count('class="s1 sdot"') == 1


def test_an_effect_chart_names_the_effect_its_numbers_are_and_holds_their_range() -> None:
    # Tool paths were charted as "JS distance" on 0-1 while the results (and tooltips) held
    # an atypicality change of up to 2: a path never taken sat clipped at the top.
    from evalrunner.report._svg import Trend
    from evalrunner.suite._metrics import EFFECT_LABELS

    largest = {"count": 1.0, "categorical": 2.0}
    for kind, style in _BY_KIND.items():
        if not style.effect:
            continue
        assert EFFECT_LABELS[kind].lower() in style.axis.lower().replace("δ", "delta"), kind
        top = np.array([largest[kind]])
        trend = Trend(np.array([0.5]), top, top, top, np.zeros(1), np.zeros(1), np.zeros(1))
        assert style.y_range(trend)[1] >= largest[kind], kind


def test_a_night_the_endpoint_failed_whole_is_a_gap_in_the_tokens_chart_not_a_dip() -> None:
    # Before: drawn as 0 tokens, a dip that read as the agent using none.
    from history_factory import build_entries, history_from_entries

    from evalrunner.report._charts import suite_charts
    from evalrunner.report._select import select

    entries = build_entries(nights=3, scenarios=1, regressed=())
    down = entries[1]
    failed = [
        r.model_copy(update={"outcome": "infra_error", "prompt_tokens": 0, "completion_tokens": 0})
        for r in down.records
    ]
    entries[1] = down.model_copy(update={"records": failed, "verdicts": [], "outage": True})
    [suite] = select(history_from_entries(entries))
    charts = suite_charts(suite.nights)
    assert charts.tokens is not None
    dotted = re.findall(r'class="s(\d) sdot" d="([^"]*)"', charts.tokens)
    assert dotted and all(d.count("h0") == 2 for _, d in dotted), dotted  # 2 of 3 nights


def test_a_metric_whose_kind_changed_is_charted_throughout_as_its_newest_result_reads() -> None:
    # A chart reads every night of a series as its newest result's kind says (a count as
    # its effect, a rate in its units); nights stored under another kind are read again.
    from history_factory import build_entries, history_from_entries

    from evalrunner.report._select import select
    from evalrunner.report._series import gather

    entries = build_entries(nights=4, scenarios=1, models=1, regressed=())
    older = [
        e.model_copy(
            update={
                "verdicts": [
                    v.model_copy(update={"kind": "continuous"}) if v.metric == "step_count" else v
                    for v in e.verdicts
                ]
            }
        )
        for e in entries[:2]
    ]
    suite = select(history_from_entries([*older, *entries[2:]]))[0]
    [step] = [r for r in suite.night.results if r.metric == "step_count"]
    key = (step.scenario, step.model, "step_count")
    series = gather(suite.nights, [key]).take(key)
    assert series is not None and series.kind == "count"
    results = [r for n in suite.nights for r in n.results if r.metric == "step_count"]
    assert series.est.tolist() == [r.effect for r in results]
    assert series.low.tolist() == [r.effect_ci[0] for r in results if r.effect_ci]
    assert series.base.tolist() == [0.0] * len(results)
