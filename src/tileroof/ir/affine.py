"""Closed forms for expressions that are linear in loop variables, so that a guard such as
`bx * 1024 + i < N` over 262 145 blocks × 1024 iterations is counted from arrays over the blocks
alone, never from a grid × loop array.

An index or condition is evaluated with every loop variable at its first value (an array over the
blocks), and once more per loop variable it mentions with that variable one step further: the
difference is its coefficient.  A third evaluation at the last value checks the expression really
is linear in that variable; where it is not, callers fall back to enumeration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import tirx

from .evaluate import LoopAxis, align


def loop_vars_in(expr, env: dict) -> dict:
    """Variables of `expr` that are enumerated loops in `env`, in first-seen order, each with its
    LoopAxis."""
    found = {}
    seen_lets = set()

    def visit(n):
        if not isinstance(n, tirx.Var):
            return
        val = env.get(n)
        if isinstance(val, LoopAxis):
            found.setdefault(n, val)
        elif isinstance(val, tirx.PrimExpr) and n not in seen_lets:
            seen_lets.add(n)
            tirx.stmt_functor.post_order_visit(val, visit)
    tirx.stmt_functor.post_order_visit(expr, visit)
    return found


@dataclass
class Linear:
    base: object                 # value with every loop variable at its start (array over blocks)
    coef: dict                   # loop Var -> coefficient (scalar or array over blocks)
    loops: dict                  # loop Var -> LoopAxis


def linearize(ev, expr) -> Linear | None:
    """The expression as base + Σ coef·(v - start), or None when it is not linear in its loops."""
    loops = loop_vars_in(expr, ev.env)
    if not loops:
        return Linear(ev(expr), {}, loops)
    at_start = {v: _scalar_start(ax) for v, ax in loops.items()}
    if any(s is None for s in at_start.values()):
        return None
    base = ev.child(at_start)(expr)
    # a loop of one trip only ever takes its start value: a constant of the expression
    loops = {v: ax for v, ax in loops.items() if ax.max_extent > 1}
    coef = {}
    for v, ax in loops.items():
        step = ev.child({**at_start, v: at_start[v] + 1})(expr)
        a, b = align(step, base)
        c = a - b
        last = ax.max_extent - 1
        if last > 1:
            end = ev.child({**at_start, v: at_start[v] + last})(expr)
            e, b2, c2 = align(end, base, c)
            if not _all_equal(e, b2 + c2 * last):
                return None
        coef[v] = c
    return Linear(base, coef, loops)


def _all_equal(a, b) -> bool:
    """np.all(a == b) for numbers or arrays (plain comparison for two numbers)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.all(a == b))
    return a == b


def _scalar_start(ax: LoopAxis):
    """A loop's first value: a number, or an array over the blocks (a block-dependent start such as
    the causal backward's T.Pipelined(floor(by * bM / bN), ...))."""
    s = ax.start
    if isinstance(s, np.ndarray):
        return s
    return int(s)


def _extent(ax: LoopAxis):
    return ax.extent


