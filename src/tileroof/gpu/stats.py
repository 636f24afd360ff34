"""Order statistics for repeated timings (pure functions, no numpy needed)."""
from __future__ import annotations

import math
from typing import Iterable, Sequence


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between order statistics
    (numpy's default 'linear' method).  Raises ValueError on an empty input."""
    xs = sorted(float(v) for v in values)
    if not xs:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be in [0, 100], got {q}")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    frac = pos - lo
    return xs[lo] + (xs[hi] - xs[lo]) * frac


def median(values: Iterable[float]) -> float:
    return percentile(values, 50.0)


def summarize(times_s: Sequence[float], method: str = "") -> dict:
    """{median_s, p10_s, p90_s, min_s, max_s, mean_s, n, method} of a list of durations in seconds."""
    xs = [float(t) for t in times_s]
    if not xs:
        return {"median_s": None, "p10_s": None, "p90_s": None, "min_s": None, "max_s": None,
                "mean_s": None, "n": 0, "method": method}
    return {
        "median_s": percentile(xs, 50.0),
        "p10_s": percentile(xs, 10.0),
        "p90_s": percentile(xs, 90.0),
        "min_s": min(xs),
        "max_s": max(xs),
        "mean_s": sum(xs) / len(xs),
        "n": len(xs),
        "method": method,
    }


def spread_pct(values: Sequence[float]) -> float | None:
    """(max - min) / median * 100 over repeats; None with fewer than one finite value."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return None
    m = median(xs)
    if m == 0:
        return None
    return (max(xs) - min(xs)) / abs(m) * 100.0


def choose_reps(estimate_s: float, overhead_s: float, target_s: float,
                min_n: int = 10, max_n: int = 200) -> int:
    """How many timed runs fit in about target_s when each costs estimate_s + overhead_s."""
    per = max(estimate_s + overhead_s, 1e-7)
    return int(min(max_n, max(min_n, math.floor(target_s / per + 1e-9))))
