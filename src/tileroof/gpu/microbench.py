"""Calibration microbenchmarks.  Each takes a Ctx and returns
{"value", "unit", "method", ...raw numbers}; the median of many event-timed runs is the value.
torch / triton / cupy are imported inside the functions."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from .provenance import query_smi
from .stats import median, spread_pct, summarize


@dataclass
class Ctx:
    sm_count: int
    l2_bytes: int
    runs: int = 30
    notes: list = field(default_factory=list)
    # matmul benchmarks: seconds of back-to-back matmuls before timing (the SM clock settles at the
    # power limit only after ~0.1-1 s of sustained load), then mm_runs timed runs (in mm_chunks chunks)
    mm_warm_s: float = 1.5
    mm_runs: int = 200
    mm_chunks: int = 5


def events(fn, runs: int, warmup: int = 3, before=None) -> dict:
    """Event-timed runs of fn() (before() is enqueued ahead of each, outside the events)."""
    import torch
    for _ in range(warmup):
        if before:
            before()
        fn()
    torch.cuda.synchronize()
    s = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    e = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        if before:
            before()
        s[i].record()
        fn()
        e[i].record()
    torch.cuda.synchronize()
    return summarize([a.elapsed_time(b) * 1e-3 for a, b in zip(s, e)], "cuda events")


def clocks_under_load(fn, seconds: float = 1.5, samples: int = 3) -> list:
    """Enqueue ~`seconds` of fn() and read nvidia-smi's SM clock while the GPU runs it."""
    import torch
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t, 1e-6)
    for _ in range(int(min(5000, max(1, seconds / one)))):
        fn()
    got = []
    for _ in range(samples):
        time.sleep(0.05)
        got.append(query_smi().get("sm_clock_mhz"))
    torch.cuda.synchronize()
    return [g for g in got if isinstance(g, (int, float))]


# ------------------------------------------------------------------ memory
def dram_copy(ctx: Ctx, gib: float = 2.0) -> dict:
    import torch
    n = int(gib * (1 << 30)) // 4
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    st = events(lambda: dst.copy_(src), ctx.runs)
    moved = 2 * src.numel() * 4
    return {"value": moved / st["median_s"] / 1e9, "unit": "GB/s", "stats": st, "bytes_per_run": moved,
            "method": f"torch copy_ of {gib:g} GiB fp32 (random), (bytes read + written) / median time, "
                      f"{st['n']} runs, cuda events"}


def dram_read(ctx: Ctx, gib: float = 2.0) -> dict:
    import torch
    n = int(gib * (1 << 30)) // 4
    src = torch.rand(n, device="cuda")
    # torch.sum has no out= for a full reduction; the 4-byte result comes from the caching allocator
    st = events(lambda: torch.sum(src, dtype=torch.float32), ctx.runs)
    return {"value": n * 4 / st["median_s"] / 1e9, "unit": "GB/s", "stats": st,
            "method": f"torch.sum (full reduction) of {gib:g} GiB fp32 (random), bytes read / median time, "
                      f"{st['n']} runs, cuda events"}