def interval_linear_lt(lin: Linear, strict: bool = True):
    """The loop values u = v - start in [lo, hi) with base + a·u < 0 (<= 0 if not strict), for a
    single loop variable; returns (lo, hi, extent), arrays over blocks."""
    (v, ax), = lin.loops.items()
    a = lin.coef[v]
    b = lin.base if strict else lin.base - 1          # integers: x <= 0  <=>  x - 1 < 0
    ext = _extent(ax)
    a, b, ext = align(a, b, ext)
    a = np.asarray(a)
    b = np.asarray(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos_hi = -np.floor_divide(b, np.where(a > 0, a, 1))          # a>0: u < ceil(-b/a)
        neg_lo = np.floor_divide(b, np.where(a < 0, -a, 1)) + 1     # a<0: u > b/|a|
    lo = np.where(a < 0, neg_lo, 0)
    hi = np.where(a > 0, pos_hi, np.where(b < 0, ext, 0))
    hi = np.where(a < 0, ext, hi)                                     # a == 0: all or nothing
    return lo, hi, ext


def decided_linear_lt(lin: Linear, strict: bool = True):
    """Over every value of its loops (u = v - start in [0, extent)), whether base + Σ a·u < 0
    (<= 0 if not strict) always holds (1.0) or never does (0.0), per block; None where it holds for
    some values only (or a loop's extent is unknown): an interval bound, for guards on several loop
    variables (k * 64 + i < N with k < N / 64, i < 64) too many to enumerate."""
    lo = hi = np.asarray(lin.base if strict else np.subtract(lin.base, 1), dtype=np.float64)
    for v, ax in lin.loops.items():
        a, ext = align(lin.coef.get(v, 0), _extent(ax))
        span = np.multiply(a, np.maximum(np.asarray(ext, dtype=np.float64) - 1, 0))
        lo, span = align(lo, span)
        hi, _ = align(hi, span)
        lo, hi = lo + np.minimum(span, 0), hi + np.maximum(span, 0)
    if np.all(hi < 0):
        return 1.0
    if np.all(lo >= 0):
        return 0.0
    return None


def comparison_as_lt(cond):
    """(x, y, strict) for cond rewritten as  x - y < 0  (strict) or  x - y <= 0."""
    if isinstance(cond, tirx.LT):
        return cond.a, cond.b, True
    if isinstance(cond, tirx.LE):
        return cond.a, cond.b, False
    if isinstance(cond, tirx.GT):
        return cond.b, cond.a, True
    if isinstance(cond, tirx.GE):
        return cond.b, cond.a, False
    return None


def linear_diff(ev, x, y) -> Linear | None:
    """x - y as a Linear (both sides linearised on their own: no new TIR is built)."""
    lx, ly = linearize(ev, x), linearize(ev, y)
    if lx is None or ly is None:
        return None
    base = np.subtract(*align(lx.base, ly.base))
    coef = dict(lx.coef)
    for v, c in ly.coef.items():
        coef[v] = np.subtract(*align(coef.get(v, 0), c))
    return Linear(base, coef, {**lx.loops, **ly.loops})


def conjuncts(cond) -> list:
    if isinstance(cond, tirx.And):
        return conjuncts(cond.a) + conjuncts(cond.b)
    if isinstance(cond, tirx.Call) and getattr(cond.op, "name", "") == "tirx.likely":
        return conjuncts(cond.args[0])
    return [cond]


def sequence_key(lin: Linear):
    """The index at loop values counted from 0 rather than from the loop's start, per block: which
    tile sequence a block walks.  Blocks whose loops start at different points of one sequence (the
    causal backward's query loop from the diagonal) get the same key, so the L2 model sees them
    read the same tiles; with a start that is one number for every block this is the base moved
    by a constant."""
    key = lin.base
    for v, ax in lin.loops.items():
        if isinstance(ax.start, np.ndarray):
            k, c, st = align(key, lin.coef[v], ax.start)
            key = k - c * st
    return key


def index_range(lin: Linear | None, extent: int):
    """Per-block [lo, hi) an index (linearize's form of it) sweeps over all its loop values (extent
    added)."""
    if lin is None:
        return None
    lo, hi = lin.base, lin.base
    for v, ax in lin.loops.items():
        span = lin.coef[v] * (ax.max_extent - 1)
        if isinstance(span, np.ndarray):
            lo, hi, span = align(lo, hi, span)
            lo = lo + np.minimum(span, 0)
            hi = hi + np.maximum(span, 0)
        else:                      # the same span for every block: lo and hi keep their shape
            lo, hi = lo + min(span, 0), hi + max(span, 0)
    return lo, hi + extent


def union_lengths(groups: list) -> list[int]:
    """The length of the union of each group's ranges [lo, hi), clipped to [0, dim): `groups`
    holds (bounds, dim), bounds a list of (lo, hi) -- numbers, or arrays of per-block values.
    A group of many ranges is swept on its own (union_length), the others together in one sweep
    (_swept_together: numpy's cost per call, not the ranges, is what they cost)."""
    out = [0] * len(groups)
    few = []
    for g, (bounds, dim) in enumerate(groups):
        lo, hi = _group_bounds(bounds)
        if lo.size > BATCHED_RANGES:
            out[g] = union_length(lo, hi, dim)
        else:
            few.append((g, lo, hi, int(dim)))
    if few:
        for (g, *_), n in zip(few, _swept_together(few)):
            out[g] = n
    return out


def _swept_together(groups: list) -> list[int]:
    """union_length of each (group, lo, hi, dim) in one sweep: each group is shifted into a span
    of its own (the spans follow one another, so no range reaches into the next group's), and a
    group's length is what its ranges add."""
    spans = np.array([dim for *_, dim in groups], dtype=np.int64)
    sizes = [lo.size for _, lo, _, _ in groups]
    starts = np.concatenate(([0], np.cumsum(spans)[:-1]))      # where each group's span starts
    dim, start = np.repeat(spans, sizes), np.repeat(starts, sizes)
    lo = np.minimum(np.maximum(np.concatenate([lo for _, lo, _, _ in groups]), 0), dim)
    hi = np.maximum(np.minimum(np.concatenate([hi for _, _, hi, _ in groups]), dim), lo) + start   # empty: [lo, lo)
    lo += start
    order = np.argsort(lo)
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    added = np.concatenate(([0], np.cumsum(reach - np.maximum(lo, np.concatenate((lo[:1], reach[:-1]))))))
    # each group's ranges follow from its span's start (an empty range clipped to its group's end
    # may sort among the next group's: it adds nothing)
    first = np.searchsorted(lo, starts)
    return (added[np.append(first[1:], lo.size)] - added[first]).tolist()


# a group of more ranges than this is swept on its own (union_lengths)
BATCHED_RANGES = 1024


def _group_bounds(bounds: list):
    """A group's ranges as two flat int64 arrays of their bounds (scalar ranges gathered into one
    array, after the arrays)."""
    los, his, few_lo, few_hi = [], [], [], []
    for lo, hi in bounds:
        if isinstance(lo, np.ndarray) or isinstance(hi, np.ndarray):
            lo, hi = _flat_bounds(lo, hi)
            los.append(lo)
            his.append(hi)
        else:
            few_lo.append(lo)
            few_hi.append(hi)
    if few_lo or not los:
        los.append(np.array(few_lo, dtype=np.int64))
        his.append(np.array(few_hi, dtype=np.int64))
    if len(los) == 1:
        return los[0], his[0]
    return np.concatenate(los), np.concatenate(his)


def _flat_bounds(lo, hi):
    """A range's bounds as two flat int64 arrays of equal length (broadcast against each other)."""
    lo, hi = align(np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64))
    if lo.shape != hi.shape:
        lo, hi = np.broadcast_arrays(lo, hi)
    return lo.reshape(-1), hi.reshape(-1)


def union_length(lo, hi, dim: int) -> int:
    """Length of the union of intervals [lo_i, hi_i) clipped to [0, dim)."""
    lo = np.asarray(lo, dtype=np.int64).reshape(-1)
    hi = np.asarray(hi, dtype=np.int64).reshape(-1)
    if lo.size == 0:
        return 0
    if hi.size != lo.size:
        hi = np.broadcast_to(hi, lo.shape) if hi.size == 1 else hi
        lo = np.broadcast_to(lo, hi.shape) if lo.size == 1 else lo
    lo = np.minimum(np.maximum(lo, 0), dim)
    hi = np.maximum(np.minimum(hi, dim), lo)          # an empty interval becomes [lo, lo)
    order = np.argsort(lo)
    lo, hi = lo[order], hi[order]
    # in order of their starts, each interval adds what reaches past the ones before it
    run_hi = np.maximum.accumulate(hi)
    return int(run_hi[0] - lo[0] + (run_hi[1:] - np.maximum(lo[1:], run_hi[:-1])).sum())
