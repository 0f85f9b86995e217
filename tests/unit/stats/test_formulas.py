"""Published formulas and exact distributions agree with scipy and with textbook values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from evalrunner.stats._formulas import (
    bh,
    cliffs_delta,
    dirmult3_logpmf,
    dirmult3_pmf,
    icc,
    newcombe_diff,
    normalize_answer,
    pass_at_k,
    pass_hat_k,
    placements,
    tie_factor,
    wilson,
    wilson_arrays,
)


@pytest.mark.parametrize(("k", "n"), [(8, 10), (0, 10), (10, 10), (1, 1), (37, 60), (3, 200)])
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_wilson_matches_scipy(k: int, n: int, confidence: float) -> None:
    expected = sps.binomtest(k, n).proportion_ci(confidence, method="wilson")
    low, high = wilson(k, n, confidence)
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)
    arrays = wilson_arrays(np.array([float(k)]), n, confidence)
    assert (float(arrays[0][0]), float(arrays[1][0])) == pytest.approx((low, high), abs=1e-12)


def test_wilson_8_of_10_by_hand() -> None:
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_wilson_takes_effective_counts() -> None:
    # 45 of 50 effective runs: between the intervals of 90 of 100 and 9 of 10.
    low, high = wilson(45.0, 50.0)
    assert wilson(90, 100)[0] > low > wilson(9, 10)[0]
    assert wilson(90, 100)[1] < high < wilson(9, 10)[1]


def test_wilson_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        wilson(1, 0)
    with pytest.raises(ValueError):
        wilson(11, 10)


@pytest.mark.parametrize(
    ("k1", "n1", "k2", "n2", "expected"),
    [
        # Newcombe (1998), Stat Med 17:873, Table II, method 10 (hybrid score).
        (56, 70, 48, 80, (0.2, 0.0524, 0.3339)),
        (9, 10, 3, 10, (0.6, 0.1705, 0.8090)),
        (6, 7, 2, 7, (0.5714, 0.0582, 0.8062)),
        (5, 56, 0, 29, (0.0893, -0.0381, 0.1926)),
    ],
)
def test_newcombe_textbook_examples(
    k1: int, n1: int, k2: int, n2: int, expected: tuple[float, float, float]
) -> None:
    assert newcombe_diff(k1, n1, k2, n2) == pytest.approx(expected, abs=1e-4)


def test_cliffs_delta_by_hand_and_against_mannwhitney() -> None:
    # 3 vs (1, 2, 3): > > =  -> +2;  4 vs (1, 2, 3): > > > -> +3;  5 / 6 pairs.
    assert cliffs_delta([3, 4], [1, 2, 3]) == pytest.approx(5 / 6)
    assert cliffs_delta([1, 2, 3], [2, 2]) == 0.0
    assert cliffs_delta([1], [2]) == -1.0
    x, y = [1, 3, 3, 5, 8], [2, 3, 4, 4]
    u = sps.mannwhitneyu(x, y).statistic
    assert cliffs_delta(x, y) == pytest.approx(2 * u / (len(x) * len(y)) - 1)


def test_mean_placement_is_the_mann_whitney_u_share() -> None:
    x, y = np.array([4.0, 5, 3, 4]), np.array([3.0, 3, 4, 2, 3])
    u = sps.mannwhitneyu(x, y).statistic
    assert placements(x, np.sort(y)).mean() == pytest.approx(u / (x.size * y.size))


def test_tie_factor_is_mann_whitneys_tie_correction() -> None:
    values = np.array([1.0, 1, 2, 2, 2, 3, 4, 4])
    _, t = np.unique(values, return_counts=True)
    n = values.size
    assert tie_factor(values) == pytest.approx(1 - (t**3 - t).sum() / (n**3 - n))
    assert tie_factor(np.array([1.0, 2, 3])) == 1.0
    assert tie_factor(np.ones(5)) == 0.0


def test_pass_hat_k_and_pass_at_k() -> None:
    assert pass_hat_k(10, 8, 3) == pytest.approx(56 / 120)
    assert pass_hat_k(10, 10, 5) == 1.0
    assert pass_hat_k(10, 2, 3) == 0.0
    assert pass_at_k(10, 5, 3) == pytest.approx(1 - 10 / 120)
    assert pass_at_k(10, 8, 3) == 1.0  # only two failures: any 3 tries include a pass
    assert pass_at_k(10, 0, 3) == 0.0
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_normalize_answer() -> None:
    assert normalize_answer("  The  ANSWER\n is 42 ") == "the answer is 42"
    assert normalize_answer(None) is None


def test_dirichlet_multinomial_over_three_groups_matches_scipy() -> None:
    alpha = (7.0, 2.5, 0.3)
    comps, pmf = dirmult3_pmf(12, alpha)
    assert len(comps) == 13 * 14 // 2
    assert pmf.sum() == pytest.approx(1.0)
    expected = sps.dirichlet_multinomial.pmf(comps, alpha, 12)
    assert pmf == pytest.approx(expected, rel=1e-9)
    assert {tuple(c) for c in comps} == {
        (a, b, 12 - a - b) for a in range(13) for b in range(13 - a)
    }


def test_the_dirichlet_multinomial_at_a_few_compositions_is_exact_without_the_rest() -> None:
    alpha = (400.0, 90.0, 2.5)  # a long tail: the path test's upper tail is a few rows
    comps, pmf = dirmult3_pmf(300, alpha)
    few = comps[[0, 7, 1000, len(comps) - 1]]
    expected = sps.dirichlet_multinomial.logpmf(few, alpha, 300)
    assert dirmult3_logpmf(few, alpha) == pytest.approx(expected, rel=1e-9)
    assert np.exp(dirmult3_logpmf(comps, alpha)) == pytest.approx(pmf, rel=1e-6, abs=1e-300)


def test_bh_matches_scipy() -> None:
    p = [0.001, 0.2, 0.03, 0.04, 0.5, 0.012, 1.0]
    expected = sps.false_discovery_control(p, method="bh")
    assert bh(p) == pytest.approx(list(expected))
    assert bh([]) == []


def test_icc_is_the_one_way_anova_estimator() -> None:
    groups = [np.array([1.0, 2, 3, 2]), np.array([4.0, 5, 4]), np.array([2.0, 2, 3, 1, 2])]
    values = np.concatenate(groups)
    k, total = len(groups), values.size
    sizes = np.array([g.size for g in groups])
    means = np.array([g.mean() for g in groups])
    msb = (sizes * (means - values.mean()) ** 2).sum() / (k - 1)
    msw = sum(((g - g.mean()) ** 2).sum() for g in groups) / (total - k)
    n0 = (total - (sizes**2).sum() / total) / (k - 1)
    found = icc(groups)
    assert found is not None
    assert found[0] == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw))
    assert found[1] == 2
    assert icc([np.array([1.0, 2.0])]) is None  # one night: undefined
    assert icc([np.ones(3), np.ones(4)]) is None  # no spread at all


def test_two_proportions_holds_its_level_exactly_and_beats_fisher_at_small_counts() -> None:
    """Exact enumeration, no simulation: under one shared rate the chance of p <= 0.05 is at
    most 0.05 (over a grid of rates), and at 60 vs 20 it finds 0.9 -> 0.6 more often
    than Fisher's exact test does."""
    from scipy.stats import binom, fisher_exact

    from evalrunner.stats._formulas import two_proportions_p

    n_a, n_b = 60, 20
    rejects = np.array(
        [
            [two_proportions_p(a, n_a, b, n_b) <= 0.05 for b in range(n_b + 1)]
            for a in range(n_a + 1)
        ]
    )
    for rate in (0.1, 0.3, 0.5, 0.8, 0.9, 0.95):
        weights = np.outer(
            binom.pmf(range(n_a + 1), n_a, rate), binom.pmf(range(n_b + 1), n_b, rate)
        )
        assert (weights * rejects).sum() <= 0.05 + 1e-9, rate
    fisher = np.array(
        [
            [fisher_exact([[a, n_a - a], [b, n_b - b]]).pvalue <= 0.05 for b in range(n_b + 1)]
            for a in range(n_a + 1)
        ]
    )
    moved = np.outer(binom.pmf(range(n_a + 1), n_a, 0.9), binom.pmf(range(n_b + 1), n_b, 0.6))
    ours, theirs = (moved * rejects).sum(), (moved * fisher).sum()
    assert ours >= 0.8 and ours > theirs + 0.02, (ours, theirs)  # 81.7 % against 78.9 %
    assert two_proportions_p(20, 20, 20, 20) == 1.0 and two_proportions_p(0, 5, 0, 9) == 1.0