def _read_chunks(ws_bytes: int, ctx: Ctx, iters: int | None, block: int = 4096, per_sm: int = 8):
    import torch
    from .tkernels import read_chunks
    n_chunks = max(1, ws_bytes // (block * 4))
    x = torch.rand(n_chunks * block, device="cuda")
    grid = ctx.sm_count * per_sm
    if iters is None:              # read the buffer once
        iters = max(1, n_chunks // grid)
    out = torch.empty(grid, device="cuda")
    fn = lambda: read_chunks[(grid,)](x, out, n_chunks, ITERS=iters, BLOCK=block, num_warps=8)  # noqa: E731
    st = events(fn, ctx.runs)
    nbytes = grid * iters * block * 4
    return st, nbytes, n_chunks * block * 4, grid, iters


def l2_bandwidth(ctx: Ctx, sizes_mib=(4, 8, 16, 24, 32)) -> dict:
    per = {}
    for mib in sizes_mib:
        if mib * (1 << 20) > ctx.l2_bytes * 0.6:
            continue
        st, nbytes, ws, grid, iters = _read_chunks(mib << 20, ctx, iters=512)
        per[str(mib)] = {"gbps": nbytes / st["median_s"] / 1e9, "stats": st, "bytes": nbytes,
                         "grid": grid, "iters": iters}
    best = max(per, key=lambda k: per[k]["gbps"])
    return {"value": per[best]["gbps"], "unit": "GB/s", "by_working_set_mib": per, "best_working_set_mib": int(best),
            "method": "Triton kernel, 8 programs/SM each reading 16 KiB chunks (ld.global.cg, L1 bypassed) of a "
                      f"working set of {','.join(per)} MiB 512 times; bytes read / median time; best working set "
                      f"({best} MiB) reported, {ctx.runs} runs each"}


def dram_read_triton(ctx: Ctx, gib: float = 2.0) -> dict:
    st, nbytes, ws, grid, iters = _read_chunks(int(gib * (1 << 30)), ctx, iters=None)
    return {"value": nbytes / st["median_s"] / 1e9, "unit": "GB/s", "stats": st,
            "method": f"Triton read_chunks over {gib:g} GiB read once (.cg loads), bytes / median time"}


# ------------------------------------------------------------------ CUDA C kernels (cupy)
SMEM_SRC = r"""
extern "C" __global__ void smem_read(float* out, int iters) {
    __shared__ float4 buf[4 * 256];                       // 16 KiB; blockDim.x == 256 (8 blocks/SM fit)
    const int tid = threadIdx.x;
    for (int i = tid; i < 4 * 256; i += blockDim.x) buf[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    unsigned base;
    asm("{ .reg .u64 p; cvta.to.shared.u64 p, %1; cvt.u32.u64 %0, p; }" : "=r"(base) : "l"(buf + tid));
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int j = 0; j < 8; ++j) {                     // lanes read consecutive 16 B: conflict-free
            float x, y, z, w;
            asm volatile("ld.volatile.shared.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "r"(base + (j & 3) * 256 * 16));
            a0 += x; a1 += y; a2 += z; a3 += w;
        }
    }
    out[blockIdx.x * blockDim.x + tid] = a0 + a1 + a2 + a3;
}

extern "C" __global__ void fma_chain(float* out, int iters, float a, float b) {
    float x0 = threadIdx.x * 1e-3f, x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f,
          x4 = x0 + 4.f, x5 = x0 + 5.f, x6 = x0 + 6.f, x7 = x0 + 7.f;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 16; ++j) {                    // 8 independent chains, 128 FMA per iteration
            x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
            x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

__device__ __forceinline__ float ex2(float x) {
    float y; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
extern "C" __global__ void sfu_ex2(float* out, int iters) {
    float x0 = -threadIdx.x * 1e-4f, x1 = x0 - 0.1f, x2 = x0 - 0.2f, x3 = x0 - 0.3f,
          x4 = x0 - 0.4f, x5 = x0 - 0.5f, x6 = x0 - 0.6f, x7 = x0 - 0.7f;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 8; ++j) {                     // 8 independent chains, 64 ex2 per iteration
            x0 = ex2(x0) - 1.f; x1 = ex2(x1) - 1.f; x2 = ex2(x2) - 1.f; x3 = ex2(x3) - 1.f;
            x4 = ex2(x4) - 1.f; x5 = ex2(x5) - 1.f; x6 = ex2(x6) - 1.f; x7 = ex2(x7) - 1.f;
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

extern "C" __global__ void noop() {}

// global reductions (RED: the old value is not returned, as in a histogram or a tile atomic_add)
__device__ __forceinline__ void red_add(int* p, int v) {
    asm volatile("red.global.add.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

// every thread: `iters` atomics onto table[0 .. 2^(32-shift)), entry = top bits of a per-thread LCG
// (pseudo-random, like a histogram of random values; a warp's 32 lanes touch ~30 of the 128-B lines)
extern "C" __global__ void atomic_table(int* table, int iters, unsigned shift) {
    unsigned x = (blockIdx.x * blockDim.x + threadIdx.x) * 2654435761u + 0x9E3779B9u;
    #pragma unroll 4
    for (int i = 0; i < iters; ++i) {
        x = x * 1664525u + 1013904223u;
        red_add(table + (x >> shift), 1);
    }
}

// thread t owns entries t, t + T, t + 2T, ... (T = all threads; per_thread of them), so no two
// threads share an address and a warp's 32 lanes hit one 128-B line; `sweeps` passes over them
extern "C" __global__ void atomic_distinct(int* table, int per_thread, int sweeps) {
    const long long nthr = (long long)gridDim.x * blockDim.x;
    int* p = table + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int s = 0; s < sweeps; ++s) {
        #pragma unroll 4
        for (int k = 0; k < per_thread; ++k) red_add(p + k * nthr, 1);
    }
}

// keeps the GPU busy for `ns` nanoseconds (globaltimer), so launches queue up behind it
extern "C" __global__ void spin_ns(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""

_module = None


def cupy_fn(name: str):
    global _module
    import cupy
    if _module is None:
        _module = cupy.RawModule(code=SMEM_SRC, options=("-std=c++17",))
    return _module.get_function(name)


def _cupy_launch(name, grid, block, args):
    """A callable launching a cupy kernel on torch's current stream (so torch events time it)."""
    import cupy
    import torch
    f = cupy_fn(name)
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

    def go():
        with stream:
            f((grid,), (block,), args)
    return go


def _per_clk(rate_per_s: float, ctx: Ctx, clocks: list) -> tuple:
    mhz = median(clocks) if clocks else None
    return (rate_per_s / (ctx.sm_count * mhz * 1e6) if mhz else None), mhz


def shared_mem_bandwidth(ctx: Ctx, iters: int = 2048) -> dict:
    import cupy
    import numpy as np
    import torch
    grid, block = ctx.sm_count * 8, 256
    out = torch.empty(grid * block, device="cuda")
    fn = _cupy_launch("smem_read", grid, block, (cupy.asarray(out), np.int32(iters)))
    st = events(fn, ctx.runs)
    nbytes = grid * block * iters * 8 * 16
    bw = nbytes / st["median_s"]
    per_clk, mhz = _per_clk(bw, ctx, clocks_under_load(fn))
    return {"value": bw / 1e9, "unit": "GB/s", "stats": st, "bytes_per_clk_per_sm": per_clk, "sm_clock_mhz": mhz,
            "method": f"cupy kernel: {grid} blocks x 256 threads (one wave), each thread {iters} x 8 "
                      "ld.shared.v4.f32 (conflict-free, asm volatile) from a 16 KiB buffer, bytes / median time"}


def fp32_throughput(ctx: Ctx, iters: int = 4096) -> dict:
    import cupy
    import numpy as np
    import torch
    grid, block = ctx.sm_count * 8, 256
    out = torch.empty(grid * block, device="cuda")
    fn = _cupy_launch("fma_chain", grid, block, (cupy.asarray(out), np.int32(iters), np.float32(0.999),
                                                 np.float32(0.001)))
    st = events(fn, ctx.runs)
    flops = grid * block * iters * 128 * 2
    per_clk, mhz = _per_clk(flops / st["median_s"] / 2, ctx, clocks_under_load(fn))
    return {"value": flops / st["median_s"] / 1e12, "unit": "TFLOP/s", "stats": st, "fma_per_clk_per_sm": per_clk,
            "sm_clock_mhz": mhz,
            "method": f"cupy kernel: {grid} x 256 threads, 8 independent fmaf chains x 16 x {iters} iterations; "
                      "FMA = 2 FLOP; FLOP / median time"}


def sfu_throughput(ctx: Ctx, iters: int = 1024) -> dict:
    import cupy
    import numpy as np
    import torch
    grid, block = ctx.sm_count * 8, 256
    out = torch.empty(grid * block, device="cuda")
    fn = _cupy_launch("sfu_ex2", grid, block, (cupy.asarray(out), np.int32(iters)))
    st = events(fn, ctx.runs)
    results = grid * block * iters * 64
    rate = results / st["median_s"]
    clocks = clocks_under_load(fn)
    per_clk, mhz = _per_clk(rate, ctx, clocks)
    if per_clk is None:
        ctx.notes.append("sfu: no SM clock reading under load; per-clock value missing")
    return {"value": per_clk, "unit": "results/clk/SM", "results_per_s": rate, "sm_clock_mhz": mhz,
            "clock_samples_mhz": clocks, "stats": st,
            "method": f"cupy kernel: {grid} x 256 threads, 8 independent ex2.approx.ftz.f32 chains x 8 x {iters}; "
                      "results / median time / (SMs x SM clock read by nvidia-smi under the same load)"}


def _cpu_back_to_back_us(f, launches: int = 200, batches: int = 5) -> float:
    """Median over `batches` of (events around `launches` launches enqueued back to back) / launches.
    The GPU finishes each empty kernel before the CPU issues the next, so this is the CPU's launch
    cost (Python + driver), and it moves with the host's CPU clock."""
    import torch
    f()
    torch.cuda.synchronize()
    per = []
    for _ in range(batches):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(launches):
            f()
        e.record()
        torch.cuda.synchronize()
        per.append(s.elapsed_time(e) * 1e3 / launches)
    return median(per)


def launch_overhead(ctx: Ctx, graph_launches: int = 1000, graph_replays: int = 20,
                    queued_launches: int = 256, queued_batches: int = 5) -> dict:
    """Per-launch cost of an empty kernel.  Value: CUDA-graph replay of `graph_launches` empty Triton
    launches, replay time / launches, median of `graph_replays` replays (GPU-side, no CPU in the loop;
    stable between repeats).  Also: launches queued behind a spin kernel (the GPU front end working
    through a full queue: GPU-side back-to-back), CPU-bound back-to-back launches, and one launch
    behind a 256 MiB flush (what measure's per-run event timing floors at)."""
    import cupy
    import numpy as np
    import torch
    from .tkernels import noop
    from .timing import flush_buffer
    x = torch.empty(1, device="cuda")
    tri = lambda: noop[(1,)](x)  # noqa: E731
    tri()
    torch.cuda.synchronize()
    res: dict = {}
    errors = []

    # 1. CUDA-graph replay (the value)
    graph = None
    try:
        g = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            tri()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(graph_launches):
                tri()
        st = events(g.replay, graph_replays, warmup=3)
        graph = {(k[:-2] + "_us" if k.endswith("_s") else k):
                 (v * 1e6 / graph_launches if isinstance(v, float) and k.endswith("_s") else v)
                 for k, v in st.items()}
        res["graph_per_launch_us"] = graph["median_us"]
        del g
    except Exception as ex:  # noqa: BLE001
        errors.append(f"graph: {type(ex).__name__}: {ex}")

    # 2. GPU-side back to back: enqueue the launches while a spin kernel holds the GPU, so the
    #    events see the front end process a full queue (no CPU gaps)
    try:
        f_spin = cupy_fn("spin_ns")
        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        cpu_one = _cpu_back_to_back_us(tri, launches=50, batches=1) * 1e-6
        hold_ns = int(min(0.2, max(0.005, 3 * queued_launches * cpu_one)) * 1e9)
        per = []
        for _ in range(queued_batches):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with stream:
                f_spin((1,), (32,), (np.uint64(hold_ns),))
            s.record()
            for _ in range(queued_launches):
                tri()
            e.record()
            torch.cuda.synchronize()
            per.append(s.elapsed_time(e) * 1e3 / queued_launches)
        res["queued_back_to_back_us"] = median(per)
        res["queued_back_to_back_samples_us"] = per
        res["queued_hold_ms"] = hold_ns / 1e6
    except Exception as ex:  # noqa: BLE001
        errors.append(f"queued: {type(ex).__name__}: {ex}")

    # 3. CPU-bound back to back (Triton's Python launcher and cupy's)
    res["triton_back_to_back_us"] = _cpu_back_to_back_us(tri)
    try:
        res["cupy_back_to_back_us"] = _cpu_back_to_back_us(_cupy_launch("noop", 1, 32, ()))
    except Exception as ex:  # noqa: BLE001
        errors.append(f"cupy: {type(ex).__name__}: {ex}")

    # 4. one launch enqueued behind a flush, as in measure's event timing (varies ~15 % between repeats)
    after_busy = events(tri, 200, before=flush_buffer().zero_)
    res["behind_flush_us"] = after_busy["median_s"] * 1e6
    res["behind_flush_stats"] = after_busy
    if errors:
        res["launch_errors"] = errors
    if graph is None:
        raise RuntimeError("CUDA-graph launch timing failed: " + "; ".join(errors))
    return {"value": graph["median_us"], "unit": "us", "stats_us": graph, **res,
            "method": f"empty Triton kernel (1 block): CUDA graph of {graph_launches} launches, replay time / "
                      f"{graph_launches}, median of {graph_replays} replays (cuda events). Extra: "
                      f"queued_back_to_back_us = {queued_launches} launches queued behind a spin kernel, events "
                      f"around them / {queued_launches} (GPU-side back to back, median of {queued_batches}); "
                      "triton/cupy_back_to_back_us = CPU-bound launches back to back / 200 (median of 5); "
                      "behind_flush_us = events around one launch enqueued behind a 256 MiB zero_ "
                      "(measure's per-run timing floor), median of 200"}


# ------------------------------------------------------------------ atomics
def _atomic_cfg(ctx: Ctx) -> tuple:
    return ctx.sm_count * 8, 256          # 2048 threads per SM: full occupancy


def _scale_to(fn_for, first: int, target_s: float, lo: int, hi: int) -> int:
    """Run fn_for(first) a few times, then pick a power-of-two count so one launch takes ~target_s."""
    import torch
    f = fn_for(first)
    f()
    torch.cuda.synchronize()
    st = events(f, 3, warmup=1)
    k = first * target_s / max(st["median_s"], 1e-7)
    k = 1 << max(0, round(math.log2(max(k, 1))))
    return int(min(hi, max(lo, k)))


def l2_atomic_throughput(ctx: Ctx, entries: int = 4096, target_s: float = 2e-3) -> dict:
    import cupy
    import numpy as np
    import torch
    assert entries & (entries - 1) == 0, "entries must be a power of two"
    shift = 32 - (entries.bit_length() - 1)
    grid, block = _atomic_cfg(ctx)
    table = torch.zeros(entries, dtype=torch.int32, device="cuda")
    targs = cupy.asarray(table)
    fn_for = lambda it: _cupy_launch("atomic_table", grid, block, (targs, np.int32(it), np.uint32(shift)))  # noqa: E731
    iters = _scale_to(fn_for, 64, target_s, 16, 1 << 14)
    fn = fn_for(iters)
    ops = grid * block * iters
    table.zero_()
    fn()
    got = int(table.sum(dtype=torch.int64).item())
    if got != ops:
        raise RuntimeError(f"atomic_table check failed: table sums to {got}, expected {ops}")
    st = events(fn, ctx.runs)
    rate = ops / st["median_s"]
    return {"value": rate / 1e9, "unit": "Gop/s", "stats": st, "results_per_s": rate, "atomic_gbps": rate * 4 / 1e9,
            "ops_per_run": ops, "iters": iters,
            "method": f"cupy kernel: {grid} blocks x {block} threads, each thread {iters} red.global.add.s32 "
                      f"(result unused, as in a histogram) onto a {entries}-entry int32 table ({entries * 4 // 1024} "
                      "KiB, L2-resident), entry = top bits of a per-thread LCG (pseudo-random); atomics / median "
                      f"time, {st['n']} runs, cuda events; table sum checked once"}


def atomic_throughput_distinct(ctx: Ctx, span_mib: int = 64, target_s: float = 2e-3) -> dict:
    import cupy
    import numpy as np
    import torch
    grid, block = _atomic_cfg(ctx)
    nthr = grid * block
    per_thread = max(1, (span_mib << 20) // 4 // nthr)
    table = torch.zeros(nthr * per_thread, dtype=torch.int32, device="cuda")
    targs = cupy.asarray(table)
    fn_for = lambda sw: _cupy_launch("atomic_distinct", grid, block, (targs, np.int32(per_thread), np.int32(sw)))  # noqa: E731
    sweeps = _scale_to(fn_for, 1, target_s, 1, 64)
    fn = fn_for(sweeps)
    ops = nthr * per_thread * sweeps
    table.zero_()
    fn()
    lo, hi = int(table.min().item()), int(table.max().item())
    if lo != sweeps or hi != sweeps:
        raise RuntimeError(f"atomic_distinct check failed: entries in [{lo}, {hi}], expected {sweeps}")
    st = events(fn, ctx.runs)
    rate = ops / st["median_s"]
    span = table.numel() * 4
    return {"value": rate / 1e9, "unit": "Gop/s", "stats": st, "results_per_s": rate, "atomic_gbps": rate * 4 / 1e9,
            "ops_per_run": ops, "sweeps": sweeps, "table_bytes": span,
            "method": f"cupy kernel: {grid} blocks x {block} threads, thread t does red.global.add.s32 on its own "
                      f"entries t + k*{nthr} (k < {per_thread}; a warp hits one 128-B line per step, no address "
                      f"shared between threads) of a {span / 2**20:.1f} MiB int32 table ({span / ctx.l2_bytes:.2f} x the "
                      f"L2, so partly DRAM), {sweeps} sweep(s) per launch; atomics / median time, {st['n']} runs, cuda "
                      "events; every entry checked once"}


# ------------------------------------------------------------------ tensor cores
def _mm_case(kind: str, n: int):
    import torch
    if kind in ("fp16", "bf16"):
        dt = torch.float16 if kind == "fp16" else torch.bfloat16
        a, b = torch.randn(n, n, device="cuda", dtype=dt), torch.randn(n, n, device="cuda", dtype=dt)
        c = torch.empty(n, n, device="cuda", dtype=dt)
        return lambda: torch.matmul(a, b, out=c), "torch.matmul"
    if kind == "tf32":
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        c = torch.empty(n, n, device="cuda")
        return lambda: torch.matmul(a, b, out=c), "torch.matmul fp32 inputs, allow_tf32=True"
    if kind == "fp8":
        f8 = torch.float8_e4m3fn
        a = torch.randn(n, n, device="cuda").to(f8)
        b = torch.randn(n, n, device="cuda").to(f8).t()          # column-major, as _scaled_mm wants
        one = torch.tensor(1.0, device="cuda", dtype=torch.float32)
        return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                "torch._scaled_mm e4m3 x e4m3 (B column-major), fp32 scales, bf16 out")
    if kind == "int8":
        a = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8)
        b = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8).t()
        try:
            torch._int_mm(a, b)
        except RuntimeError:
            b = b.contiguous()
        return lambda: torch._int_mm(a, b), "torch._int_mm int8 x int8 -> int32"
    raise ValueError(kind)


