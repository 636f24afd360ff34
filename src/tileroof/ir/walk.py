"""The one walk over a TileLang PrimFunc: statements in, neutral OpRecords out.

How counts stay exact: a multiplicity `m` (executions per block, as an array over the grid) is
carried down the tree.  A loop multiplies it by its trip count; an `if` keeps the fraction of
iterations for which the condition holds, found by evaluating the condition over every block
index and every value of the loop variables it mentions at once (numpy broadcasting, one axis per
variable).  Loop variables get an axis only when an expression actually reads them.
"""
from __future__ import annotations

import contextlib

from collections import Counter, defaultdict
from dataclasses import replace

import numpy as np
import tvm
from tvm import tirx

from ..errors import TileroofError
from ..trace import FRAGMENT, GLOBAL, LOCAL, SHARED, KernelTrace, Operand, OpRecord, Unmodeled, dtype_bytes, BufferInfo
from . import affine
from .arith import ArithCount
from .evaluate import (GRID_AXES, THREAD_AXES, _THREAD_INDEX_CALLS, DataDependent, Evaluator, LoopAxis, align,
                       axes_of, expand, local_key, sum_loop_axes)
from .tileops import TILE_OPS

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
    "tl.tileop.reducer_init",
    # a device assert only branches on a condition (its loads and compare are the Bind before it)
    "tl.device_assert", "tl.device_assert_with_msg",
    # mbarrier / cp.async-group / named-barrier / cluster synchronisation and register-budget hints
    "tirx.ptx_arrive_barrier", "tirx.ptx_arrive_barrier_expect_tx", "tirx.ptx_wait_barrier",
    "tirx.ptx_init_barrier_thread_count", "tirx.create_barriers", "tirx.ptx_commit_group", "tirx.ptx_wait_group",
    "tirx.ptx_cp_async_barrier", "tl.ptx_cp_async_barrier_noinc", "tl.named_barrier_arrive", "tl.sync_warp",
    "tl.cluster_arrive", "tl.cluster_arrive_relaxed", "tl.cluster_sync", "tl.cluster_wait",
    "tl.ptx_arrive_cluster_barrier", "tl.annotate_producer_reg_dealloc", "tl.annotate_consumer_reg_alloc",
    "tl.warpgroup_fence_operand", "tl.tcgen05_after_thread_sync", "tl.tcgen05_before_thread_sync",
    "tl.tcgen05_mma_arrive", "tl.tma_store_arrive", "tl.tma_store_wait",
    "tl.ptx_init_tensor_memory", "tl.deallocate_tmem",
}

# the register-budget calls among them, kept in the trace (KernelTrace.register_hints)
_REGISTER_HINT_CALLS = {"tl.no_set_max_nreg", "tl.disable_warp_group_reg_alloc", "tl.set_max_nreg",
                        "tl.annotate_producer_reg_dealloc", "tl.annotate_consumer_reg_alloc"}

# external functions that print, sleep or synchronise; any other extern call is not modelled
_NO_COST_EXTERNS = ("debug_print", "printf", "__nanosleep", "__syncwarp", "__syncthreads", "__threadfence")

# threads of a T.Kernel launched without threads= (the CUDA backend's default)
DEFAULT_THREADS = 128

# a while loop is run iteration by iteration; past this many it is cut off (and flagged)
MAX_WHILE_ITERATIONS = 4096


def _reads_local(expr) -> bool:
    found = []

    def visit(n):
        if isinstance(n, tirx.BufferLoad) and local_key(n.buffer, n.indices) is not None:
            found.append(n)
    tirx.stmt_functor.post_order_visit(expr, visit)
    return bool(found)


def _buffers_in(call) -> list:
    """The buffers a tile op or intrinsic names as operands (regions, element pointers), not the
    loads inside their indices."""
    out = []
    for a in call.args:
        if isinstance(a, tirx.BufferLoad):
            out.append(a.buffer)
        elif isinstance(a, tirx.BufferRegion):
            out.append(a.buffer)
        elif isinstance(a, tirx.Call):
            out.extend(_buffers_in(a))
    return out


def scope_of(buf) -> str:
    s = buf.scope()
    if s.startswith("shared"):
        return SHARED
    if s == "local.fragment":
        return FRAGMENT
    if s.startswith("local"):
        return LOCAL
    return GLOBAL


def _items(array) -> list:
    """A TVM Array's elements as a list: slicing converts it in one pass, where iterating it calls
    the FFI twice per element."""
    return array[:]


def _any_below(a, b) -> bool:
    """np.any(a < b) for numbers or arrays (plain comparison for two numbers, an integer array's
    extreme against a number)."""
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) and a.size and a.dtype.kind in "iu":
            return bool(a.min() < b)
        return bool(np.any(np.less(a, b)))
    if isinstance(b, np.ndarray):
        if b.size and b.dtype.kind in "iu":
            return bool(a < b.max())
        return bool(np.any(np.less(a, b)))
    return a < b


def _op_name(call) -> str:
    op = call.op
    name = getattr(op, "name", None)
    return str(op) if name is None else name


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



# host loops around kernel launches are walked trip by trip, each launch on its own, up to this many
MAX_HOST_TRIPS = 256


def _launches_inside(stmt) -> bool:
    """Whether a statement holds a kernel launch (a blockIdx-bound loop)."""
    found = []

    def visit(n):
        if isinstance(n, tirx.For) and n.thread_binding is not None and \
                n.thread_binding.thread_tag.startswith("blockIdx."):
            found.append(n)
    tirx.stmt_functor.post_order_visit(stmt, visit)
    return bool(found)


_DIVIDES = (tirx.FloorDiv, tirx.FloorMod, tirx.Div, tirx.Mod)


def _tile_starts_divide_by(body, var, env) -> bool:
    """Whether a global tile copy in `body` starts at an index that reaches `var` (directly or
    through let-bound names, as `env` holds them) under a division or modulo."""
    def reaches(expr, seen=()) -> bool:
        hit = []

        def visit(n):
            if hit:
                return
            if isinstance(n, tirx.Var):
                if n.same_as(var):
                    hit.append(n)
                elif n not in seen:
                    val = env.get(n)
                    if isinstance(val, tirx.PrimExpr) and reaches(val, seen + (n,)):
                        hit.append(n)
        tirx.stmt_functor.post_order_visit(expr, visit)
        return bool(hit)

    def divided(expr, seen=()) -> bool:
        found = []

        def visit(n):
            if found:
                return
            if isinstance(n, _DIVIDES) and reaches(n):
                found.append(n)
            elif isinstance(n, tirx.Var) and n not in seen:
                val = env.get(n)
                if isinstance(val, tirx.PrimExpr) and divided(val, seen + (n,)):
                    found.append(n)
        tirx.stmt_functor.post_order_visit(expr, visit)
        return bool(found)

    lets = {}

    def binds(n):
        if isinstance(n, tirx.Bind):
            lets[n.var] = n.value
    tirx.stmt_functor.post_order_visit(body, binds)
    env = {**env, **lets}                  # names bound inside the loop body too
    found = []

    def collect(n):
        if found or not isinstance(n, tirx.Call) or not str(getattr(n.op, "name", "")).startswith("tl.tileop."):
            return
        for a in n.args:
            if isinstance(a, tirx.Call) and getattr(a.op, "name", "") == "tl.region":
                load = a.args[0]
                if isinstance(load, tirx.BufferLoad) and str(load.buffer.scope()) == "global":
                    if any(divided(i) for i in load.indices):
                        found.append(a)
    tirx.stmt_functor.post_order_visit(body, collect)
    return bool(found)


# CUDA's grid extents (x: 2^31 - 1, y and z: 65535), and the most blocks the walk holds per-block
# arrays for (2^24: ~5 GB and ~20 s at the peak; the sweep's 8.4 M-block GEMM took 8.9 s, 2.7 GB)
CUDA_GRID_LIMITS = {"blockIdx.x": 2**31 - 1, "blockIdx.y": 65535, "blockIdx.z": 65535}
MAX_WALKED_BLOCKS = 2**24


