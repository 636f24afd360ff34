"""The one walk over a TileLang PrimFunc: statements in, neutral OpRecords out.

How counts stay exact: a multiplicity `m` (executions per block, as an array over the grid) is
carried down the tree.  A loop multiplies it by its trip count; an `if` keeps the fraction of
iterations for which the condition holds, found by evaluating the condition over every block
index and every value of the loop variables it mentions at once (numpy broadcasting, one axis per
variable).  Loop variables get an axis only when an expression actually reads them.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
from tvm import tirx

from ..errors import TileroofError
from ..trace import FRAGMENT, GLOBAL, LOCAL, SHARED, KernelTrace, Operand, OpRecord, Unmodeled, dtype_bytes, BufferInfo
from . import affine
from .arith import ArithCount
from .evaluate import GRID_AXES, DataDependent, Evaluator, LoopAxis, align, axes_of, expand, sum_loop_axes

# an array this large (elements) is not built to decide a condition exactly; the count is bounded
MAX_ENUMERATION = 1 << 24

# intrinsics that synchronise, annotate or set up, and move no data and do no arithmetic
_NO_COST_CALLS = {
    "tl.launch_thread_idx", "tirx.tvm_storage_sync", "tl.sync_threads", "tl.annotate_layout",
    "tl.use_swizzle", "tl.fence_proxy_async", "tl.no_set_max_nreg", "tl.set_max_nreg",
    "tirx.assume", "tl.annotate_padding", "tl.annotate_l2_hit_ratio", "tl.disable_warp_group_reg_alloc",
    "tl.pdl_trigger", "tl.pdl_sync", "tl.wait_wgmma", "tl.warpgroup_arrive", "tl.warpgroup_commit_batch",
    "tl.warpgroup_wait", "tl.mbarrier_wait_parity", "tl.mbarrier_arrive", "tl.mbarrier_expect_tx",
    "tl.ptx_fence_barrier_init", "tl.create_list_of_mbarrier", "tl.get_mbarrier", "tl.sync_grid",
    "tl.tileop.reducer_init", "tirx.call_extern",
}


def scope_of(buf) -> str:
    s = buf.scope()
    if s.startswith("shared"):
        return SHARED
    if s == "local.fragment":
        return FRAGMENT
    if s.startswith("local"):
        return LOCAL
    return GLOBAL


def _op_name(call) -> str:
    return call.op.name if hasattr(call.op, "name") else str(call.op)


def _weight(m, value, loops: dict):
    """m restricted/multiplied by `value`, expanding m over loop axes that `value` varies on.

    m lacks an axis when it holds the total over that loop; to multiply by a per-iteration value
    the total is spread back over the iterations (divided by the trip count, masked past it).
    Per-thread axes are not divided: code that does not name the thread runs once per block."""
    for ax in axes_of(value):
        if ax in axes_of(m):
            continue
        loop = loops[ax]
        mask = loop.mask()
        if loop.replicated:
            m = align(m, mask)[0] * mask
        else:
            ext = expand(loop.extent, ax + 1) if isinstance(loop.extent, np.ndarray) else loop.extent
            with np.errstate(divide="ignore", invalid="ignore"):
                spread = np.where(mask, 1.0 / np.maximum(ext, 1), 0.0)
            m, spread = align(m, spread)
            m = m * spread
    m, value = align(m, value)
    return m * value


class Walker:
    def __init__(self, func: tirx.PrimFunc, binding: dict, assume: dict, name: str):
        self.func = func
        self.name = name
        self.env: dict = {}
        self.assume = dict(assume)
        self.grid = [1, 1, 1]
        self.threads = [1, 1, 1]
        self.buffers: dict[str, BufferInfo] = {}
        self.storage: dict = {}            # data Var -> storage name
        self.ops: list[OpRecord] = []
        self.unmodeled: dict = {}
        self.bounded: set[str] = set()
        self.loops: dict[int, LoopAxis] = {}
        self.stages = 0
        self.loop_trip = 1
        self.pipeline = 0
        self._pipelines = 0
        self.parallel_vars: list = []
        self.seq_loop: LoopAxis | None = None
        self.swizzle = (0, "row")
        self.footprint_parts: dict = defaultdict(list)
        self.ev = Evaluator(self.env, self.assume)
        self._bind_params(binding)

    # ---- set-up -------------------------------------------------------------------------------
    def _bind_params(self, binding: dict) -> None:
        by_name = {}
        for p in self.func.params:
            buf = self.func.buffer_map.get(p)
            for e in ([] if buf is None else list(buf.shape)):
                if isinstance(e, tirx.Var):
                    by_name.setdefault(e.name, e)
            if buf is None and p.dtype.startswith(("int", "uint")):
                by_name.setdefault(p.name, p)
        for name, var in by_name.items():
            if name in binding:
                self.env[var] = int(binding[name])
        missing = sorted(n for n in by_name if n not in binding)
        if missing:
            raise TileroofError(
                f"symbolic shape {', '.join(missing)} has no value: pass it with -p {missing[0]}=<int>")
        for p in self.func.params:
            buf = self.func.buffer_map.get(p)
            if buf is not None:
                self._register(buf, is_param=True)

    def _ints(self, exprs, what: str) -> tuple[int, ...]:
        out = []
        for e in exprs:
            try:
                v = self.ev(e)
            except DataDependent as exc:
                raise TileroofError(f"{what} depends on {exc.name}, which has no value: pass -p {exc.name}=<int>") from None
            if isinstance(v, np.ndarray):
                raise TileroofError(f"{what} varies across blocks: {e}")
            out.append(int(v))
        return tuple(out)

    def _register(self, buf, is_param=False, stages=1) -> BufferInfo:
        info = self.buffers.get(buf.name)
        if info is not None:
            return info
        data = buf.data
        storage = self.storage.setdefault(data, buf.name)
        info = BufferInfo(buf.name, scope_of(buf), str(buf.dtype), self._ints(buf.shape, f"shape of {buf.name}"),
                          storage, is_param, stages)
        self.buffers[buf.name] = info
        return info

    # ---- multiplicity helpers -----------------------------------------------------------------
    def _per_block(self, m) -> np.ndarray:
        gx, gy, gz = self.grid
        m = sum_loop_axes(m)
        full = np.broadcast_to(expand(np.asarray(m, dtype=np.float64), GRID_AXES), (gz, gy, gx))
        return np.rint(full).reshape(-1)

    def _unmodeled(self, name: str, m, reason: str) -> None:
        n = int(self._per_block(m).sum())
        prev = self.unmodeled.get(name)
        self.unmodeled[name] = Unmodeled(name, n + (prev.executions if prev else 0), reason)

    def _flags(self) -> frozenset:
        return frozenset()

    # ---- statements ---------------------------------------------------------------------------
    def run(self) -> KernelTrace:
        self._prescan(self.func.body)
        self.visit(self.func.body, 1)
        assumed = tuple(sorted(self.ev.assumed_used))
        return KernelTrace(
            name=self.name, grid=tuple(self.grid), threads=tuple(self.threads), buffers=dict(self.buffers),
            ops=tuple(self.ops), unmodeled=tuple(self.unmodeled.values()), bounded=tuple(sorted(self.bounded)),
            assumed=assumed, swizzle_panel=self.swizzle[0], swizzle_order=self.swizzle[1],
            footprints=self._footprints())

    def _prescan(self, body) -> None:
        found = []

        def visit(n):
            if isinstance(n, tirx.SBlock) and "tl.launch_threads" in n.annotations:
                found.append([int(x) for x in n.annotations["tl.launch_threads"]])
        tirx.stmt_functor.post_order_visit(body, visit)
        if found:
            t = found[0] + [1, 1]
            self.threads = t[:3]

    def visit(self, s, m) -> None:
        method = getattr(self, "visit_" + type(s).__name__, None)
        if method is None:
            self._unmodeled(type(s).__name__, m, "statement kind not modelled")
            return
        method(s, m)

    def visit_SeqStmt(self, s, m):
        for st in s.seq:
            self.visit(st, m)

    def visit_SBlockRealize(self, s, m):
        self.visit(s.block, m)

    def visit_SBlock(self, s, m):
        for b in s.alloc_buffers:
            self._register(b)
        if s.init is not None:
            self.visit(s.init, m)
        self.visit(s.body, m)

    def visit_AllocBuffer(self, s, m):
        self._register(s.buffer)

    def visit_DeclBuffer(self, s, m):
        self._register(s.buffer)

    def visit_Bind(self, s, m):
        v = s.value
        if isinstance(v, tirx.Call) and _op_name(v) == "tl.launch_thread_idx":
            dim = int(v.args[0].value)
            axis = GRID_AXES + len(self.loops)
            loop = LoopAxis(s.var.name, axis, 0, self.threads[dim], replicated=True)
            self.loops[axis] = loop
            self.env[s.var] = loop
            return
        self.env[s.var] = v
        # a scalar let in element code (x = X[i]) still loads and computes once per execution
        arith = ArithCount()
        arith.visit(v)
        if arith.loads or arith.ops:
            self._element_record(f"{s.var.name} = ...", arith, m, target=None)

    def visit_AttrStmt(self, s, m):
        if s.attr_key == "threadblock_swizzle_pattern":
            try:
                fields = list(s.value.args)
                order = str(fields[0].value) if hasattr(fields[0], "value") else str(fields[0])
                self.swizzle = (int(fields[1].value), "column" if "Column" in order else "row")
            except Exception:  # noqa: BLE001 — an unreadable annotation only loses the swizzle
                self.swizzle = (0, "row")
        self.visit(s.body, m)

    def visit_Evaluate(self, s, m):
        v = s.value
        if isinstance(v, tirx.Call):
            name = _op_name(v)
            from .tileops import TILE_OPS
            builder = TILE_OPS.get(name)
            if builder is not None:
                builder(self, v, m)
                return
            if name in _NO_COST_CALLS:
                return
            self._unmodeled(name, m, "intrinsic not modelled")
            return
        if isinstance(v, (tirx.IntImm,)):
            return
        self._unmodeled(type(v).__name__, m, "expression statement not modelled")

    def visit_AssertStmt(self, s, m):
        pass

    def visit_For(self, s, m):
        tb = s.thread_binding
        tag = tb.thread_tag if tb is not None else ""
        if tag.startswith("blockIdx."):
            return self._grid_loop(s, m, tag)
        try:
            extent = self.ev(s.extent)
            start = self.ev(s.min)
        except DataDependent as exc:
            return self._data_dependent_loop(s, m, exc.name)
        axis = GRID_AXES + len(self.loops)
        loop = LoopAxis(s.loop_var.name, axis, start, extent, replicated=tag.startswith("threadIdx."))
        self.loops[axis] = loop
        self.env[s.loop_var] = loop
        saved = (self.stages, self.loop_trip, self.seq_loop, self.pipeline)
        if s.kind == tirx.ForKind.SERIAL and tb is None:
            stages = s.annotations.get("num_stages") if s.annotations else None
            if stages is not None:
                self.stages = int(stages)
                self._pipelines += 1
                self.pipeline = self._pipelines
            self.loop_trip = loop.max_extent
            self.seq_loop = loop
        inner = _weight(m, extent, self.loops)
        parallel = s.kind in (tirx.ForKind.PARALLEL, tirx.ForKind.VECTORIZED)
        if parallel:
            self.parallel_vars.append(s.loop_var)
        self.visit(s.body, inner)
        if parallel:
            self.parallel_vars.pop()
        self.stages, self.loop_trip, self.seq_loop, self.pipeline = saved
        del self.loops[axis]
        del self.env[s.loop_var]

    def _grid_loop(self, s, m, tag):
        axis = {"blockIdx.x": 2, "blockIdx.y": 1, "blockIdx.z": 0}[tag]
        (n,) = self._ints([s.extent], f"grid extent {tag}")
        self.grid[2 - axis] = n
        shape = [1] * (axis + 1)
        shape[axis] = n
        self.env[s.loop_var] = np.arange(n, dtype=np.int64).reshape(shape)
        self.visit(s.body, m)

    def _data_dependent_loop(self, s, m, name):
        self.bounded.add(name)
        self._unmodeled(f"loop over {s.loop_var.name}", m,
                        f"trip count depends on run-time value {name}: bind it with --assume {name}=<value>;"
                        " the body is counted once")
        self.visit(s.body, m)

    def visit_While(self, s, m):
        self._unmodeled("while", m, "while loop: trip count unknown, body counted once")
        self.visit(s.body, m)

    def visit_IfThenElse(self, s, m):
        m_then = self._restrict(s.condition, m)
        if m_then is None:                        # undecidable: count both branches (upper bound)
            self.visit(s.then_case, m)
            if s.else_case is not None:
                self.visit(s.else_case, m)
            return
        self.visit(s.then_case, m_then)
        if s.else_case is not None:
            m, m_then = align(m, m_then)
            self.visit(s.else_case, m - m_then)

    def _restrict(self, cond, m):
        """m restricted to the iterations where `cond` holds, or None when that cannot be known
        (the name of the run-time value is recorded in `bounded`)."""
        loops = affine.loop_vars_in(cond, self.env)
        size = self._grid_size()
        for v in loops:
            size *= max(self.env[v].max_extent, 1)
        if size <= MAX_ENUMERATION:
            try:
                c = self.ev(cond)
            except DataDependent as exc:
                self.bounded.add(exc.name)
                return None
            if not isinstance(c, np.ndarray):
                return m if c else 0 * m
            return _weight(m, c.astype(np.float64), self.loops)
        # too many (block, iteration) pairs to enumerate: count each conjunct in closed form
        factor = 1.0
        per_var: dict = {}
        for part in affine.conjuncts(cond):
            vars_ = affine.loop_vars_in(part, self.env)
            try:
                if not vars_:
                    c = self.ev(part)
                    factor = np.multiply(*align(factor, np.asarray(c, dtype=np.float64)))
                    continue
                cmp = affine.comparison_as_lt(part)
                lin = affine.linear_diff(self.ev, cmp[0], cmp[1]) if cmp and len(vars_) == 1 else None
            except DataDependent as exc:
                self.bounded.add(exc.name)
                return None
            if lin is None or len(lin.loops) != 1:
                self.bounded.add(f"condition {part}")
                return None
            lo, hi, ext = affine.interval_linear_lt(lin, cmp[2])
            v = next(iter(lin.loops))
            if v in per_var:
                plo, phi, _ = per_var[v]
                lo, hi = np.maximum(*align(plo, lo)), np.minimum(*align(phi, hi))
            per_var[v] = (lo, hi, ext)
        for v, (lo, hi, ext) in per_var.items():
            lo, hi, ext = align(lo, hi, ext)
            cnt = np.clip(np.minimum(hi, ext) - np.maximum(lo, 0), 0, None)
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(ext > 0, cnt / np.maximum(ext, 1), 0.0)
            factor = np.multiply(*align(factor, frac))
        m, factor = align(m, factor)
        return m * factor

    def _thread_stride(self, info, indices):
        """Bytes between the elements two neighbouring threads access: the address's coefficient
        of the innermost T.Parallel variable (TileLang maps it to consecutive threads)."""
        if not self.parallel_vars or info.scope in (FRAGMENT, LOCAL):
            return None
        var = self.parallel_vars[-1]
        coef_total = 0
        row = 1
        try:
            for idx, dim in reversed(list(zip(indices, info.shape))):
                lin = affine.linearize(self.ev, idx) if isinstance(idx, tirx.PrimExpr) else None
                if lin is None:
                    return None
                c = lin.coef.get(var, 0)
                if isinstance(c, np.ndarray):
                    c = int(np.max(np.abs(c)))
                coef_total += int(c) * row
                row *= int(dim)
        except DataDependent:
            return None
        return int(abs(coef_total) * dtype_bytes(info.dtype))

    def _grid_size(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def visit_BufferStore(self, s, m):
        arith = ArithCount()
        arith.visit(s.value)
        for i in s.indices:
            arith._indices(i)
        self._element_record(f"{s.buffer.name}[...] = ...", arith, m, target=s)

    def _element_record(self, label, arith, m, target):
        """One record for element-level code: its loads, its store (if any) and its arithmetic."""
        per_block = self._per_block(m)
        n = int(per_block.sum())
        operands = []
        for load in arith.loads:
            info = self._register(load.buffer)
            operands.append(Operand(info.name, info.scope, info.dtype, "read", (1,), n,
                                    access_stride=self._thread_stride(info, load.indices)))
            if info.scope == GLOBAL:
                self._element_footprint(info, load.indices, m)
        if target is not None:
            info = self._register(target.buffer)
            operands.append(Operand(info.name, info.scope, info.dtype, "write", (1,), n,
                                    access_stride=self._thread_stride(info, target.indices)))
            if info.scope == GLOBAL:
                self._element_footprint(info, target.indices, m)
        for name, cnt in arith.unknown.items():
            self._unmodeled(name, m, "operation in element code not modelled")
        self.ops.append(OpRecord(
            kind="elementwise", label=label, executions=n, per_block=per_block,
            operands=tuple(operands), ops_per_exec=dict(arith.ops), pipeline_stages=self.stages,
            loop_trip=self.loop_trip, pipeline=self.pipeline))

    # ---- helpers for tile ops -----------------------------------------------------------------
    def region(self, arg):
        """(BufferInfo, start exprs, extents) of a tl.region / BufferRegion / BufferLoad / Buffer."""
        if isinstance(arg, tirx.Call) and _op_name(arg) == "tl.region":
            load = arg.args[0]
            extents = [int(self.ev(e)) for e in arg.args[2:]]
            starts = list(load.indices)
            buf = load.buffer
            # region extents cover the trailing dims; leading dims have extent 1
            extents = [1] * (len(starts) - len(extents)) + extents
            return self._register(buf), starts, extents, int(arg.args[1].value)
        if isinstance(arg, tirx.BufferRegion):
            return (self._register(arg.buffer), [r.min for r in arg.region],
                    [int(self.ev(r.extent)) for r in arg.region], 3)
        if isinstance(arg, tirx.BufferLoad):
            return self._register(arg.buffer), list(arg.indices), [1] * len(arg.indices), 1
        if isinstance(arg, tirx.Buffer):
            info = self._register(arg)
            return info, [0] * len(info.shape), list(info.shape), 3
        raise TileroofError(f"unrecognised region argument {type(arg).__name__}")

    def tile_elements(self, info: BufferInfo, starts, extents, m):
        """Total elements of the tile actually inside `info` over every execution, the per-block
        start of the tile (loop variables at their first value, for the L2 model) and how far the
        start moves per iteration of the innermost sequential loop."""
        full = 1
        for e in extents:
            full *= e
        executions = float(self._per_block(m).sum())
        if info.scope != GLOBAL:
            return int(round(executions * full)), None, None
        try:
            lins = [affine.linearize(self.ev, st) if isinstance(st, tirx.PrimExpr) else None for st in starts]
        except DataDependent as exc:
            self.bounded.add(exc.name)
            self.footprint_parts[info.storage].append((info, None))
            return int(round(executions * full)), None, None
        ranges, block_start, stride = [], [], []
        inside = True
        for st, lin, ext, dim in zip(starts, lins, extents, info.shape):
            if lin is None:
                if isinstance(st, tirx.PrimExpr):
                    inside = False
                    ranges = None
                    break
                lo = hi_start = int(st)
                lin_lo, lin_hi = lo, lo + ext
                block_start.append(lo)
                stride.append(0)
            else:
                r = affine.index_range(self.ev, st, ext)
                lin_lo, lin_hi = r[0], r[1]
                block_start.append(lin.base)
                c = lin.coef.get(self._seq_var(), 0)
                stride.append(int(np.max(np.abs(c))) if np.size(c) else 0)
            if ranges is not None:
                ranges.append((lin_lo, lin_hi))
            if np.any(np.asarray(lin_lo) < 0) or np.any(np.asarray(lin_hi) > dim):
                inside = False
        if ranges is not None:
            self.footprint_parts[info.storage].append((info, ranges))
        else:
            self.footprint_parts[info.storage].append((info, None))
        if inside:
            total = executions * full
        else:
            total = self._clipped_elements(info, starts, extents, m, executions * full)
        return int(round(total)), (tuple(block_start) if ranges is not None else None), \
            (tuple(stride) if ranges is not None else None)

    def _seq_var(self):
        loop = self.seq_loop
        if loop is None:
            return None
        for var, val in self.env.items():
            if val is loop:
                return var
        return None

    def _clipped_elements(self, info, starts, extents, m, upper):
        """Elements inside the buffer, summed over every block and iteration (edge tiles)."""
        try:
            vals = [self.ev(st) for st in starts]
        except DataDependent as exc:
            self.bounded.add(exc.name)
            return upper
        size = max((v.size for v in vals if isinstance(v, np.ndarray)), default=1)
        if size > MAX_ENUMERATION:
            self.bounded.add(f"edge clipping of {info.name}")
            return upper
        inside = 1.0
        for v, ext, dim in zip(vals, extents, info.shape):
            lo = np.maximum(v, 0)
            hi = np.minimum(np.add(v, ext), dim)
            inside = np.multiply(*align(inside, np.maximum(np.subtract(hi, lo), 0)))
        return float(np.sum(self._per_block(_weight(m, np.asarray(inside, dtype=np.float64), self.loops))))

    def _tile_footprint(self, info, vals, extents):
        ranges = [(v, np.add(v, e)) for v, e in zip(vals, extents)]
        self.footprint_parts[info.storage].append((info, ranges))

    def _element_footprint(self, info, indices, m):
        ranges = []
        try:
            for i in indices:
                r = affine.index_range(self.ev, i, 1) if isinstance(i, tirx.PrimExpr) else (int(i), int(i) + 1, True)
                if r is None:
                    ranges = None
                    break
                ranges.append((r[0], r[1]))
        except DataDependent as exc:
            self.bounded.add(exc.name)
            ranges = None
        self.footprint_parts[info.storage].append((info, ranges))

    def _footprints(self) -> dict:
        """Unique bytes touched per storage: per dimension, the union of the index ranges of every
        block (all iterations included); the footprint is the product over dimensions (an upper
        bound when coverage is not a product set, e.g. triangular), capped at the buffer's size."""
        out = {}
        for storage, parts in self.footprint_parts.items():
            by_buffer: dict = {}
            for info, ranges in parts:
                entry = by_buffer.setdefault(info.name, [info, [], False])
                if ranges is None:
                    entry[2] = True
                else:
                    entry[1].append(ranges)
            total = 0
            cap = 0
            for name, (info, range_list, unknown) in by_buffer.items():
                cap = max(cap, info.nbytes)
                if unknown or not range_list:
                    total += info.nbytes
                    continue
                elems = 1
                for d, dim in enumerate(info.shape):
                    pairs = [np.broadcast_arrays(*align(np.asarray(r[d][0], dtype=np.int64),
                                                        np.asarray(r[d][1], dtype=np.int64))) for r in range_list]
                    los = np.concatenate([p[0].reshape(-1) for p in pairs])
                    his = np.concatenate([p[1].reshape(-1) for p in pairs])
                    elems *= affine.union_length(los, his, dim)
                total += int(elems * dtype_bytes(info.dtype))
            out[storage] = min(total, cap)
        return out

    def record(self, kind, label, m, operands=(), attrs=None, ops_per_exec=None):
        per_block = self._per_block(m)
        self.ops.append(OpRecord(
            kind=kind, label=label, executions=int(per_block.sum()), per_block=per_block,
            operands=tuple(operands), attrs=attrs or {}, ops_per_exec=ops_per_exec or {},
            pipeline_stages=self.stages, loop_trip=self.loop_trip, pipeline=self.pipeline))

    def mark_pipelined(self, info: BufferInfo) -> None:
        """A shared buffer filled inside a T.Pipelined loop is kept in `stages` copies."""
        if self.stages > 1 and info.scope == SHARED and info.stages < self.stages:
            self.buffers[info.name] = BufferInfo(info.name, info.scope, info.dtype, info.shape, info.storage,
                                                 info.is_param, self.stages)