def sustained(fn, warm_s: float, runs: int, chunks: int = 5) -> dict:
    """Steady-state timing of a long-running fn(): enqueue ~warm_s seconds of fn() back to back
    (so the SM clock has settled where the power limit holds it), then, with no gap, `runs` runs
    with an event between every two.  mean_s = the timed window / runs: it averages the clock's
    oscillation around the power limit, where the per-run median flips between the oscillation's
    two levels (seen in the first H200 calibration: p10 and p90 ~8 % apart).  The window is also
    cut into `chunks` chunks whose mean times show how steady it was."""
    import torch
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(3):
        fn()
    e.record()
    torch.cuda.synchronize()
    one = max(s.elapsed_time(e) * 1e-3 / 3, 1e-6)
    n_warm = int(min(20000, max(10, math.ceil(warm_s / one))))
    n = max(runs, chunks)
    chunk_runs = n // chunks
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 2)]
    ev[0].record()
    for _ in range(n_warm):
        fn()
    ev[1].record()
    for i in range(n):
        fn()
        ev[i + 2].record()
    torch.cuda.synchronize()
    times = [ev[i + 1].elapsed_time(ev[i + 2]) * 1e-3 for i in range(n)]   # run i: ev[i+1] -> ev[i+2]
    chunk_s = [sum(times[c * chunk_runs:(c + 1) * chunk_runs]) / chunk_runs for c in range(chunks)]
    window = ev[1].elapsed_time(ev[n + 1]) * 1e-3
    return {"mean_s": window / n, "median_chunk_s": median(chunk_s), "chunk_mean_s": chunk_s,
            "per_run": summarize(times, "cuda events"), "warm_runs": n_warm,
            "warm_gpu_s": ev[0].elapsed_time(ev[1]) * 1e-3, "probe_s": one, "timed_gpu_s": window, "n": n}


