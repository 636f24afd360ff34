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
    s = ax.start
    if isinstance(s, np.ndarray):
        return None
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


def index_range(lin: Linear | None, extent: int):
    """Per-block [lo, hi) an index (linearize's form of it) sweeps over all its loop values (extent
    added)."""
    if lin is None:
        return None
    lo, hi = lin.base, lin.base
    for v, ax in lin.loops.items():
        span = lin.coef[v] * (ax.max_extent - 1)
        lo, hi, span = align(lo, hi, span)
        lo = lo + np.minimum(span, 0)
        hi = hi + np.maximum(span, 0)
    return lo, hi + extent


def ranges_union_length(bounds: list, dim: int) -> int:
    """Length of the union of the ranges [lo, hi) in `bounds` (numbers, or arrays of per-block
    values), clipped to [0, dim): the union over every value -- union_length's sweep, in plain
    integers when there are few."""
    if any(isinstance(lo, np.ndarray) or isinstance(hi, np.ndarray) for lo, hi in bounds):
        flat = [_flat_bounds(lo, hi) for lo, hi in bounds]
        if sum(lo.size for lo, _ in flat) > FEW_RANGES:
            return union_length(np.concatenate([lo for lo, _ in flat]), np.concatenate([hi for _, hi in flat]), dim)
        bounds = [pair for lo, hi in flat for pair in zip(lo.tolist(), hi.tolist())]
    total, reach = 0, None
    for lo, hi in sorted((min(max(int(lo), 0), dim), int(hi)) for lo, hi in bounds):
        hi = max(min(hi, dim), lo)
        if reach is None:
            total, reach = hi - lo, hi
        elif hi > reach:
            total += hi - max(lo, reach)
            reach = hi
    return total


# ranges_union_length sweeps at most this many ranges in Python, more with numpy
FEW_RANGES = 12


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
