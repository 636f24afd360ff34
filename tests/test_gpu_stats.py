"""Timing statistics and sizing helpers (pure functions)."""
import math

import pytest

from tileroof.gpu.stats import choose_reps, median, percentile, spread_pct, summarize
from tileroof.gpu.timing import Stopwatch, rotation_sets


def test_percentile_matches_linear_interpolation():
    xs = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(xs, 50) == 3.0
    assert percentile(xs, 0) == 1.0 and percentile(xs, 100) == 5.0
    assert percentile(xs, 10) == pytest.approx(1.4)
    assert percentile(xs, 90) == pytest.approx(4.6)
    assert median([1.0, 2.0, 3.0, 10.0]) == 2.5
    assert percentile([7.0], 90) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_percentile_agrees_with_numpy():
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    xs = list(rng.random(37))
    for q in (10, 25, 50, 77, 90):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))


def test_summarize():
    s = summarize([3e-6, 1e-6, 2e-6], "events")
    assert s["median_s"] == 2e-6 and s["n"] == 3 and s["method"] == "events"
    assert s["min_s"] == 1e-6 and s["max_s"] == 3e-6 and s["mean_s"] == pytest.approx(2e-6)
    assert s["p10_s"] <= s["median_s"] <= s["p90_s"]
    e = summarize([])
    assert e["n"] == 0 and e["median_s"] is None


def test_spread_pct():
    assert spread_pct([100.0, 104.0]) == pytest.approx(4.0 / 102.0 * 100)
    assert spread_pct([5.0]) == 0.0
    assert spread_pct([]) is None and spread_pct([None, float("nan")]) is None


def test_choose_reps():
    assert choose_reps(1e-3, 0.0, 0.25) == 200          # capped
    assert choose_reps(0.1, 0.0, 0.25) == 10            # floor
    assert choose_reps(5e-3, 0.0, 0.25) == 50
    assert choose_reps(0.0, 0.0, 0.25) == 200


def test_rotation_sets():
    l2 = 60 << 20
    assert rotation_sets(200 << 20, l2) == 1            # one set is already > 3x L2
    assert rotation_sets(30 << 20, l2) == 6
    assert rotation_sets(1 << 10, l2) == 64             # capped by max_sets
    assert rotation_sets(1 << 30, l2, max_total_bytes=2 << 30) == 1
    assert rotation_sets(0, l2) == 1


def test_stopwatch():
    sw = Stopwatch()
    assert sw.left() == math.inf and not sw.expired()
    assert Stopwatch(deadline=0).expired()