def tensor_throughput(ctx: Ctx, kind: str, n: int = 8192) -> dict:
    import torch
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
    try:
        fn, what = _mm_case(kind, n)
        st = sustained(fn, ctx.mm_warm_s, ctx.mm_runs, ctx.mm_chunks)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    flops = 2 * n ** 3
    rate = flops / st["mean_s"] / 1e12
    unit = "TOP/s" if kind == "int8" else "TFLOP/s"
    chunk_rates = [flops / c / 1e12 for c in st["chunk_mean_s"]]
    return {"value": rate, "unit": unit, "stats": st, "chunk_rates": chunk_rates,
            "chunk_spread_pct": spread_pct(chunk_rates),
            "per_run_median_rate": flops / st["per_run"]["median_s"] / 1e12,
            "method": f"{what}, {n}^3 random inputs; {st['warm_runs']} back-to-back runs "
                      f"(~{ctx.mm_warm_s:g} s, to the steady power-limited SM clock), then with no gap "
                      f"{st['n']} timed runs (cuda events); 2*M*N*K / (timed window / {st['n']}), i.e. the "
                      "sustained rate; chunk_spread_pct = spread of the rates of its "
                      f"{ctx.mm_chunks} chunks"}


def sm_clock_under_matmul(ctx: Ctx, n: int = 8192) -> dict:
    fn, _ = _mm_case("bf16", n)
    clocks = clocks_under_load(fn, seconds=2.0, samples=4)
    if not clocks:
        raise RuntimeError("nvidia-smi gave no SM clock")
    return {"value": median(clocks), "unit": "MHz", "samples": clocks,
            "method": f"nvidia-smi clocks.sm read {len(clocks)} times while ~2 s of bf16 {n}^3 matmuls ran"}