class Walker:
    def __init__(self, func: tirx.PrimFunc, binding: dict, assume: dict, name: str, taken: dict | None = None):
        self.func = func
        self.name = name
        self.env: dict = {}
        self.assume = dict(assume)
        # run-time value name -> share of the evaluations in which a branch condition reading it
        # holds (the user's --taken; without it such a branch counts as always taken, an upper bound)
        self.taken = {k: float(v) for k, v in (taken or {}).items()}
        self.taken_used: set[str] = set()
        self._taken_share = 1.0        # share the last data branch's --taken values give (visit_IfThenElse)
        self._data_branch_depth = 0    # inside a branch on run-time data (its records get attrs data_branch)
        # the innermost such branch with a --taken share: (share, the grid axes its condition reads,
        # None when it also reads a thread index or something unknown)
        self._data_branch_share: tuple | None = None
        self._reads_data = False       # the condition _restrict just read reads run-time data
        self.pipeline_all_trips = None  # the T.Pipelined loop's trips, taken by a data branch or not
        self._serial_loops: list[int] = []   # ids of the sequential loops around the current statement
        self._loop_count = 0
        self.grid = [1, 1, 1]
        self.threads = [1, 1, 1]
        self.buffers: dict[str, BufferInfo] = {}
        self.storage: dict = {}            # data Var -> storage name
        self.ops: list[OpRecord] = []
        self.unmodeled: dict = {}
        self.bounded: set[str] = set()
        self.data_indexed: set[str] = set()
        self.data_keyed: set[str] = set()
        self.loops: dict[int, LoopAxis] = {}
        self.stages = 0
        self.pipeline = 0
        self._pipelines = 0
        self.parallel_vars: list = []
        self.swizzle = (0, "row")
        self.register_hints: list = []
        self.layouts: dict = {}            # shared buffer data Var -> annotated tl.Layout (T.annotate_layout)
        self.footprint_parts: dict = defaultdict(list)
        # SIMT context: statements outside every T.Parallel run in each thread of the block;
        # conditions on thread indices (warp specialisation, `if tx == 0`) select threads
        self.parallel_depth = 0
        self.thread_conds: list = []
        self._uncertain = 0            # inside a body whose execution count is only bounded
        self._record_attrs: dict = {}  # attrs every record gets (SIMT intrinsics: simt_threads)
        self.pipeline_trips = None     # per-block iterations of the enclosing T.Pipelined loop
        # one PrimFunc may hold several T.Kernel launches, run one after another
        self.launches: list[KernelTrace] = []
        self._virtual_cap = 0              # real blocks of a launch whose persistent loop is its grid
        self._virtual_after = None
        self._grid_depth = 0
        self._outer_buffers: dict[str, BufferInfo] = {}
        self._all_footprint_parts: dict = defaultdict(list)
        self.ev = Evaluator(self.env, self.assume)
        self._bind_params(binding)

    # ---- set-up -------------------------------------------------------------------------------
    def _bind_params(self, binding: dict) -> None:
        buffer_map = self.func.buffer_map
        params = [(p, buffer_map.get(p)) for p in _items(self.func.params)]
        by_name, shapes = {}, set()
        for p, buf in params:
            for e in ([] if buf is None else _items(buf.shape)):
                if isinstance(e, tirx.Var):
                    by_name.setdefault(e.name, e)
                    shapes.add(e.name)
            if buf is None and p.dtype.startswith(("int", "uint")):
                by_name.setdefault(p.name, p)
        for name, var in by_name.items():
            if name in binding:
                self.env[var] = int(binding[name])
        # a scalar argument that shapes no buffer (an offset) may stay a run-time value: what
        # needs its value is bounded and names it (--assume NAME=V gives one); a shape may not
        self.ev.run_time_args = frozenset(n for n in by_name if n not in binding and n not in shapes)
        missing = sorted(n for n in by_name if n not in binding and n in shapes)
        if missing:
            raise TileroofError(
                f"symbolic shape {', '.join(missing)} has no value: pass it with -p {missing[0]}=<int>")
        for _, buf in params:
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
        name = buf.name
        info = self.buffers.get(name)
        if info is not None:
            return info
        storage = self.storage.setdefault(buf.data, name)
        info = BufferInfo(name, scope_of(buf), str(buf.dtype), self._ints(_items(buf.shape), f"shape of {name}"),
                          storage, is_param, stages)
        self.buffers[name] = info
        if self._grid_depth == 0:
            self._outer_buffers[name] = info
        return info

    # ---- multiplicity helpers -----------------------------------------------------------------
    def _per_block(self, m) -> np.ndarray:
        gx, gy, gz = self.grid
        m = sum_loop_axes(m)
        if not isinstance(m, np.ndarray):
            return np.full(gx * gy * gz, np.rint(float(m)))
        full = np.empty((gz, gy, gx))
        full[...] = np.rint(expand(m.astype(np.float64, copy=False), GRID_AXES))
        return full.reshape(-1)

    def _executions(self, m) -> float:
        """_per_block(m).sum() without building the per-block array: the counts are whole numbers,
        so the distinct ones' sum times the blocks that repeat each is the same sum, exactly."""
        per_block = np.rint(np.asarray(sum_loop_axes(m), dtype=np.float64))
        return float(per_block.sum()) * (self._grid_size() // per_block.size)

    def _unmodeled(self, name: str, m, reason: str) -> None:
        n = int(self._executions(m))
        prev = self.unmodeled.get(name)
        self.unmodeled[name] = Unmodeled(name, n + (prev.executions if prev else 0), reason)

    # ---- statements ---------------------------------------------------------------------------
    def run(self) -> KernelTrace:
        self._prescan(self.func.body)
        self.visit(self.func.body, 1)
        if not self.launches or self.ops or self.unmodeled:
            self._end_launch()
        if len(self.launches) == 1:
            return self.launches[0]
        return self._combined()

    def _launch_trace(self) -> KernelTrace:
        return KernelTrace(
            name=self.name, grid=tuple(self.grid), threads=tuple(self.threads), buffers=dict(self.buffers),
            ops=tuple(self.ops), unmodeled=tuple(self.unmodeled.values()), bounded=tuple(sorted(self.bounded)),
            assumed=tuple(sorted(self.ev.assumed_used)), taken=self._taken_used(), swizzle_panel=self.swizzle[0],
            swizzle_order=self.swizzle[1], footprints=self._footprints(),
            data_indexed=tuple(sorted(self.data_indexed)), data_keyed=tuple(sorted(self.data_keyed)),
            register_hints=tuple(self.register_hints), resident_blocks=self._virtual_cap)

    def _begin_launch(self, s) -> None:
        """A top-level blockIdx loop starts a kernel launch: fresh grid, threads, records."""
        if self.ops or self.unmodeled:              # work recorded outside any launch
            self._end_launch()
        self.grid = [1, 1, 1]
        self.threads = [1, 1, 1]
        self._virtual_cap, self._virtual_after = 0, None
        self._prescan(s.body)
        self.buffers = dict(self._outer_buffers)
        self.ops, self.unmodeled, self.bounded, self.data_indexed = [], {}, set(), set()
        self.data_keyed = set()
        self.swizzle = (0, "row")
        self.register_hints = []
        self.footprint_parts = defaultdict(list)
        self.ev.locals.clear()
        self.ev.data_locals.clear()

    def _end_launch(self) -> None:
        self.launches.append(self._launch_trace())
        for storage, parts in self.footprint_parts.items():
            self._all_footprint_parts[storage].extend(parts)
        self.ops, self.unmodeled, self.bounded, self.data_indexed = [], {}, set(), set()
        self.data_keyed = set()
        self.footprint_parts = defaultdict(list)
        self.grid, self.threads = [1, 1, 1], [1, 1, 1]
        self.env.pop(THREAD_AXES, None)
        for axis in [a for a, loop in self.loops.items() if loop.replicated]:   # thread indices
            var = next((v for v, val in self.env.items() if val is self.loops[axis]), None)
            if var is not None:
                del self.env[var]
            del self.loops[axis]

    def _combined(self) -> KernelTrace:
        """Several launches: one trace holding all their records (for counting) and each launch's
        own trace (for timing, which needs one grid)."""
        first = self.launches[0]
        unmodeled: dict = {}
        buffers: dict = {}
        for t in self.launches:
            buffers.update(t.buffers)
            for u in t.unmodeled:
                prev = unmodeled.get(u.name)
                unmodeled[u.name] = Unmodeled(u.name, u.executions + (prev.executions if prev else 0), u.reason)
        return KernelTrace(
            name=self.name, grid=first.grid, threads=first.threads, buffers=buffers,
            ops=tuple(op for t in self.launches for op in t.ops), unmodeled=tuple(unmodeled.values()),
            bounded=tuple(sorted({b for t in self.launches for b in t.bounded})),
            assumed=tuple(sorted(self.ev.assumed_used)), taken=self._taken_used(), swizzle_panel=first.swizzle_panel,
            swizzle_order=first.swizzle_order, footprints=self._footprints(self._all_footprint_parts),
            data_indexed=tuple(sorted({b for t in self.launches for b in t.data_indexed})),
            data_keyed=tuple(sorted({b for t in self.launches for b in t.data_keyed})),
            register_hints=tuple(h for t in self.launches for h in t.register_hints), launches=tuple(self.launches))

    def _prescan(self, body) -> None:
        found = []

        def visit(n):
            if "tl.launch_threads" in n.annotations:
                found.append([int(x) for x in _items(n.annotations["tl.launch_threads"])])
        # the blocks in post order, as post_order_visit would see them, without a Python call per
        # node (ir_transform calls back on SBlocks only; the callback returns None: nothing changes)
        tirx.stmt_functor.ir_transform(body, None, visit, ["tirx.SBlock"])
        if found:
            t = found[0] + [1, 1]
            self.threads = t[:3]
        elif self._has_thread_idx(body):
            # T.Kernel without threads=: TileLang's CUDA backend launches 128 threads
            # (MaterializeKernelLaunch(default_threads=128) in tilelang/cuda/pipeline.py)
            self.threads = [DEFAULT_THREADS, 1, 1]

    @staticmethod
    def _has_thread_idx(body) -> bool:
        found = []

        def visit(n):
            if isinstance(n, tirx.Call) and _op_name(n) == "tl.launch_thread_idx":
                found.append(n)
        tirx.stmt_functor.post_order_visit(body, visit)
        return bool(found)

    def visit(self, s, m) -> None:
        method = getattr(self, "visit_" + type(s).__name__, None)
        if method is None:
            self._unmodeled(type(s).__name__, self._thread_weight(m, False), "statement kind not modelled")
            return
        method(s, m)

    def visit_SeqStmt(self, s, m):
        for st in _items(s.seq):
            self.visit(st, m)

    def visit_SBlockRealize(self, s, m):
        self.visit(s.block, m)

    def visit_SBlock(self, s, m):
        layouts = s.annotations.get("layout_map") if s.annotations else None
        if layouts:
            for data, layout in layouts.items():
                self.layouts[data] = layout
        for b in _items(s.alloc_buffers):
            self._register(b)
        if s.init is not None:
            self.visit(s.init, m)
        self.visit(s.body, m)

    def visit_AllocBuffer(self, s, m):
        self._register(s.buffer)

    def visit_DeclBuffer(self, s, m):
        self._register(s.buffer)

    def visit_Bind(self, s, m):
        v, var = s.value, s.var
        if isinstance(v, tirx.Call) and _op_name(v) == "tl.launch_thread_idx":
            dim = int(v.args[0].value)
            axis = self._free_axis()
            loop = LoopAxis(var.name, axis, 0, self.threads[dim], replicated=True)
            self.loops[axis] = loop
            self.env[var] = loop
            axes = list(self.env.get(THREAD_AXES) or (None, None, None))
            axes[dim] = loop
            self.env[THREAD_AXES] = tuple(axes)
            return
        self.env[var] = v
        if self.ev.locals and _reads_local(v):
            try:                                   # snapshot: the local may change later
                val = self.ev(v)
                if not axes_of(val):
                    self.env[var] = val
            except (DataDependent, TileroofError):
                pass
        # a scalar let in element code (x = X[i]) still loads and computes once per execution
        arith = ArithCount()
        arith.visit(v)
        if arith.loads or arith.ops or arith.unknown:
            self._element_record(f"{var.name} = ...", arith, m, target=None)

    def visit_AttrStmt(self, s, m):
        if s.attr_key == "thread_extent" and isinstance(s.node, tirx.IterVar) and \
                str(s.node.thread_tag).startswith(("blockIdx.", "threadIdx.")):
            # T.launch_thread("blockIdx.x", n) without T.Kernel: the same launch as a thread-bound loop
            iv = s.node
            loop = tirx.For(iv.var, tirx.IntImm(iv.var.dtype, 0), s.value, tirx.ForKind.THREAD_BINDING, s.body, iv)
            return self.visit_For(loop, m)
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
            builder = TILE_OPS.get(name)
            # tile ops are collective (the block, or the warps a thread condition selects, runs them
            # once); element intrinsics outside T.Parallel run in every selected thread
            simt = not name.startswith("tl.tileop.") and self.parallel_depth == 0
            if builder is not None:
                mw = self._thread_weight(m, simt)
                self._record_attrs = self._simt_attrs(m, self._executions(mw)) if simt else {}
                builder(self, v, mw)
                self._record_attrs = {}
                if self.ev.locals:
                    for buf in _buffers_in(v):
                        self._forget_locals(buf)
                return
            if name in _NO_COST_CALLS:
                if name in _REGISTER_HINT_CALLS:
                    args = tuple(int(a.value) for a in v.args if isinstance(a, tirx.IntImm))
                    self.register_hints.append((name, *args))
                return
            if name in ("tirx.call_extern", "tirx.call_pure_extern"):
                fn = str(v.args[0].value) if v.args and isinstance(v.args[0], tirx.StringImm) else "?"
                if fn.startswith(_NO_COST_EXTERNS):
                    return
                self._unmodeled(f"extern {fn}", self._thread_weight(m, simt), "external function call not modelled")
                return
            self._unmodeled(name, self._thread_weight(m, simt), "intrinsic not modelled")
            return
        if isinstance(v, (tirx.IntImm,)):
            return
        self._unmodeled(type(v).__name__, self._thread_weight(m, False), "expression statement not modelled")

    def visit_AssertStmt(self, s, m):
        pass

    def visit_For(self, s, m):
        tb = s.thread_binding
        tag = tb.thread_tag if tb is not None else ""
        if tag.startswith("blockIdx."):
            return self._grid_loop(s, m, tag)
        if tb is None and self._grid_depth == 0 and _launches_inside(s.body):
            return self._host_loop(s, m)
        if tb is None and self._persistent_loop(s):
            return self._virtual_grid_loop(s, m)
        step = getattr(s, "step", None)
        if step is not None and not (isinstance(step, tirx.IntImm) and step.value == 1):
            return self._stepped_loop(s, m)
        var = s.loop_var                  # one wrapper of the loop variable: set and deleted below
        try:
            extent = self.ev(s.extent)
            start = self.ev(s.min)
        except DataDependent as exc:
            name = var.name
            if name not in self.assume:
                return self._data_dependent_loop(s, m, exc.name)
            trips = self.assume[name]                 # --assume LOOPVAR=TRIPS binds the trip count
            if not float(trips).is_integer() or float(trips) < 0:
                raise TileroofError(f"--assume {name}={trips}: a loop's trip count must be a whole number >= 0")
            extent = int(trips)
            self.ev.assumed_used.add(name)
            try:
                start = self.ev(s.min)
            except DataDependent:
                start = 0
            if isinstance(start, np.ndarray):
                start = 0
        thread = tag.startswith("threadIdx.")
        dim = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}.get(tag, 0)
        if thread:
            # a loop bound to a thread index the launch already binds (upstream's
            # `T.thread_binding(0, threads, "threadIdx.x")` inside T.Kernel(threads=...)) is that
            # same hardware index, not a second set of threads: its variable is the launch's
            launched = (self.env.get(THREAD_AXES) or (None, None, None))[dim]
            if launched is not None and not isinstance(extent, np.ndarray) and int(extent) == launched.max_extent:
                self.env[var] = launched
                self.visit(s.body, m)
                del self.env[var]
                return
        axis = self._free_axis()
        loop = LoopAxis(var.name, axis, start, extent, replicated=thread)
        self.loops[axis] = loop
        self.env[var] = loop
        if thread:
            # an explicit thread loop: its body is SIMT code, weighted per thread where it runs
            if self.threads[dim] == 1 and not isinstance(extent, np.ndarray):
                self.threads[dim] = int(extent)
            self.visit(s.body, m)
            del self.loops[axis]
            del self.env[var]
            return
        saved = (self.stages, self.pipeline, self.pipeline_trips, self.pipeline_all_trips)
        inner = _weight(m, extent, self.loops)
        unannotated = None
        kind = s.kind
        if kind == tirx.ForKind.SERIAL and tb is None:
            annotations = s.annotations
            stages = annotations.get("num_stages") if annotations else None
            if stages is not None:
                self.stages = int(stages)
                self._pipelines += 1
                self.pipeline = self._pipelines
                # iterations of this T.Pipelined loop per block (over every enclosing iteration)
                self.pipeline_trips = self._per_block(self._thread_weight(inner, False))
                self.pipeline_all_trips = self.pipeline_trips
            elif not self.pipeline:
                unannotated = (len(self.ops), inner)
        parallel = kind in (tirx.ForKind.PARALLEL, tirx.ForKind.VECTORIZED)
        if parallel:
            self.parallel_vars.append(var)
        element = kind == tirx.ForKind.PARALLEL
        self.parallel_depth += element
        if parallel:
            self.visit(s.body, inner)
        else:
            with self._serial_loop():
                self.visit(s.body, inner)
        self.parallel_depth -= element
        if parallel:
            self.parallel_vars.pop()
        self.stages, self.pipeline, self.pipeline_trips, self.pipeline_all_trips = saved
        if unannotated is not None:
            self._serial_pipeline(*unannotated)
        del self.loops[axis]
        del self.env[var]

    def _persistent_loop(self, s) -> bool:
        """A persistent kernel's tile loop: a serial loop straight inside a launch (no enclosing
        loop, nothing recorded before it, a free y grid axis) whose global tile copies start at
        tiles computed from the loop variable and the block index through a division or modulo
        (T.Persistent; upstream's `tile_id = sm_num * w + bx`, `bx = tile_id // g % m_blocks`).
        Its trips are the tiles a wave of a plain grid would run: `_virtual_grid_loop`."""
        if (self._grid_depth == 0 or s.kind != tirx.ForKind.SERIAL or self.ops or self.unmodeled
                or self.grid[1] != 1 or self._virtual_cap or any(not l.replicated for l in self.loops.values())
                or (s.annotations and s.annotations.get("num_stages") is not None)):
            return False
        try:
            (start, extent) = self._ints([s.min, s.extent], "persistent loop")
        except TileroofError:
            return False
        if start != 0 or extent < 2:
            return False
        return _tile_starts_divide_by(s.body, s.loop_var, self.env)

    def _virtual_grid_loop(self, s, m):
        """A persistent tile loop walked as the grid it stands for: trip w of real block b is
        virtual block (y = w, x = b), launched in that order (x fastest: tile ids w * blocks + b),
        so the L2 model sees the tiles a wave shares and the time model its waves; the real grid
        caps the blocks resident at once (KernelTrace.resident_blocks).  Work after the loop runs
        once per real block (in the first virtual row)."""
        (extent,) = self._ints([s.extent], "persistent loop")
        real = self.grid[0] * self.grid[2]
        self.grid[1] = extent
        self._virtual_cap = real
        var = s.loop_var
        self.env[var] = np.arange(extent, dtype=np.int64).reshape((1, extent, 1))
        try:
            self.visit(s.body, m)
        finally:
            del self.env[var]
        self._virtual_after = (np.arange(extent) == 0).reshape((1, extent, 1))

    def _serial_pipeline(self, first: int, inner) -> None:
        """A serial loop without a num_stages annotation (T.Pipelined(..., num_stages=0), or a plain
        range) that copies global -> shared: each iteration loads, waits and computes in turn -- a
        one-stage pipeline, recorded as one (attrs "unpipelined": no producer warps are added)."""
        new = self.ops[first:]
        if not any(r.kind == "copy" and not r.pipeline and r.attrs.get("src_scope") == GLOBAL
                   and r.attrs.get("dst_scope") == SHARED for r in new):
            return
        self._pipelines += 1
        trips = self._per_block(self._thread_weight(inner, False))
        self.ops[first:] = [r if r.pipeline else replace(
            r, pipeline=self._pipelines, pipeline_stages=1,
            attrs={**r.attrs, "pipeline_trips": trips, "unpipelined": True}) for r in new]

    def _host_loop(self, s, m):
        """A host-side loop around kernel launches (upstream's multi-pass cumsum): one launch per
        trip, the loop variable a number in each; a loop of no trips launches nothing."""
        (start, extent) = self._ints([s.min, s.extent], f"trip count of the host loop over {s.loop_var.name}")
        if extent > MAX_HOST_TRIPS:
            raise TileroofError(f"host loop over {s.loop_var.name} launches kernels {extent} times: more than "
                                f"{MAX_HOST_TRIPS} launches are not analysed")
        var = s.loop_var
        for value in range(start, start + max(extent, 0)):
            self.env[var] = value
            try:
                self.visit(s.body, m)
            finally:
                del self.env[var]

    def _grid_loop(self, s, m, tag):
        axis = {"blockIdx.x": 2, "blockIdx.y": 1, "blockIdx.z": 0}[tag]
        top = self._grid_depth == 0
        if top:
            self._begin_launch(s)
        (n,) = self._ints([s.extent], f"grid extent {tag}")
        if n <= 0:
            raise TileroofError(f"grid extent {tag} is {n}: the kernel launches no blocks (check the parameters)")
        limit = CUDA_GRID_LIMITS[tag]
        if n > limit:
            raise TileroofError(f"grid extent {tag} is {n}: CUDA launches at most {limit} blocks along it")
        self.grid[2 - axis] = n
        blocks = self.grid[0] * self.grid[1] * self.grid[2]
        if blocks > MAX_WALKED_BLOCKS:
            raise TileroofError(f"the grid has {blocks} blocks: more than the {MAX_WALKED_BLOCKS} tileroof walks "
                                "block by block (its counts are arrays over the grid); analyse a smaller size")
        shape = [1] * (axis + 1)
        shape[axis] = n
        var = s.loop_var                  # one wrapper of the loop variable: set and deleted below
        self.env[var] = np.arange(n, dtype=np.int64).reshape(shape)
        self._grid_depth += 1
        try:
            self.visit(s.body, m)
        finally:
            self._grid_depth -= 1
        del self.env[var]
        if top:
            self._end_launch()

    def _stepped_loop(self, s, m):
        """for v in range(min, min + extent, step): a counter loop of ceil(extent / step) trips,
        with v = min + step * counter."""
        counter = tirx.Var(f"{s.loop_var.name}_trip", s.loop_var.dtype)
        trips = tirx.FloorDiv(s.extent + s.step - 1, s.step)
        loop = tirx.For(counter, tirx.IntImm(s.loop_var.dtype, 0), trips, s.kind, s.body, s.thread_binding,
                        s.annotations)
        self.env[s.loop_var] = s.min + counter * s.step
        try:
            self.visit(loop, m)
        finally:
            self.env.pop(s.loop_var, None)

    def _data_dependent_loop(self, s, m, name):
        self.bounded.add(name)
        var = s.loop_var.name
        self._unmodeled(f"loop over {var} ({name})", self._thread_weight(m, False),
                        f"trip count depends on run-time value {name}: bind the trip count with --assume {var}=<trips>"
                        f" (or the value with --assume {name}=<value>); the body is counted once")
        self._uncertain += 1
        with self._serial_loop():
            self.visit(s.body, m)
        self._uncertain -= 1

    @contextlib.contextmanager
    def _serial_loop(self):
        """Statements inside a sequential loop: their records carry its id (a shared buffer
        touched in any iteration stays allocated for the whole loop)."""
        self._loop_count += 1
        self._serial_loops.append(self._loop_count)
        try:
            yield
        finally:
            self._serial_loops.pop()

    def visit_While(self, s, m):
        """Run the loop while its condition can be evaluated for every block (it reads block
        indices and scalar locals the walk follows, as in stream-K); otherwise count the body once."""
        done = 0
        while done < MAX_WHILE_ITERATIONS:
            try:
                c = self.ev(s.condition) if not self._uncertain else None
            except DataDependent as exc:
                self.bounded.add(exc.name)
                c = None
            except TileroofError:
                c = None
            if c is None or axes_of(c) or self.thread_conds:
                break
            c = np.asarray(c, dtype=np.float64) if isinstance(c, np.ndarray) else float(bool(c))
            mc = m * c if not isinstance(c, np.ndarray) else np.multiply(*align(m, c))
            if not np.any(self._per_block(mc) > 0):
                return
            with self._serial_loop():
                self.visit(s.body, mc)
            done += 1
        why = (f"while loop: condition unknown after {done} iterations (it reads a run-time value)"
               if done < MAX_WHILE_ITERATIONS else f"while loop: stopped after {MAX_WHILE_ITERATIONS} iterations")
        self._unmodeled("while", self._thread_weight(m, False), why + "; the body is counted once more")
        self._uncertain += 1
        with self._serial_loop():
            self.visit(s.body, m)
        self._uncertain -= 1

    def visit_IfThenElse(self, s, m):
        if self._thread_vars(s.condition):
            # a condition on thread indices selects threads, not iterations: it is applied per
            # statement (collective work runs if any selected thread runs it, SIMT code per thread)
            self.thread_conds.append(s.condition)
            self.visit(s.then_case, m)
            self.thread_conds.pop()
            if s.else_case is not None:
                self.thread_conds.append(tirx.Not(s.condition))
                self.visit(s.else_case, m)
                self.thread_conds.pop()
            return
        self._taken_share = 1.0
        self._reads_data = False
        m_then = self._restrict(s.condition, m)
        share = self._taken_share
        data = m_then is None or self._reads_data     # the condition reads run-time data
        if m_then is None:                        # undecidable: count both branches (upper bound)
            self._uncertain += 1
            self._data_branch_depth += 1
            self.visit(s.then_case, m)
            if s.else_case is not None:
                self.visit(s.else_case, m)
            self._data_branch_depth -= 1
            self._uncertain -= 1
            return
        # a branch on run-time data inside a T.Pipelined loop (a block-sparse mask's tile check)
        # holds in `share` of the iterations: those are the loop's real iterations for its ops,
        # the skipped ones cost next to nothing
        trips = self.pipeline_trips
        if share != 1.0 and trips is not None:
            self.pipeline_trips = trips * share
        self._data_branch_depth += data
        saved_share = self._data_branch_share
        if data and share != 1.0:
            axes = self.ev.grid_deps(s.condition, loops=True)
            self._data_branch_share = (share, None if axes is None else tuple(sorted(axes)))
        self.visit(s.then_case, m_then)
        if s.else_case is not None:
            if share != 1.0 and trips is not None:
                self.pipeline_trips = trips * (1.0 - share)
            if data and share != 1.0:
                self._data_branch_share = (1.0 - share, self._data_branch_share[1])
            m, m_then = align(m, m_then)
            self.visit(s.else_case, m - m_then)
        self._data_branch_share = saved_share
        self._data_branch_depth -= data
        self.pipeline_trips = trips

    def _taken_used(self) -> tuple:
        return tuple((k, self.taken[k]) for k in sorted(self.taken_used))

    def _data_share(self, name: str) -> float | None:
        """The share of the time a condition reading the run-time value `name` holds: the one the
        user gave (--taken), or None (the branch counts as always taken; `name` goes to `bounded`)."""
        self._reads_data = True
        if name not in self.taken:
            self.bounded.add(name)
            return None
        self.taken_used.add(name)
        self._taken_share *= self.taken[name]
        return self.taken[name]

    def _restrict(self, cond, m):
        """m restricted to the iterations where `cond` holds, or None when that cannot be known
        (the name of the run-time value is recorded in `bounded`); a condition that reads a run-time
        value the user gave a share for (--taken) holds that share of the time."""
        loops = affine.loop_vars_in(cond, self.env)
        size = self._grid_size()
        for v in loops:
            size *= max(self.env[v].max_extent, 1)
        if size <= MAX_ENUMERATION:
            try:
                c = self.ev(cond)
            except DataDependent as exc:
                share = self._data_share(exc.name)
                return None if share is None else m * share
            if not isinstance(c, np.ndarray):
                return m if c else 0 * m
            return _weight(m, c.astype(np.float64), self.loops)
        # too many (block, iteration) pairs to enumerate: count each conjunct in closed form
        factor = 1.0
        per_var: dict = {}
        for part in affine.conjuncts(cond):
            # (a loop of one trip is a constant: the guard j + i_n * 8192 < N with i_n's one trip)
            vars_ = {v: ax for v, ax in affine.loop_vars_in(part, self.env).items() if ax.max_extent > 1}
            try:
                if not vars_:
                    c = self.ev(part)
                    factor = np.multiply(*align(factor, np.asarray(c, dtype=np.float64)))
                    continue
                cmp = affine.comparison_as_lt(part)
                if cmp and len(vars_) > 1:
                    # several loop variables: decided when it holds for all their values or none
                    many = affine.linear_diff(self.ev, cmp[0], cmp[1])
                    decided = affine.decided_linear_lt(many, cmp[2]) if many is not None else None
                    if decided is not None:
                        factor = factor * decided
                        continue
                lin = affine.linear_diff(self.ev, cmp[0], cmp[1]) if cmp and len(vars_) == 1 else None
            except DataDependent as exc:
                share = self._data_share(exc.name)
                if share is None:
                    return None
                factor = factor * share
                continue
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

    def _linearized(self, indices, k: int, memo: dict | None):
        """affine.linearize of indices[k] (a PrimExpr), through `memo` where the caller shares one
        between the readers of one access (each index linearised once; DataDependent kept and
        raised again)."""
        if memo is None:
            return affine.linearize(self.ev, indices[k])
        if k not in memo:
            try:
                memo[k] = affine.linearize(self.ev, indices[k])
            except DataDependent as exc:
                memo[k] = exc
        if isinstance(memo[k], DataDependent):
            raise memo[k]
        return memo[k]

    def _thread_stride(self, info, indices, memo=None):
        """Bytes between the elements two neighbouring threads access: the address's coefficient
        of the innermost T.Parallel variable (TileLang maps it to consecutive threads).  memo: see
        _linearized."""
        if not self.parallel_vars or info.scope in (FRAGMENT, LOCAL):
            return None
        var = self.parallel_vars[-1]
        coef_total = 0
        row = 1
        try:
            for k, idx, dim in reversed(list(zip(range(len(indices)), indices, info.shape))):
                lin = self._linearized(indices, k, memo) if isinstance(idx, tirx.PrimExpr) else None
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

    def _lane_env(self, lanes: int, picks: dict | None = None) -> dict | None:
        """Values of the environment for the first `lanes` threads of the first block: thread
        indices as arrays over the lanes (x fastest), every other loop at its first value (or at
        `picks`' offset from it: {var: offset}), arrays over loop axes read at those coordinates.
        None outside a launch with thread indices."""
        axes = self.env.get(THREAD_AXES)
        if not axes or not any(a is not None for a in axes):
            return None
        coords, rest = {}, np.arange(lanes, dtype=np.int64)
        for loop in axes:
            if loop is not None:
                ext = max(loop.max_extent, 1)
                coords[loop.axis] = rest % ext
                rest = rest // ext
        sub: dict = {THREAD_AXES: None}
        picks = picks or {}

        def first(v):
            return v.reshape(-1)[0] if isinstance(v, np.ndarray) and v.size else v
        for var, val in self.env.items():
            if isinstance(val, LoopAxis):
                sub[var] = (coords[val.axis] if val.replicated and val.axis in coords
                            else first(val.start) + picks.get(var, 0))
            elif isinstance(val, np.ndarray) and val.size > 1:
                sub[var] = val[tuple(coords[a] if a in coords and val.shape[a] > 1 else 0 for a in range(val.ndim))]
        return sub

    # the serial-loop iterations a shared access's wavefronts are averaged over (per loop, evenly
    # spaced values up to this many; in all, at most WAVEFRONT_COMBOS combinations)
    WAVEFRONT_LOOP_SAMPLES = 8
    WAVEFRONT_COMBOS = 32

    def _wavefront_picks(self, skip) -> list:
        """Offsets of the block's own serial loops (not thread or grid axes, not `skip`) at which a
        shared access's lanes are evaluated: every value of a short loop, evenly spaced ones of a
        long one, their combinations (at most WAVEFRONT_COMBOS, evenly chosen)."""
        import itertools
        loops = [(var, val) for var, val in self.env.items()
                 if isinstance(val, LoopAxis) and not val.replicated and val.axis >= GRID_AXES and var is not skip]
        values = []
        for var, val in loops:
            n = max(val.max_extent, 1)
            k = min(n, self.WAVEFRONT_LOOP_SAMPLES)
            values.append([(var, int(v)) for v in np.unique(np.linspace(0, n - 1, k).round().astype(np.int64))])
        combos = [dict(c) for c in itertools.product(*values)] if values else [{}]
        if len(combos) > self.WAVEFRONT_COMBOS:
            combos = [combos[int(i)] for i in np.linspace(0, len(combos) - 1, self.WAVEFRONT_COMBOS).round()]
        return combos

    def _warp_wavefronts(self, buffer, info, indices) -> float:
        """Wavefronts one warp's access of shared `buffer` takes over its bytes / 128, averaged over
        the block's warps and its serial loops' iterations (_wavefront_picks): the lanes' addresses
        (the buffer's annotated layout applied: a swizzle), each lane `width` bytes (a T.vectorized
        loop's elements, at most 16), split into phases of 128 bytes of lanes (32 lanes of 4 bytes,
        16 of 8, 8 of 16); a phase takes as many wavefronts as the most distinct 4-byte words one of
        the 32 banks holds.  0.0 where the addresses cannot be worked out.
        (Hadamard transform, blind2: the transposed read of rows (tx % 8) * 32 + tx / 8 under the
        128-byte XOR swizzle, eight lanes on one bank group -- Nsight's shared wavefronts and bank
        conflicts match this count to 0.3 %.  The padded fp16 transpose's read tile[tx, ty + 8 j]
        of 33-wide rows is conflict-free at even rows and two-way at odd ones: warps and iterations
        differ, so the first warp's first iteration alone does not tell.)"""
        size = dtype_bytes(info.dtype)
        if size < 1:                   # sub-byte elements (fp4): not worked out
            return 0.0
        nthreads = max(self.threads[0] * self.threads[1] * self.threads[2], 1)
        lanes = min(32, nthreads)
        block = min(nthreads, 1024) // lanes * lanes
        vec, vec_var = 1, None
        if self.parallel_vars:
            vec_var = self.parallel_vars[-1]
            loop = self.env.get(vec_var)
            if isinstance(loop, LoopAxis) and not loop.replicated:
                vec = max(loop.max_extent, 1)
        width = int(min(max(vec * size, size), 16))
        per_phase = max(1, min(lanes, 128 // width))
        words = np.arange(max(width // 4, 1), dtype=np.int64)
        total = count = 0
        for picks in self._wavefront_picks(vec_var if vec > 1 else None):
            addr = self._lane_addresses(buffer, info, indices, block, picks, vec_var if vec > 1 else None)
            if addr is None:
                return 0.0
            for w0 in range(0, block, lanes):
                for p0 in range(w0, w0 + lanes, per_phase):
                    w = np.unique((addr[p0:p0 + per_phase, None] // 4 + words[None, :]).reshape(-1))
                    total += int(np.bincount(w % 32, minlength=32).max())
                count += 1
        # over the bytes' own wavefronts (128 bytes each): a warp access of fewer bytes still takes a
        # whole wavefront (32 lanes of 2-byte elements: 64 bytes, one wavefront, a factor of 2)
        return float(total / count * 128 / (lanes * width))

    def _lane_addresses(self, buffer, info, indices, lanes: int, picks: dict, vec_var):
        """Byte offsets into shared `buffer` of the first `lanes` threads' access (serial loops at
        `picks`), the buffer's layout applied; None where they cannot be worked out."""
        sub = self._lane_env(lanes, picks)
        if sub is None:
            return None
        try:
            ev = self.ev.child(sub)
            if vec_var is not None:
                ev.env[vec_var] = 0
            vals = [ev(i) if isinstance(i, tirx.PrimExpr) else int(i) for i in indices]
            shape = [int(d) for d in info.shape]
            layout = self.layouts.get(buffer.data)
            if layout is not None:
                fvars = list(layout.get_forward_vars())
                fexpr = list(layout.get_forward_index())
                lev = self.ev.child({**sub, **dict(zip(fvars, vals))})
                vals = [lev(e) for e in fexpr]
                shape = [int(d) for d in layout.get_output_shape()]
            offset = np.zeros(lanes, dtype=np.int64)
            for v, d in zip(vals, shape):
                offset = offset * d + np.broadcast_to(np.asarray(v, dtype=np.int64), (lanes,))
        except (DataDependent, ValueError, TypeError, IndexError, AttributeError, KeyError):
            return None
        return offset * int(dtype_bytes(info.dtype))

    def _grid_size(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def _free_axis(self) -> int:
        axis = GRID_AXES
        while axis in self.loops:
            axis += 1
        return axis

    def _reads_grid(self, expr) -> bool:
        """Whether an expression depends on a block index (lets followed)."""
        found, seen = [], set()

        def visit(n):
            if not isinstance(n, tirx.Var) or n in seen:
                return
            seen.add(n)
            val = self.env.get(n)
            if isinstance(val, np.ndarray) and val.size > 1:
                found.append(n)
            elif isinstance(val, tirx.PrimExpr):
                tirx.stmt_functor.post_order_visit(val, visit)
        tirx.stmt_functor.post_order_visit(expr, visit)
        return bool(found)

    def _thread_vars(self, expr) -> list:
        """Names of the thread indices (threadIdx) an expression depends on, lets followed; the
        lane / warp / warpgroup index intrinsics read all of them."""
        names = [self.env[v].name for v in affine.loop_vars_in(expr, self.env) if self.env[v].replicated]
        calls = []

        def visit(n):
            if isinstance(n, tirx.Call) and getattr(n.op, "name", "") in _THREAD_INDEX_CALLS:
                calls.append(n)
        tirx.stmt_functor.post_order_visit(expr, visit)
        if calls:
            names += [loop.name for loop in (self.env.get(THREAD_AXES) or ()) if loop is not None]
        return names

    def _thread_weight(self, m, simt: bool, count=None):
        """m times the threads that run a statement, under the enclosing thread conditions.

        Collective work (simt False) runs once where any selected thread runs it; SIMT code runs in
        every selected thread.  `count` restricts the threads counted to those whose index is
        named (a memory access: threads reading one address are one access)."""
        threads = [loop for loop in self.loops.values() if loop.replicated]
        if not threads:
            return m
        counted = {loop.name for loop in threads} if (simt and count is None) else set(count or ())
        if not simt:
            counted = set()
        mask = True
        if self.thread_conds:
            size = self._grid_size() if any(self._reads_grid(c) for c in self.thread_conds) else 1
            names = set()
            for c in self.thread_conds:
                for v in affine.loop_vars_in(c, self.env):
                    if v.name not in names:
                        names.add(v.name)
                        size *= max(self.env[v].max_extent, 1)
            if size > MAX_ENUMERATION:
                self.bounded.add("thread condition (too many blocks x threads to enumerate)")
            else:
                try:
                    for c in self.thread_conds:
                        v = self.ev(c)
                        mask = v if mask is True else np.logical_and(*align(mask, v))
                except DataDependent as exc:        # a run-time condition: every thread (upper bound)
                    self.bounded.add(exc.name)
                    mask = True
                except TileroofError:
                    self.bounded.add("thread condition (not evaluable)")
                    mask = True
        w = np.asarray(mask, dtype=np.float64) if isinstance(mask, np.ndarray) else float(bool(mask))
        # where m already holds one entry per thread along a thread axis (a loop whose trip count
        # reads the thread index: thread t runs 128 - t iterations), each thread is weighed first and
        # the reduction below runs over the product -- multiplying by the thread count as well would
        # count every thread's trips once per thread
        per_thread = any(isinstance(m, np.ndarray) and m.ndim > loop.axis and m.shape[loop.axis] > 1
                         for loop in threads)
        if per_thread:
            w = _weight(m, w, self.loops) if isinstance(w, np.ndarray) else m * w
        # sum over the threads counted, max over the others (collective work runs once)
        for loop in threads:
            ax = loop.axis
            if isinstance(w, np.ndarray) and w.ndim > ax and w.shape[ax] > 1:
                w = w.sum(axis=ax, keepdims=True) if loop.name in counted else w.max(axis=ax, keepdims=True)
            elif loop.name in counted:
                w = w * max(loop.max_extent, 0)
        if per_thread:
            return w
        if not isinstance(w, np.ndarray):
            return m * w if w != 1.0 else m
        return _weight(m, w, self.loops)

    def visit_BufferStore(self, s, m):
        arith = ArithCount(self._parallel_invariance())
        arith.visit(s.value)
        for i in s.indices:
            arith._indices(i)
        self._element_record(f"{s.buffer.name}[...] = ...", arith, m, target=s)
        self._track_local(s, m)
        # element code that only moves global data into shared memory inside a T.Pipelined loop
        # is lowered to cp.async and multi-buffered like a T.copy (a gathered convolution's input
        # tile: three copies of it in the lowered CUDA, and in Nsight's shared memory per block)
        if (self.stages > 1 and isinstance(s.value, tirx.BufferLoad)
                and scope_of(s.buffer) == SHARED and scope_of(s.value.buffer) == GLOBAL):
            self.mark_pipelined(self._register(s.buffer))

    def _track_local(self, s, m) -> None:
        """Follow the value of a scalar local (start_iter[0] = pid * 2 + ...) so that loops and
        conditions reading it can be counted; forget it when its value is not known for every block."""
        key = local_key(s.buffer, s.indices)
        if key is None:
            self._forget_locals(s.buffer)
            return
        # inside a For loop the walk sees one iteration: a value built from locals (a counter,
        # x = x + 1) would be wrong after the loop, so only values free of locals are followed there
        in_loop = any(not loop.replicated for loop in self.loops.values())
        try:
            v = None if (self._uncertain or self.thread_conds or self.parallel_depth
                         or (in_loop and _reads_local(s.value))) else self.ev(s.value)
        except (DataDependent, TileroofError):
            v = None
        if v is None or axes_of(v) or (isinstance(v, np.ndarray) and v.ndim > GRID_AXES):
            self.ev.locals.pop(key, None)
            self._track_data_local(key, s.value)
            return
        self.ev.data_locals.pop(key, None)
        active = self._per_block(m) > 0
        old = self.ev.locals.get(key)
        if old is not None and not np.all(active):
            gx, gy, gz = self.grid
            shape = (gz, gy, gx)
            new = np.broadcast_to(expand(np.asarray(v), GRID_AXES), shape).reshape(-1)
            prev = np.broadcast_to(expand(np.asarray(old), GRID_AXES), shape).reshape(-1)
            v = np.where(active, new, prev).reshape(shape)
        self.ev.locals[key] = v

    def _track_data_local(self, key, value) -> None:
        """A scalar local whose value the walk cannot follow: when the block writes it as one value
        (no thread condition, outside T.Parallel), remember which grid axes it depends on -- a value
        read from a tensor (the group a grouped GEMM's block finds by scanning an offsets table)
        still depends only on the block index.  The loop variables of a scan are ignored: its
        loop is over when the value is read.  Anything else (a thread-dependent write) is unknown."""
        deps = None
        if not (self.thread_conds or self.parallel_depth):
            deps = self.ev.grid_deps(value, loops=True, own=key)
            old = self.ev.data_locals.get(key, frozenset())
            deps = None if deps is None or old is None else deps | old
        self.ev.data_locals[key] = deps

    def _forget_locals(self, buffer) -> None:
        data = buffer.data
        for key in [k for k in self.ev.locals if k[0].same_as(data)]:
            del self.ev.locals[key]
        for key in [k for k in self.ev.data_locals if k[0].same_as(data)]:
            del self.ev.data_locals[key]

    def _parallel_invariance(self):
        """Inside T.Parallel: a test that an expression reads none of its loop variables (lets
        followed), so the compiler computes it once a thread; None outside."""
        if not self.parallel_vars:
            return None
        axes = {id(self.env[v]) for v in self.parallel_vars if isinstance(self.env.get(v), LoopAxis)}
        if not axes:
            return None

        def invariant(e) -> bool:
            # (a Let inside binds a variable the environment does not know: not judged)
            lets = []
            tirx.stmt_functor.post_order_visit(e, lambda n: lets.append(1) if isinstance(n, tirx.Let) else None)
            return not lets and not any(id(ax) in axes for ax in affine.loop_vars_in(e, self.env).values())
        return invariant

    def _element_record(self, label, arith, m, target):
        """One record for element-level code: its loads, its store (if any) and its arithmetic.

        In T.Parallel the iterations are spread over the threads: one execution per iteration.
        Outside it (SIMT code) every selected thread executes the statement; a shared or global
        access counts once per distinct address, i.e. per value of the thread indices it names."""
        simt = self.parallel_depth == 0
        m_exec = self._thread_weight(m, simt)
        per_block = self._per_block(m_exec)
        n = int(per_block.sum())

        # T.Parallel iterations in all (the extents of its loops)
        par_loops = [self.env[v] for v in self.parallel_vars if isinstance(self.env.get(v), LoopAxis)]
        par_axes = {id(ax) for ax in par_loops}
        par_extent = 1
        for ax in par_loops:
            par_extent *= max(ax.max_extent, 1)

        def unindexed_extent(indices, memo) -> tuple[int, bool]:
            """The product of the extents of the T.Parallel loops the indices do not read, and
            whether they read any."""
            used = set()
            for k, i in enumerate(indices):
                if not isinstance(i, tirx.PrimExpr):
                    continue
                lin = memo.get(k)            # the stride's linearisation, where it made one
                if lin is None or isinstance(lin, DataDependent):
                    loops = affine.loop_vars_in(i, self.env).values()      # lets followed
                else:
                    loops = lin.loops.values()
                used.update(id(ax) for ax in loops if id(ax) in par_axes)
            rest = 1
            for ax in par_loops:
                if id(ax) not in used:
                    rest *= max(ax.max_extent, 1)
            return rest, bool(used)

        def elements(info, indices, indexed):
            if info.scope in (FRAGMENT, LOCAL):
                return n
            if not simt:
                # a memory load whose address no T.Parallel variable changes (a group's size,
                # batch_sizes[bg], read in every element) is one load a thread keeps in a register,
                # the same address for all: its distinct elements are the statement's executions
                # outside the parallel loop
                if par_extent > 1 and not indexed:
                    return int(round(n / par_extent))
                return n
            names = set()
            for i in indices:
                if isinstance(i, tirx.PrimExpr):
                    names.update(self._thread_vars(i))
            return int(self._executions(self._thread_weight(m, True, names)))

        operands = []
        # one load per distinct address: an expression that reads input[bx, i] three times (a helper
        # inlined thrice) loads it once (the compiler's common subexpressions)
        loads = []
        for load in arith.loads:
            if not any(load.buffer.same_as(prev.buffer) and tvm.ir.structural_equal(load.indices, prev.indices)
                       for prev in loads):
                loads.append(load)
        accesses = [(load, "read") for load in loads] + ([(target, "write")] if target is not None else [])
        for access, kind in accesses:
            info = self._register(access.buffer)
            indices = _items(access.indices)
            memo: dict = {}               # the indices' linearizations, shared by stride and footprint
            stride = self._thread_stride(info, indices, memo)
            key, box = self._element_footprint(info, indices, m, memo) if info.scope == GLOBAL else (None, None)
            rest, indexed = (unindexed_extent(indices, memo)
                             if not simt and par_extent > 1 and info.scope not in (FRAGMENT, LOCAL) else (1, True))
            # a global load that some T.Parallel loops do not index (a gather's row index read for
            # every column, a bias W[j] for every row) is issued for each of their iterations, but
            # the block re-reads the same bytes: `reuse_in_block` tells the L2 model so (a load no
            # parallel loop indexes is counted once a thread already, see elements)
            reuse = float(rest) if kind == "read" and info.scope == GLOBAL and indexed else 1.0
            waves = self._warp_wavefronts(access.buffer, info, indices) if simt and info.scope == SHARED else 0.0
            operands.append(Operand(info.name, info.scope, info.dtype, kind, (1,), elements(info, indices, indexed),
                                    block_start=key, access_stride=stride, element=True, reuse_in_block=reuse,
                                    wavefront_factor=waves, block_range=box))
        for name, cnt in arith.unknown.items():
            self._unmodeled(name, m_exec * cnt, "operation in element code not modelled")
        self.ops.append(OpRecord(
            kind="elementwise", label=label, executions=n, per_block=per_block,
            operands=tuple(operands), attrs={**(self._simt_attrs(m, n) if simt else {}), **self._pipeline_attrs(),
                                             **({"parallel_elements": par_extent} if not simt else {}),
                                             **({"invariant_ops": dict(arith.invariant)}
                                                if arith.invariant and not simt else {})},
            ops_per_exec=dict(arith.ops), pipeline_stages=self.stages,
            pipeline=self.pipeline, loops=tuple(self._serial_loops)))

    def _pipeline_attrs(self) -> dict:
        if not (self.pipeline and self.pipeline_trips is not None):
            return {}
        out = {"pipeline_trips": self.pipeline_trips}
        if self._data_branch_depth:
            # under a branch on run-time data: TileLang's pipeline tests the condition before each
            # of the loop's statements on every trip, taken or not (pipeline_all_trips)
            out["data_branch"] = True
            out["pipeline_all_trips"] = self.pipeline_all_trips
            if self._data_branch_share is not None:
                # the share the user gave and the grid axes the condition reads: blocks that differ
                # on those axes decide apart (memory.estimates: a tile they share is fetched when any
                # of them takes it)
                out["taken_share"], out["taken_axes"] = self._data_branch_share
        return out

    def _simt_attrs(self, m, n) -> dict:
        """A SIMT record's executions count threads: `simt_threads` is how many threads run each
        block-level step (so executions / simt_threads is the step count, e.g. loop trips)."""
        steps = self._executions(self._thread_weight(m, False))
        return {"simt_threads": n / steps if steps else 1.0}

    # ---- helpers for tile ops -----------------------------------------------------------------
    def region(self, arg):
        """(BufferInfo, start exprs, extents) of a tl.region / BufferRegion / BufferLoad / Buffer."""
        if isinstance(arg, tirx.Call) and _op_name(arg) == "tl.region":
            args = _items(arg.args)
            load = args[0]
            starts = _items(load.indices)
            info = self._register(load.buffer)
            ext_exprs = args[2:]
            # region extents cover the trailing dims; leading dims have extent 1
            dims = list(info.shape)[len(starts) - len(ext_exprs):]
            extents = [self._extent(e, d) for e, d in zip(ext_exprs, dims)]
            extents = [1] * (len(starts) - len(extents)) + extents
            return info, starts, extents, int(args[1].value)
        if isinstance(arg, tirx.BufferRegion):
            info = self._register(arg.buffer)
            return (info, [r.min for r in arg.region],
                    [self._extent(r.extent, d) for r, d in zip(arg.region, info.shape)], 3)
        if isinstance(arg, tirx.BufferLoad):
            starts = _items(arg.indices)
            return self._register(arg.buffer), starts, [1] * len(starts), 1
        if isinstance(arg, tirx.Buffer):
            info = self._register(arg)
            return info, [0] * len(info.shape), list(info.shape), 3
        raise TileroofError(f"unrecognised region argument {type(arg).__name__}")

    def _extent(self, e, dim) -> int:
        """A tile extent: a constant, or an expression (kv_end - kv_start) equal for every block.
        One that varies, or reads a run-time value, is bounded by its largest value (or the
        buffer's dimension) and named in `bounded`."""
        try:
            v = self.ev(e)
        except DataDependent as exc:
            self.bounded.add(exc.name)
            return int(dim)
        if isinstance(v, np.ndarray):
            if v.size == 0:
                return 0
            first = v.reshape(-1)[0]
            if not np.all(v == first):
                self.bounded.add(f"tile extent {e}")
            return max(int(np.max(v)), 0)
        return int(v)

    def tile_elements(self, info: BufferInfo, starts, extents, m):
        """Total elements of the tile actually inside `info` over every execution, and the
        per-block start of the tile (loop variables at their first value, for the L2 model)."""
        full = 1
        for e in extents:
            full *= e
        executions = self._executions(m)
        if info.scope != GLOBAL:
            return int(round(executions * full)), None, None
        try:
            lins = [affine.linearize(self.ev, st) if isinstance(st, tirx.PrimExpr) else None for st in starts]
        except DataDependent as exc:
            self.bounded.add(exc.name)
            lins = self._data_keyed_starts(info, starts, extents)
            if lins is None:
                self.data_indexed.add(info.storage)
                self.footprint_parts[info.storage].append((info, None))
                return int(round(executions * full)), None, None
        ranges, block_start = [], []
        inside = True
        for st, lin, ext, dim in zip(starts, lins, extents, info.shape):
            if lin is None:
                if isinstance(st, tirx.PrimExpr):
                    inside = False
                    ranges = None
                    break
                lo = int(st)
                lin_lo, lin_hi = lo, lo + ext
                block_start.append(lo)
            else:
                lin_lo, lin_hi = affine.index_range(lin, ext)
                block_start.append(affine.sequence_key(lin))
            if ranges is not None:
                ranges.append((lin_lo, lin_hi))
            if _any_below(lin_lo, 0) or _any_below(dim, lin_hi):
                inside = False
        if ranges is not None:
            self.footprint_parts[info.storage].append((info, ranges))
        else:
            self.footprint_parts[info.storage].append((info, None))
        if inside:
            total = executions * full
        else:
            total = self._clipped_elements(info, starts, extents, m, executions * full)
        if ranges is None:
            return int(round(total)), None, None
        return int(round(total)), tuple(block_start), tuple(ranges)

    def _data_keyed_starts(self, info, starts, extents):
        """Tile starts some of which read a tensor (a grouped GEMM's group, its rows' offset), each
        such start one value per block: for the L2 model, a start that depends on the block axes
        D (and on tensor data) is taken to spread those blocks evenly and in launch order over the
        dimension's tile positions -- block i of the n in D at tile position floor(i * P / n), P
        the tiles the dimension holds (blocks of one group share its tile; n <= P: every block its
        own).  Which position each block takes is known only at run time; the storage is named in
        `data_keyed`.

        A start that also depends on one serial loop (a paged KV cache's page, read from a block
        table at the loop's step) is taken to walk its blocks' own run of tiles, one a trip: the
        group's region holds the loop's trips and the tile moves by its extent each trip -- blocks
        that agree on the axes the table reads (two head blocks of one sequence) share every tile,
        other blocks share none.  None when a start depends on a thread index or on several loops."""
        lins = []
        for st, ext, dim in zip(starts, extents, info.shape):
            if not isinstance(st, tirx.PrimExpr):
                lins.append(None)
                continue
            try:
                lins.append(affine.linearize(self.ev, st))
                continue
            except DataDependent:
                pass
            deps = self.ev.grid_deps(st)
            loops = {}
            if deps is None:
                deps = self.ev.grid_deps(st, loops=True)
                loops = {v: ax for v, ax in affine.loop_vars_in(st, self.env).items() if ax.max_extent > 1}
                if deps is None or len(loops) != 1 or any(ax.replicated for ax in loops.values()):
                    return None
            if not isinstance(dim, (int, np.integer)):
                return None
            lin, n = 0, 1
            for axis in sorted(deps, reverse=True):            # x (axis 2) fastest: launch order
                shape = [1] * GRID_AXES          # (z, y, x): one rank for every axis it depends on
                shape[axis] = self.grid[2 - axis]
                lin = lin + np.arange(self.grid[2 - axis], dtype=np.int64).reshape(shape) * n
                n *= self.grid[2 - axis]
            ext = max(int(ext), 1)
            trips = max((ax.max_extent for ax in loops.values()), default=1)
            run = ext * trips                      # the tiles one group walks
            positions = max(-(-int(dim) // run), 1)
            start = np.minimum(np.floor_divide(np.multiply(lin, positions), n) * run, max(int(dim) - run, 0))
            coef = {v: ext for v in loops}
            lins.append(affine.Linear(start, coef, loops))
        self.data_keyed.add(info.storage)
        return lins

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
        return self._executions(_weight(m, np.asarray(inside, dtype=np.float64), self.loops))

    def _tile_footprint(self, info, vals, extents):
        ranges = [(v, np.add(v, e)) for v, e in zip(vals, extents)]
        self.footprint_parts[info.storage].append((info, ranges))

    def _element_footprint(self, info, indices, m, memo=None):
        """Record the index ranges an element access of a global buffer sweeps (for the
        footprint) and return its per-block start, as tile_elements does for a tile op: with every
        loop, T.Parallel and thread variable at its first value, which part of the buffer a block
        works on (the L2 model's tile key; element loads of one tile by several blocks -- linear
        attention's Q, read by the blocks of both value slices -- share it in L2 like a copied
        tile).  None when an index is not linear in its loops or reads tensor data."""
        ranges, key = [], []
        try:
            for k, i in enumerate(indices):
                if isinstance(i, tirx.PrimExpr):
                    lin = self._linearized(indices, k, memo)
                    r = affine.index_range(lin, 1)
                    if r is None:
                        ranges = None
                        break
                    key.append(affine.sequence_key(lin))
                else:
                    r = (int(i), int(i) + 1)
                    key.append(int(i))
                ranges.append(r)
        except DataDependent as exc:
            self.bounded.add(exc.name)
            self.data_indexed.add(info.storage)
            ranges = None
        self.footprint_parts[info.storage].append((info, ranges))
        return (tuple(key), tuple(ranges)) if ranges is not None else (None, None)

    def _footprints(self, all_parts=None) -> dict:
        """Unique bytes touched per storage: per dimension, the union of the index ranges of every
        block (all iterations included); the footprint is the product over dimensions (an upper
        bound when coverage is not a product set, e.g. triangular), capped at the buffer's size.
        The unions of every buffer and dimension are swept together (affine.union_lengths)."""
        storages = []                  # (storage, bytes counted whole, cap, buffers with ranges)
        groups = []                    # (bounds, dim) of each dimension of those buffers, in order
        for storage, parts in (self.footprint_parts if all_parts is None else all_parts).items():
            by_buffer: dict = {}
            for info, ranges in parts:
                entry = by_buffer.setdefault(info.name, [info, [], False])
                if ranges is None:
                    entry[2] = True
                else:
                    entry[1].append(ranges)
            total = 0
            cap = 0
            ranged = []
            for name, (info, range_list, unknown) in by_buffer.items():
                cap = max(cap, info.nbytes)
                if unknown or not range_list:
                    total += info.nbytes
                    continue
                ranged.append(info)
                groups.extend(([r[d] for r in range_list], dim) for d, dim in enumerate(info.shape))
            storages.append((storage, total, cap, ranged))
        lengths = iter(affine.union_lengths(groups) if groups else ())
        out = {}
        for storage, total, cap, ranged in storages:
            for info in ranged:
                elems = 1
                for _ in info.shape:
                    elems *= next(lengths)
                total += int(elems * dtype_bytes(info.dtype))
            out[storage] = min(total, cap)
        return out

    def record(self, kind, label, m, operands=(), attrs=None, ops_per_exec=None):
        if self._virtual_after is not None:          # after a persistent loop: once per real block
            m = m * self._virtual_after
        per_block = self._per_block(m)
        self.ops.append(OpRecord(
            kind=kind, label=label, executions=int(per_block.sum()), per_block=per_block,
            operands=tuple(operands), attrs={**(attrs or {}), **self._record_attrs, **self._pipeline_attrs()},
            ops_per_exec=ops_per_exec or {},
            pipeline_stages=self.stages, pipeline=self.pipeline, loops=tuple(self._serial_loops)))

    def mark_pipelined(self, info: BufferInfo) -> None:
        """A shared buffer filled inside a T.Pipelined loop is kept in `stages` copies."""
        if self.stages > 1 and info.scope == SHARED and info.stages < self.stages:
            self.buffers[info.name] = BufferInfo(info.name, info.scope, info.dtype, info.shape, info.storage,
                                                 info.is_param, self.stages)
