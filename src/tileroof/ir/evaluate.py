"""Vectorised evaluation of TIR index expressions over every block index (and loop value) at once.

Values are Python ints/floats (exact, never wrap) or int64/float64 numpy arrays laid out on
broadcast axes: axes 0, 1, 2 are blockIdx.z, .y, .x; every loop variable that an expression needs
gets an axis of its own (3, 4, ...).  An array only materialises the axes it depends on, so
`by * 128 + k * 32` over 64 blocks × 128 iterations costs 64×128 values, not grid × loops.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from tvm import tirx


GRID_AXES = 3


class DataDependent(Exception):
    """The expression reads a value that only exists at run time (a tensor element, a local var)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


@dataclass
class LoopAxis:
    """A loop variable enumerated on its own broadcast axis.

    `extent` may itself be an array over outer axes (a loop whose trip count depends on the block
    index); values at or past it are masked out.  `replicated` marks per-thread variables
    (threadIdx): code that does not mention them runs once per block, code that does runs once per
    thread, so their per-value weight is not divided by the extent."""

    name: str
    axis: int
    start: object
    extent: object
    replicated: bool = False

    @property
    def max_extent(self) -> int:
        if not isinstance(self.extent, np.ndarray):
            return int(self.extent)
        return int(np.max(self.extent)) if self.extent.size else 0

    def values(self):
        n = max(self.max_extent, 0)
        shape = [1] * (self.axis + 1)
        shape[self.axis] = n
        # a start that depends on outer axes (a block-dependent loop start) is left-aligned like them
        return np.arange(n, dtype=np.int64).reshape(shape) + expand(self.start, self.axis + 1)

    def mask(self):
        n = max(self.max_extent, 0)
        shape = [1] * (self.axis + 1)
        shape[self.axis] = n
        idx = np.arange(n, dtype=np.int64).reshape(shape)
        ext = expand(self.extent, self.axis + 1)
        return idx < ext


def expand(value, ndim: int):
    """Give an array at least `ndim` leading axes so it broadcasts against axis-addressed arrays."""
    if isinstance(value, np.ndarray) and value.ndim < ndim:
        return value.reshape(value.shape + (1,) * (ndim - value.ndim))
    return value


def align(*values):
    """Left-align array ranks (axes are addressed from the left) so numpy broadcasting is right."""
    n = max((v.ndim for v in values if isinstance(v, np.ndarray)), default=0)
    return tuple(expand(v, n) for v in values)


def _align(a, b):
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.ndim == b.ndim:
        return a, b                  # a scalar broadcasts as it is; equal ranks need nothing
    return align(a, b)


def _is_int(x) -> bool:
    if isinstance(x, np.ndarray):
        return np.issubdtype(x.dtype, np.integer) or x.dtype == bool
    return isinstance(x, (int, bool, np.integer))