def warm_gpu(seconds: float = 1.0, n: int = 4096) -> None:
    """Run bf16 matmuls for about `seconds` so clocks have left idle before anything is timed."""
    import torch
    fn, _ = _mm_case("bf16", n)
    t = time.time()
    while time.time() - t < seconds:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()


# ------------------------------------------------------------------ TMA tile pipeline (TileLang)
# (rows, cols) fp16 tiles: 8, 16, 32 KiB, each one TMA box with 128-byte rows (a bk=64 fp16 GEMM
# operand tile); stages 1..4; working set L2-resident (4 MiB) or streamed from DRAM (each block
# its own tiles, read once)
TMA_TILES = ((64, 64), (128, 64), (256, 64))
TMA_STAGES = (1, 2, 3, 4)
_COMPILED: dict = {}          # (kernel function, configs) -> (kernels, compile seconds): once per process


def _compiled(jit_fn, cfgs: list) -> tuple:
    """TileLang kernels for every config (par_compile; None where one does not compile), compiled
    once per process however many repeats ask for them."""
    key = (id(jit_fn), tuple(tuple(sorted(c["params"].items())) for c in cfgs))
    if key not in _COMPILED:
        t = time.time()
        ks = jit_fn.par_compile([c["params"] for c in cfgs], num_workers=16, ignore_error=True)
        _COMPILED[key] = (ks, time.time() - t)
    return _COMPILED[key]


