"""Arithmetic in element-level code (T.Parallel / serial / vectorized bodies), counted by unit.

One table entry per operation, like torch.utils.flop_counter's registry: the TIR node or intrinsic
maps to (unit, FLOPs per result).  Units: "cuda" (CUDA-core ALU at the node's dtype), "sfu"
(special-function unit), "cvt" (conversions: not FLOPs, listed because they cost issue slots),
"alu" (selects -- T.if_then_else, Select -- and integer bit operations -- &, |, ^, ~, shifts -- not
FLOPs either: one SEL/FSEL/LOP3/SHF instruction each on the SM's integer/logic pipe, counted for the
instruction estimate, counts.instructions).
Index arithmetic (integer math inside buffer indices) is not counted.
"""
from __future__ import annotations

from collections import Counter

import tvm
from tvm import tirx

# node type -> op name, FLOPs per result on the CUDA cores
_NODE_OPS = {
    tirx.Add: "add", tirx.Sub: "sub", tirx.Mul: "mul", tirx.Div: "div",
    tirx.Min: "min", tirx.Max: "max",
    tirx.EQ: "cmp", tirx.NE: "cmp", tirx.LT: "cmp", tirx.LE: "cmp", tirx.GT: "cmp", tirx.GE: "cmp",
}

# intrinsic name -> (unit, op name, FLOPs per result)
CALL_OPS = {
    "tirx.exp": ("sfu", "exp", 1), "tirx.exp2": ("sfu", "exp2", 1), "tirx.exp10": ("sfu", "exp10", 1),
    "tirx.log": ("sfu", "log", 1), "tirx.log2": ("sfu", "log2", 1), "tirx.log10": ("sfu", "log10", 1),
    "tirx.log1p": ("sfu", "log1p", 1),
    "tirx.rsqrt": ("sfu", "rsqrt", 1), "tirx.sqrt": ("sfu", "sqrt", 1),
    "tirx.tanh": ("sfu", "tanh", 1), "tirx.sigmoid": ("sfu", "sigmoid", 1),
    "tirx.sin": ("sfu", "sin", 1), "tirx.cos": ("sfu", "cos", 1), "tirx.tan": ("sfu", "tan", 1),
    "tirx.erf": ("sfu", "erf", 1), "tirx.pow": ("sfu", "pow", 1),
    "tl.rsqrt": ("sfu", "rsqrt", 1), "tl.exp2": ("sfu", "exp2", 1),
    # CUDA's fast intrinsics (__expf, ...): the hardware approximation whatever the build flags
    "tl.__exp": ("sfu", "__exp", 1), "tl.__exp10": ("sfu", "__exp10", 1), "tl.__log": ("sfu", "__log", 1),
    "tl.__log2": ("sfu", "__log2", 1), "tl.__log10": ("sfu", "__log10", 1), "tl.__tan": ("sfu", "__tan", 1),
    "tl.__cos": ("sfu", "__cos", 1), "tl.__sin": ("sfu", "__sin", 1),
    "tirx.fabs": ("cuda", "abs", 1), "tirx.floor": ("cuda", "floor", 1), "tirx.ceil": ("cuda", "ceil", 1),
    "tirx.round": ("cuda", "round", 1), "tirx.trunc": ("cuda", "trunc", 1),
    "tirx.fma": ("cuda", "fma", 2),
    # a lane exchange in element code (a Hadamard transform's butterflies): one SHFL each
    "tirx.tvm_warp_shuffle": ("alu", "shfl", 1),
    "tirx.tvm_warp_shuffle_up": ("alu", "shfl", 1),
    "tirx.tvm_warp_shuffle_down": ("alu", "shfl", 1),
    "tl.clamp": ("cuda", "clamp", 2),          # max(lo, min(x, hi))
}
# intrinsics that select or pass values through and cost no arithmetic of their own
_FREE_CALLS = {"tirx.if_then_else", "tirx.likely", "tirx.reinterpret", "tirx.infinity",
               "tirx.max_value", "tirx.min_value", "tirx.ret", "tl.infinity",
               # addresses and thread/lane/warp indices: address math, like integer index arithmetic
               "tl.access_ptr", "tirx.address_of", "tirx.tvm_access_ptr", "tl.get_lane_idx",
               "tl.get_warp_idx_sync", "tl.get_warp_idx", "tl.get_warp_group_idx", "tl.block_rank_in_cluster"}


# bit operations: on booleans they are the predicate logic of masks (free, like and/or); on
# integers (a dequantisation's bit twiddling) one LOP3 / SHF instruction each on the integer pipe,
# counted like selects ("alu": instructions, not FLOPs)
_BIT_CALLS = {"tirx.bitwise_and", "tirx.bitwise_or", "tirx.bitwise_xor", "tirx.bitwise_not",
              "tirx.shift_left", "tirx.shift_right"}


def _constant(e) -> bool:
    """True when an expression has no variable and no load: the compiler folds it."""
    if isinstance(e, (tirx.IntImm, tirx.FloatImm, tirx.StringImm)):
        return True
    if isinstance(e, (tirx.Var, tirx.BufferLoad)):
        return False
    if isinstance(e, tirx.Call):
        name = e.op.name if hasattr(e.op, "name") else ""
        return name in ("tirx.infinity", "tl.infinity", "tirx.max_value", "tirx.min_value") or \
            (name in CALL_OPS and all(_constant(a) for a in e.args))
    if isinstance(e, tirx.Cast):
        return _constant(e.value)
    parts = [getattr(e, f, None) for f in ("a", "b")]
    if all(isinstance(p, tirx.PrimExpr) for p in parts):
        return all(_constant(p) for p in parts)
    return False


