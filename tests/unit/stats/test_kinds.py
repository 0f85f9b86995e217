"""The metric kinds' table: one entry per kind, and what each entry decides."""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest

from evalrunner.stats._kinds import KINDS, kind_of
from evalrunner.stats._sequential import PROMISE_ADAPTIVE
from evalrunner.suite._metrics import REGISTRY, SCALES, Kind


def test_every_kind_has_one_entry_under_its_name() -> None:
    names = set(typing.get_args(Kind))
    assert set(KINDS) == names == set(SCALES)
    assert all(entry.name == name for name, entry in KINDS.items())
    assert {m.kind for m in REGISTRY} == names


def test_the_adaptive_bars_are_the_entries() -> None:
    assert {name: kind.adaptive_promise for name, kind in KINDS.items()} == PROMISE_ADAPTIVE


def test_a_metric_resolves_to_its_kind_by_family() -> None:
    assert kind_of("success_rate") is KINDS["binary"]
    assert kind_of("tool_used:lookup") is KINDS["binary"]
    assert kind_of("score:cites") is KINDS["count"]
    assert kind_of("latency_s") is KINDS["continuous"]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_margin_on_the_test_scale_reads_back_as_itself(name: Kind) -> None:
    kind = KINDS[name]
    margin = 1.25 if kind.scale.ratio else 0.2
    assert kind.to_effect(kind.to_test_scale(margin)) == pytest.approx(margin)
    assert kind.beyond(margin, margin, up=True)
    assert not kind.beyond(margin, 1.0 if kind.scale.ratio else 0.0, up=False)


def test_ratios_reach_down_to_the_reciprocal_differences_to_the_negative() -> None:
    assert KINDS["continuous"].beyond(1.25, 0.8, up=False)
    assert not KINDS["continuous"].beyond(1.25, -1.25, up=True)
    assert KINDS["count"].beyond(0.33, -0.33, up=False)


def test_only_counts_are_tested_by_placement() -> None:
    base = np.array([1.0, 2.0, 3.0])
    values = np.array([2.0, 5.0])
    for name, kind in KINDS.items():
        placed = kind.on_test_scale(values, base)
        assert (placed is values) == (name != "count"), name
    assert KINDS["count"].on_test_scale(values, base).tolist() == [0.5, 1.0]


def test_rates_stay_within_their_range() -> None:
    assert KINDS["binary"].clipped(-1.4, 1.2) == (-1.0, 1.0)
    assert KINDS["count"].clipped(-1.4, 1.2) == (-1.4, 1.2)
    exact = {n for n, k in KINDS.items() if k.exact_mde is not None}
    assert exact == {"binary", "categorical"}  # the kinds whose tests are summed exactly
    assert math.isclose(KINDS["continuous"].to_effect(100.0), math.exp(50.0))