def _timed_configs(cfgs: list, kernels: list, runs: int, make_args, after=None) -> list:
    """Each config with the event-timing stats (`runs` runs) of its compiled kernel (called with
    make_args(params)), or with an error where it did not compile; after(row, args), when given,
    reads what the runs left in the arguments before they are freed."""
    rows = []
    for c, k in zip(cfgs, kernels):
        if k is None:
            rows.append({**c, "error": "compile failed"})
            continue
        args = make_args(c["params"])
        row = {**c, "stats": events(lambda k=k, args=args: k(*args), runs)}
        if after:
            after(row, args)
        rows.append(row)
        del args
    return rows


def _tma_configs(ctx: Ctx, iters: int) -> list:
    out = []
    for rows, cols in TMA_TILES:
        tile = rows * cols * 2
        for stages in TMA_STAGES:
            for where in ("l2", "dram"):
                if where == "l2":
                    n_tiles, stride = (4 << 20) // tile, 7
                else:
                    n_tiles, stride = ctx.sm_count * iters, iters
                n_tiles -= n_tiles % 4
                out.append({"where": where, "params": dict(n_tiles=n_tiles, rows=rows, cols=cols, grid=ctx.sm_count,
                                                           iters=iters, num_stages=stages, stride=stride)})
    return out