def _is_float(dtype) -> bool:
    d = str(dtype)
    return d.startswith(("float", "bfloat"))


class ArithCount:
    """Counts of one element-level expression: ops by (unit, dtype, op) and the loads it makes."""

    def __init__(self, invariant=None):
        self.ops: Counter = Counter()
        self.loads: list[tirx.BufferLoad] = []
        self.unknown: Counter = Counter()
        self._seen_int: set = set()
        # the part of `ops` in subexpressions that `invariant(expr)` says do not change from one
        # T.Parallel iteration to the next (max_x[0] * scale): the compiler computes them once a
        # thread, not once an element (instructions only: FLOPs count as written)
        self.invariant: Counter = Counter()
        self._is_invariant = invariant
        self._in_invariant = False

    def visit(self, e) -> None:
        if isinstance(e, (tirx.IntImm, tirx.FloatImm, tirx.Var, tirx.StringImm)) or e is None:
            return
        if _constant(e):            # folded by the compiler (e.g. -inf written as inf * -1.0)
            return
        if (self._is_invariant is not None and not self._in_invariant
                and not isinstance(e, tirx.BufferLoad) and self._is_invariant(e)):
            before = Counter(self.ops)
            self._in_invariant = True
            try:
                self._visit(e)
            finally:
                self._in_invariant = False
            self.invariant.update(self.ops - before)
            return
        self._visit(e)

    def _visit(self, e) -> None:
        if not isinstance(e, tirx.BufferLoad) and not _is_float(e.dtype) and str(e.dtype) != "bool":
            # integer work written more than once in one statement (a dequantisation's nibble,
            # x >> s & 15, in each of the sign, exponent and mantissa fields) is computed once:
            # the compiler eliminates the common subexpression
            key = tvm.ir.structural_hash(e)
            if key in self._seen_int:
                return
            self._seen_int.add(key)
        if isinstance(e, tirx.BufferLoad):
            self.loads.append(e)
            for i in e.indices:
                self._indices(i)
            return
        if isinstance(e, tirx.Add) and _is_float(e.dtype):
            for mul, other in ((e.a, e.b), (e.b, e.a)):
                if isinstance(mul, tirx.Mul):
                    self.ops[("cuda", str(e.dtype), "fma")] += 2
                    self.visit(mul.a)
                    self.visit(mul.b)
                    self.visit(other)
                    return
        name = _NODE_OPS.get(type(e))
        if name is not None:
            dtype = e.a.dtype if name == "cmp" else e.dtype
            if _is_float(dtype):
                self.ops[("cuda", str(dtype), name)] += 1
            self.visit(e.a)
            self.visit(e.b)
            return
        if isinstance(e, (tirx.FloorDiv, tirx.FloorMod, tirx.Mod, tirx.And, tirx.Or)):
            if _is_float(e.dtype):
                self.ops[("cuda", str(e.dtype), "div")] += 1
            self.visit(e.a)
            self.visit(e.b)
            return
        if isinstance(e, tirx.Not):
            self.visit(e.a)
            return
        if isinstance(e, tirx.Cast):
            if str(e.dtype) != str(e.value.dtype):
                self.ops[("cvt", f"{e.value.dtype}->{e.dtype}", "cvt")] += 1
            self.visit(e.value)
            return
        if isinstance(e, tirx.Select):
            self.ops[("alu", str(e.dtype), "select")] += 1
            self.visit(e.condition)
            self.visit(e.true_value)
            self.visit(e.false_value)
            return
        if isinstance(e, (tirx.Ramp, tirx.Broadcast)):
            self.visit(e.base if isinstance(e, tirx.Ramp) else e.value)
            return
        if isinstance(e, tirx.Let):
            self.visit(e.value)
            self.visit(e.body)
            return
        if isinstance(e, tirx.Call):
            name = e.op.name if hasattr(e.op, "name") else str(e.op)
            entry = CALL_OPS.get(name)
            if name == "tirx.if_then_else":
                self.ops[("alu", str(e.dtype), "select")] += 1
            if entry is not None:
                unit, op, flops = entry
                if unit != "cuda" or _is_float(e.dtype):    # integer min/max/clamp: integer math, as +
                    self.ops[(unit, str(e.dtype), op)] += flops
            elif name in _BIT_CALLS and str(e.dtype) == "bool":
                pass                                     # & | ^ ~ of predicates: logic, as `and`
            elif name in _BIT_CALLS:
                self.ops[("alu", str(e.dtype), "bit")] += 1
            elif name not in _FREE_CALLS:
                self.unknown[name] += 1
            for a in e.args:
                self.visit(a)
            return
        self.unknown[type(e).__name__] += 1

    def _indices(self, e) -> None:
        """Index expressions: their arithmetic is address math, but loads inside them are real."""
        if isinstance(e, tirx.BufferLoad):
            self.visit(e)
            return
        for attr in ("a", "b", "value", "condition", "true_value", "false_value", "base"):
            sub = getattr(e, attr, None)
            if isinstance(sub, tirx.PrimExpr):
                self._indices(sub)
        if isinstance(e, tirx.Call):
            for a in e.args:
                self._indices(a)