def _floordiv(a, b):
    if _is_int(a) and _is_int(b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return np.floor_divide(a, b)
        return a // b
    return np.floor(np.divide(a, b))


def _truncdiv(a, b):
    if _is_int(a) and _is_int(b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            q = np.floor_divide(np.abs(a), np.abs(b))
            return np.where((np.asarray(a) < 0) ^ (np.asarray(b) < 0), -q, q)
        q = abs(a) // abs(b)
        return -q if (a < 0) != (b < 0) else q
    return np.divide(a, b)


def _floormod(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.mod(a, b)
    return a % b


def _truncmod(a, b):
    return a - _truncdiv(a, b) * b


def _minimum(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.minimum(a, b)
    return min(a, b)


def _maximum(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.maximum(a, b)
    return max(a, b)


def _logical(op, a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return op(np.asarray(a, dtype=bool), np.asarray(b, dtype=bool))
    return bool(op(bool(a), bool(b)))


_BINARY = {
    tirx.Add: lambda a, b: a + b,
    tirx.Sub: lambda a, b: a - b,
    tirx.Mul: lambda a, b: a * b,
    tirx.FloorDiv: _floordiv,
    tirx.FloorMod: _floormod,
    tirx.Div: _truncdiv,
    tirx.Mod: _truncmod,
    tirx.Min: _minimum,
    tirx.Max: _maximum,
    tirx.EQ: lambda a, b: a == b,
    tirx.NE: lambda a, b: a != b,
    tirx.LT: lambda a, b: a < b,
    tirx.LE: lambda a, b: a <= b,
    tirx.GT: lambda a, b: a > b,
    tirx.GE: lambda a, b: a >= b,
    tirx.And: lambda a, b: _logical(np.logical_and, a, b),
    tirx.Or: lambda a, b: _logical(np.logical_or, a, b),
}


class Evaluator:
    """Evaluates PrimExprs in an environment of known values and enumerated loop axes."""

    def __init__(self, env: dict, assume: dict[str, float] | None = None):
        self.env = env                      # tirx.Var -> value | LoopAxis | PrimExpr (lazy let)
        self.assume = assume or {}          # buffer/var name -> value bound by the user
        self.assumed_used: set[str] = set()
        # values of scalar locals (T.alloc_local((1,)), T.alloc_var) the walk could follow:
        # (data Var, constant indices) -> value over the grid
        self.locals: dict = {}
        # scalar locals whose value was read from a tensor (a group index found by a scan of an
        # offsets table): key -> the grid axes that value depends on, or None (unknown)
        self.data_locals: dict = {}
        # scalar kernel arguments that shape no buffer and were given no value (an offset passed
        # at launch): run-time values, one per launch (the same in every block), like a tensor
        # element read with constant indices
        self.run_time_args: frozenset = frozenset()

    def child(self, extra: dict) -> "Evaluator":
        ev = Evaluator({**self.env, **extra}, self.assume)
        ev.assumed_used = self.assumed_used
        ev.locals = self.locals
        ev.data_locals = self.data_locals
        ev.run_time_args = self.run_time_args
        return ev

    def grid_deps(self, expr, loops: bool = False, own=None):
        """The grid axes (0 z, 1 y, 2 x) on which `expr` can depend, run-time values included: a
        tensor element depends on what its indices depend on, a local read from one on what its
        value did.  None where it also depends on a thread index, on a loop variable (unless
        `loops`: then loop variables are ignored) or on something unknown.  `own`: the key of the
        local being written, whose earlier value (x = f(x)) adds nothing new."""
        deps: set = set()
        bad = []

        def visit(n):
            if isinstance(n, tirx.Var):
                val = self.env.get(n, _UNBOUND)
                if isinstance(val, LoopAxis):
                    if val.replicated or not loops:
                        bad.append(n)
                elif isinstance(val, np.ndarray):
                    deps.update(i for i in range(min(val.ndim, GRID_AXES)) if val.shape[i] > 1)
                elif isinstance(val, tirx.PrimExpr):
                    sub = self.grid_deps(val, loops, own)
                    if sub is None:
                        bad.append(n)
                    else:
                        deps.update(sub)
                elif val is _UNBOUND and n.name not in self.assume and n.name not in self.run_time_args:
                    bad.append(n)
            elif isinstance(n, tirx.BufferLoad):
                key = local_key(n.buffer, n.indices)
                if key is not None:
                    if key in self.locals:
                        val = self.locals[key]
                        if isinstance(val, np.ndarray):
                            deps.update(i for i in range(min(val.ndim, GRID_AXES)) if val.shape[i] > 1)
                    elif self.data_locals.get(key) is not None:
                        deps.update(self.data_locals[key])
                    elif key != own:
                        bad.append(n)            # never written, or written per thread
                elif str(n.buffer.scope()).startswith("local"):
                    bad.append(n)            # a per-thread array element: not one value per block
            elif isinstance(n, tirx.Call) and getattr(n.op, "name", "") in _THREAD_INDEX_CALLS:
                bad.append(n)
        tirx.stmt_functor.post_order_visit(expr, visit)
        return None if bad else frozenset(deps)

    def __call__(self, e):
        handler = _HANDLERS.get(type(e))
        if handler is None:
            handler = _HANDLERS[type(e)] = _handler(e)
        return handler(self, e)

    def _number(self, e):
        return e

    def _int_imm(self, e):
        v = int(e.value)
        # a bool constant holds 0 or 1: only those need the (slow to read) dtype
        return bool(v) if v in (0, 1) and e.dtype == "bool" else v

    def _float_imm(self, e):
        return float(e.value)

    def _binary(self, e):
        a, b = _align(self(e.a), self(e.b))
        return _BINARY[type(e)](a, b)

    def _not(self, e):
        v = self(e.a)
        return np.logical_not(v) if isinstance(v, np.ndarray) else (not v)

    def _cast(self, e):
        v = self(e.value)
        if str(e.dtype).startswith(("int", "uint")):
            return v.astype(np.int64) if isinstance(v, np.ndarray) else int(v)
        return v

    def _select(self, e):
        c, t, f = align(self(e.condition), self(e.true_value), self(e.false_value))
        if isinstance(c, np.ndarray) or isinstance(t, np.ndarray) or isinstance(f, np.ndarray):
            return np.where(c, t, f)
        return t if c else f

    def _let(self, e):
        return self.child({e.var: e.value})(e.body)

    def _buffer_load(self, e):
        name = e.buffer.name
        if name in self.assume:
            self.assumed_used.add(name)
            return self.assume[name]
        key = local_key(e.buffer, e.indices)
        if key is not None and key in self.locals:
            return self.locals[key]
        raise DataDependent(name)

    def _ramp(self, e):
        return self(e.base)

    def _broadcast(self, e):
        return self(e.value)

    def _unknown(self, e):
        # an expression kind the walk cannot evaluate (Shuffle, Reduce, ...): unknown, like a run-time
        # value, so the condition or trip count that reads it is bounded and named
        raise DataDependent(f"{type(e).__name__} expression")

    def _var(self, v):
        val = self.env.get(v, _UNBOUND)
        if val is not _UNBOUND:
            if isinstance(val, LoopAxis):
                return val.values()
            if isinstance(val, tirx.PrimExpr):
                return self(val)
            return val
        name = v.name
        if name in self.assume:
            self.assumed_used.add(name)
            return self.assume[name]
        raise DataDependent(name)

    def _thread_linear(self):
        """The block-linear thread id over the thread axes (x fastest), or None outside a launch."""
        axes = self.env.get(THREAD_AXES)
        if not axes:
            return None
        lin, stride = 0, 1
        for loop in axes:
            if loop is None:
                continue
            lin = np.add(*align(lin, np.multiply(loop.values(), stride)))
            stride *= max(loop.max_extent, 1)
        return lin

    def _call(self, e):
        name = e.op.name if hasattr(e.op, "name") else str(e.op)
        if name in _THREAD_INDEX_CALLS:
            lin = self._thread_linear()
            if lin is None:
                raise DataDependent(name)
            args = [self(a) for a in e.args]
            if name == "tl.get_lane_idx":
                return lin % (args[0] if args else 32)
            if name == "tl.tl_shuffle_elect":        # one elected thread per group of n (0: the block)
                n = int(args[0]) if args else 0
                return (lin % n == 0) if n > 0 else (lin == 0)
            warp = args[0] if args else 32
            if name == "tl.get_warp_group_idx":
                return lin // (warp * (args[1] if len(args) > 1 else 4))
            return lin // warp
        if name == "tirx.if_then_else":
            c, t, f = align(*(self(a) for a in e.args))
            if isinstance(c, np.ndarray) or isinstance(t, np.ndarray) or isinstance(f, np.ndarray):
                return np.where(c, t, f)
            return t if c else f
        if name in ("tirx.likely", "tirx.unlikely"):
            return self(e.args[0])
        if name == "tirx.infinity":
            return math.inf
        if name == "tirx.ceildiv" or name == "tl.ceildiv":
            a, b = self(e.args[0]), self(e.args[1])
            return -_floordiv(-a, b)
        if name == "tirx.shift_left":
            return self(e.args[0]) << self(e.args[1])
        if name == "tirx.shift_right":
            return self(e.args[0]) >> self(e.args[1])
        if name in ("tirx.bitwise_and",):
            return self(e.args[0]) & self(e.args[1])
        if name == "tirx.bitwise_or":
            return self(e.args[0]) | self(e.args[1])
        if name == "tirx.bitwise_xor":             # (a swizzled layout's 16-byte chunk index)
            return self(e.args[0]) ^ self(e.args[1])
        # a call's result known only at run time (an atomic's old value): named as such in
        # `bounded`, beside the tensors and scalars there
        raise DataDependent(f"the result of {name}")


def _handler(e):
    """The Evaluator method for an expression of e's type (looked up once per type)."""
    if isinstance(e, (int, float, bool)):
        return Evaluator._number
    if isinstance(e, tirx.IntImm):
        return Evaluator._int_imm
    if isinstance(e, tirx.FloatImm):
        return Evaluator._float_imm
    if isinstance(e, tirx.Var):
        return Evaluator._var
    if type(e) in _BINARY:
        return Evaluator._binary
    for kind, method in ((tirx.Not, Evaluator._not), (tirx.Cast, Evaluator._cast), (tirx.Select, Evaluator._select),
                         (tirx.Let, Evaluator._let), (tirx.Call, Evaluator._call),
                         (tirx.BufferLoad, Evaluator._buffer_load), (tirx.Ramp, Evaluator._ramp),
                         (tirx.Broadcast, Evaluator._broadcast)):
        if isinstance(e, kind):
            return method
    return Evaluator._unknown


# expression type -> Evaluator method
_HANDLERS: dict = {}

# Evaluator._var: a variable without a value in the environment
_UNBOUND = object()


# env key under which the walk keeps the launch's thread axes (x, y, z), for the thread-index intrinsics
THREAD_AXES = "__thread_axes__"
_THREAD_INDEX_CALLS = {"tl.get_lane_idx", "tl.get_warp_idx_sync", "tl.get_warp_idx", "tl.get_warp_group_idx",
                       "tl.tl_shuffle_elect"}


def local_key(buffer, indices):
    """The key of a local scalar element (its storage and constant indices), or None."""
    if not str(buffer.scope()).startswith("local") or buffer.scope() == "local.fragment":
        return None
    idx = []
    for i in indices:
        if not isinstance(i, tirx.IntImm):
            return None
        idx.append(int(i.value))
    return (buffer.data, tuple(idx))


def axes_of(value) -> tuple[int, ...]:
    """Loop axes (>= GRID_AXES) on which an array value actually varies."""
    if not isinstance(value, np.ndarray):
        return ()
    return tuple(i for i in range(GRID_AXES, value.ndim) if value.shape[i] > 1)


def sum_loop_axes(value):
    """Sum an array over its loop axes, leaving an array over the grid axes (or a scalar)."""
    if not isinstance(value, np.ndarray):
        return value
    if value.ndim > GRID_AXES:
        value = value.sum(axis=tuple(range(GRID_AXES, value.ndim)))
    return value