def tma_pipeline(ctx: Ctx, iters: int = 1000) -> dict:
    """Time per pipelined iteration of TileLang's tile_stream kernel (tileroof.gpu.tl_kernels): the
    memory pipeline of a GEMM main loop with nothing to compute.  value = the latency intercept
    of the 1-stage L2-resident configs (one load in flight per SM: time = latency + bytes / rate)."""
    import numpy as np
    import torch
    from .tl_kernels import tile_stream
    cfgs = _tma_configs(ctx, iters)
    kernels, compile_s = _compiled(tile_stream, cfgs)
    rows_out = _timed_configs(cfgs, kernels, max(10, ctx.runs // 3), lambda p: (
        torch.randn((p["n_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda"),
        torch.empty((p["grid"], p["cols"]), dtype=torch.float32, device="cuda")))
    for r in rows_out:
        if "stats" in r:
            p = r["params"]
            tile = p["rows"] * p["cols"] * 2
            per_iter = r["stats"]["median_s"] / p["iters"]
            r.update({"tile_bytes": tile, "per_iter_s": per_iter, "per_sm_gbps": tile / per_iter / 1e9,
                      "total_gbps": tile * p["grid"] / per_iter / 1e9})
    one = [r for r in rows_out if r.get("per_iter_s") and r["where"] == "l2" and r["params"]["num_stages"] == 1]
    value = slope = None
    if len(one) >= 2:
        x = np.array([r["tile_bytes"] for r in one], float)
        y = np.array([r["per_iter_s"] for r in one], float)
        slope, value = np.polyfit(x, y, 1)
    return {"value": None if value is None else float(value) * 1e6, "unit": "us",
            "single_load_gbps_per_sm": None if not slope else 1e-9 / float(slope),
            "configs": rows_out, "compile_s": compile_s,
            "method": f"TileLang tile_stream (tileroof.gpu.tl_kernels): {ctx.sm_count} blocks (1/SM, warp-specialised, "
                      f"TMA), {iters} pipelined tile loads each, consumer reads one row per tile; tiles "
                      f"{', '.join(f'{r}x{c}' for r, c in TMA_TILES)} fp16, stages {TMA_STAGES}, 4 MiB working set (L2) "
                      "or every tile read once (DRAM); value = intercept of time per iteration vs tile bytes over "
                      f"the 1-stage L2 configs (latency of one tile load), median of {max(10, ctx.runs // 3)} runs each"}


# ------------------------------------------------------------------ fixed cost per block (TileLang)
BLOCK_ITERS = (1, 2, 4, 8, 16, 32)
BLOCK_ROUNDS = 16                     # blocks per SM over the launch


def _block_configs(ctx: Ctx) -> list:
    rows, cols, grid = 128, 64, ctx.sm_count * BLOCK_ROUNDS
    out = []
    for where in ("l2", "dram"):
        for stages in (2, 3):
            for iters in BLOCK_ITERS:
                if where == "l2":
                    n_tiles, stride = 256, 7             # 4 MiB of 16 KiB tiles
                else:
                    n_tiles, stride = grid * iters, iters
                n_tiles += (-n_tiles) % 4
                out.append({"where": where, "params": dict(n_tiles=n_tiles, rows=rows, cols=cols, grid=grid, iters=iters,
                                                           num_stages=stages, stride=stride)})
    return out


def block_overhead(ctx: Ctx) -> dict:
    """Fixed time a pipelined, warp-specialised block costs besides its loop iterations (block
    start, first tile's latency, epilogue writing a 128x64 fp16 tile, exit), from TileLang's
    block_stream kernel (tileroof.gpu.tl_kernels): sm_count x 16 blocks, 1..32 iterations each;
    time per block round = intercept + iters x slope.  value = the intercept of the DRAM-fed,
    2-stage configs (each block's tiles are new, as in a GEMM's first wave)."""
    import numpy as np
    import torch
    from .tl_kernels import block_stream
    cfgs = _block_configs(ctx)
    kernels, compile_s = _compiled(block_stream, cfgs)
    rows_out = _timed_configs(cfgs, kernels, max(10, ctx.runs // 3), lambda p: (
        torch.randn((p["n_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda"),
        torch.empty((p["grid"] * p["rows"], p["cols"]), dtype=torch.float16, device="cuda")))
    for r in rows_out:
        if "stats" in r:
            r["per_round_s"] = r["stats"]["median_s"] / BLOCK_ROUNDS
    fits = {}
    for where in ("l2", "dram"):
        for stages in (2, 3):
            sel = [r for r in rows_out if r.get("per_round_s") and r["where"] == where
                   and r["params"]["num_stages"] == stages]
            if len(sel) >= 2:
                slope, icpt = np.polyfit([r["params"]["iters"] for r in sel], [r["per_round_s"] for r in sel], 1)
                fits[f"{where}_s{stages}"] = {"intercept_s": float(icpt), "per_iter_s": float(slope)}
    v = fits.get("dram_s2", {}).get("intercept_s")
    return {"value": None if v is None else v * 1e6, "unit": "us", "fits": fits, "configs": rows_out,
            "compile_s": compile_s,
            "method": f"TileLang block_stream (tileroof.gpu.tl_kernels): {ctx.sm_count}x{BLOCK_ROUNDS} blocks of 128 "
                      f"threads (+128 producer), iterations {BLOCK_ITERS}, 128x64 fp16 tiles, stages 2 and 3, 4 MiB "
                      "working set (L2) or new tiles per block (DRAM); each block adds the tiles into a float32 "
                      "fragment and stores it as a 128x64 fp16 tile; per-round time = median / 16; value = "
                      "intercept of the DRAM 2-stage line"}


# ------------------------------------------------------------------ gemm issue rate by tile shape (TileLang)
# (M, N, K, threads): the loop gemms of the corpus' GEMM and flash-attention configs
GEMM_SHAPES = ((64, 32, 128, 128), (64, 64, 128, 128), (64, 128, 128, 128), (64, 256, 64, 128),
               (128, 32, 128, 128), (128, 64, 128, 128), (128, 128, 128, 128), (128, 128, 32, 128),
               (128, 128, 64, 128), (128, 256, 64, 128), (64, 128, 64, 128), (64, 64, 64, 128),
               (128, 64, 128, 256), (128, 128, 128, 256), (128, 128, 64, 256), (128, 256, 64, 256),
               (256, 128, 64, 256), (128, 256, 32, 256))


def _gemm_configs(ctx: Ctx) -> list:
    out = []
    for m, n, k, thr in GEMM_SHAPES:
        flops = 2 * m * n * k
        iters = int(min(20000, max(500, 2e-3 / (flops / 4.6e12))))
        for per_sm in ((1, 2) if thr == 128 else (1,)):
            out.append({"shape": [m, n, k], "threads": thr, "blocks_per_sm": per_sm,
                        "params": dict(M=m, N=n, K=k, threads=thr, iters=iters, grid=ctx.sm_count * per_sm)})
    return out


def gemm_issue(ctx: Ctx) -> dict:
    """Time per T.gemm call of each tile shape with operands already in shared memory (TileLang's
    gemm_loop kernel, tileroof.gpu.tl_kernels): one block per SM (and two, for 128 threads).
    value = fp16 TFLOP/s of the 128x256x64 tile with 2 consumer warpgroups (a large-tile rate)."""
    import torch
    from .tl_kernels import gemm_loop
    cfgs = _gemm_configs(ctx)
    kernels, compile_s = _compiled(gemm_loop, cfgs)
    rows_out = _timed_configs(cfgs, kernels, max(10, ctx.runs // 3), lambda p: (
        torch.randn((p["M"], p["K"]), dtype=torch.float16, device="cuda"),
        torch.randn((p["N"], p["K"]), dtype=torch.float16, device="cuda"),
        torch.empty((p["grid"] * p["M"], p["N"]), dtype=torch.float32, device="cuda")))
    value = None
    for r in rows_out:
        if "stats" in r:
            p = r["params"]
            r["per_call_s"] = r["stats"]["median_s"] / p["iters"]
            r["tflops"] = 2 * p["M"] * p["N"] * p["K"] * p["grid"] / r["per_call_s"] / 1e12
            if r["shape"] == [128, 256, 64] and r["threads"] == 256:
                value = r["tflops"]
    return {"value": value, "unit": "TFLOP/s", "configs": rows_out, "compile_s": compile_s,
            "method": f"TileLang gemm_loop (tileroof.gpu.tl_kernels): {ctx.sm_count} or 2x{ctx.sm_count} blocks, each "
                      "calls T.gemm(A_s, B_s^T, C) on fp16 operands already in shared memory, fp32 accumulate, "
                      f"500-20000 times; shapes (M, N, K, threads) {list(GEMM_SHAPES)}; time per call = median / "
                      f"iterations, median of {max(10, ctx.runs // 3)} runs; value = TFLOP/s of 128x256x64, 256 threads"}


# ------------------------------------------------------------------ row-reduction latency (TileLang)
REDUCE_SHAPES = ((64, 64, 128), (64, 128, 128), (128, 64, 128), (128, 128, 128), (64, 32, 128), (128, 32, 128),
                 (128, 64, 256), (128, 128, 256))


def reduce_latency(ctx: Ctx, iters: int = 4000) -> dict:
    """Time per iteration of TileLang's reduce_chain kernel (tileroof.gpu.tl_kernels): a row
    reduction of an (M x N) fp32 fragment whose result feeds the next iteration, one block per
    SM (and two).  Each iteration also does M x N max, mul and sub operations.  value = the time
    per iteration of the 64x64, 128-thread, one-block config; the model's constants come from the
    whole table (benchmarks/merge_calibration.py fits it against the model's own count)."""
    import torch
    from .tl_kernels import reduce_chain
    cfgs = []
    for m, n, thr in REDUCE_SHAPES:
        for per_sm in (1, 2):
            cfgs.append({"shape": [m, n], "threads": thr, "blocks_per_sm": per_sm,
                         "params": dict(M=m, N=n, threads=thr, iters=iters, grid=ctx.sm_count * per_sm)})
    kernels, compile_s = _compiled(reduce_chain, cfgs)
    rows_out = _timed_configs(cfgs, kernels, max(10, ctx.runs // 3), lambda p: (
        torch.randn((p["M"], 64), dtype=torch.float16, device="cuda"),
        torch.randn((p["N"], 64), dtype=torch.float16, device="cuda"),
        torch.empty((p["grid"] * p["M"], p["N"]), dtype=torch.float32, device="cuda")))
    for r in rows_out:
        if "stats" in r:
            r["per_iter_s"] = r["stats"]["median_s"] / r["params"]["iters"]
    ref = next((r["per_iter_s"] for r in rows_out if r.get("per_iter_s") and r["shape"] == [64, 64]
                and r["threads"] == 128 and r["blocks_per_sm"] == 1), None)
    return {"value": None if ref is None else ref * 1e6, "unit": "us", "configs": rows_out, "compile_s": compile_s,
            "method": f"TileLang reduce_chain (tileroof.gpu.tl_kernels): {ctx.sm_count} or 2x{ctx.sm_count} blocks, "
                      f"{iters} dependent iterations of T.reduce_max over rows + one FMA per element; shapes (M, N, "
                      f"threads) {list(REDUCE_SHAPES)}; time per iteration = median / iterations, median of "
                      f"{max(10, ctx.runs // 3)} runs"}
