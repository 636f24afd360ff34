"""TileLang kernels used by calibration (compiled only on a GPU machine).

`tile_stream`: each block streams `iters` tiles of (rows x cols) through a T.Pipelined loop with
`num_stages` shared-memory buffers, the way a GEMM's main loop loads its operand tiles (on Hopper
TileLang lowers it to 2-D tensor-map TMA loads by a producer warpgroup, mbarrier waits by the
consumer; A is 4 tiles wide so a tile is a strided box, as a GEMM operand tile is).  The
consumer reads one row of each tile (so the load is needed) and does nothing else: the time per
iteration is the memory pipeline alone (load latency, transfer, stages in flight).  Block b reads
tiles (b * stride + k) mod n_tiles of A, so a small A stays in L2 and a large one streams from DRAM.
With `group` > 1, blocks (b + offset) // group read the same tiles at the same iteration (l2merge).
"""
# NOTE: no `from __future__ import annotations` (TileLang reads the annotations)
import tilelang
import tilelang.language as T


@tilelang.jit
def tile_stream(n_tiles, rows, cols, grid, iters, num_stages, stride=7, threads=128, dtype="float16", group=1,
                offset=0):
    wide = 4                              # tiles per row of A
    assert n_tiles % wide == 0

    @T.prim_func
    def main(A: T.Tensor((n_tiles // wide * rows, wide * cols), dtype), Out: T.Tensor((grid, cols), "float32")):
        with T.Kernel(grid, threads=threads) as bx:
            A_shared = T.alloc_shared((rows, cols), dtype)
            acc = T.alloc_fragment((cols,), "float32")
            T.clear(acc)
            for k in T.Pipelined(iters, num_stages=num_stages):
                t = ((bx + offset) // group * stride + k) % n_tiles
                r = t // wide
                c = t % wide
                T.copy(A[r * rows:(r + 1) * rows, c * cols:(c + 1) * cols], A_shared)
                for j in T.Parallel(cols):
                    acc[j] += A_shared[k % rows, j]
            T.copy(acc, Out[bx, :])

    return main


@T.macro
def _block_stream_epilogue(acc, C_shared, Out, bx, rows, cols, store):
    """block_stream's and block_stream2's epilogue: the accumulator stored through shared memory
    as block bx's (rows x cols) tile of Out; store=False: written only where it equals a value the
    inputs never sum to (-1e30), so the loads stay and the launch writes nothing."""
    if store:
        T.copy(acc, C_shared)
        T.copy(C_shared, Out[bx * rows:(bx + 1) * rows, :])
    else:
        for i, j in T.Parallel(rows, cols):
            if acc[i, j] == -1e30:
                Out[bx * rows + i, j] = acc[i, j]


@tilelang.jit
def block_stream(n_tiles, rows, cols, grid, iters, num_stages, stride, threads=128, dtype="float16", groups=0,
                 pair=1, store=True):
    """A GEMM-shaped block without the math: `grid` blocks (many per SM over time) each load
    `iters` tiles through a T.Pipelined loop, add each tile into a float32 fragment (the
    accumulator) and write it back as a (rows x cols) tile through shared memory (the epilogue).
    Time per block against iters gives the fixed cost a block pays besides its loop iterations
    (start, pipeline fill, epilogue, exit).  Block b starts at tile b x stride; with `groups` > 0
    at (b mod groups) x stride instead, so blocks `groups` launches apart read the same tiles (the
    rows of a GEMM grid re-reading one operand, l2probe --rows); with `pair` > 1 at
    ((b // pair) mod groups) x stride: `pair` neighbouring blocks read the same tiles in step.
    store=False: the accumulator is written only where it equals a value the inputs never sum to
    (-1e30), so the loads stay and the launch writes nothing (l2probe --nostore)."""
    wide = 4
    assert n_tiles % wide == 0

    @T.prim_func
    def main(A: T.Tensor((n_tiles // wide * rows, wide * cols), dtype), Out: T.Tensor((grid * rows, cols), dtype)):
        with T.Kernel(grid, threads=threads) as bx:
            A_shared = T.alloc_shared((rows, cols), dtype)
            C_shared = T.alloc_shared((rows, cols), dtype)
            acc = T.alloc_fragment((rows, cols), "float32")
            T.clear(acc)
            for k in T.Pipelined(iters, num_stages=num_stages):
                t = (((bx // pair) % groups if groups else bx) * stride + k) % n_tiles
                r = t // wide
                c = t % wide
                T.copy(A[r * rows:(r + 1) * rows, c * cols:(c + 1) * cols], A_shared)
                for i, j in T.Parallel(rows, cols):
                    acc[i, j] += A_shared[i, j]
            _block_stream_epilogue(acc, C_shared, Out, bx, rows, cols, store)

    return main


@tilelang.jit
def block_stream2(n_tiles, b_tiles, rows, cols, grid, iters, num_stages, groups, threads=128, dtype="float16",
                  store=True):
    """block_stream --rows with a GEMM's second operand: block b reads A's sequence b mod `groups`
    (re-read by the next wave, as a GEMM grid's rows re-read A) and B's sequence b // `groups`
    (shared by the `groups` consecutive blocks of one column, as B's tiles are), one tile of each
    per iteration, and adds both into its fragment (l2probe --streams)."""
    wide = 4
    assert n_tiles % wide == 0 and b_tiles % wide == 0

    @T.prim_func
    def main(A: T.Tensor((n_tiles // wide * rows, wide * cols), dtype),
             B: T.Tensor((b_tiles // wide * rows, wide * cols), dtype), Out: T.Tensor((grid * rows, cols), dtype)):
        with T.Kernel(grid, threads=threads) as bx:
            A_shared = T.alloc_shared((rows, cols), dtype)
            B_shared = T.alloc_shared((rows, cols), dtype)
            C_shared = T.alloc_shared((rows, cols), dtype)
            acc = T.alloc_fragment((rows, cols), "float32")
            T.clear(acc)
            for k in T.Pipelined(iters, num_stages=num_stages):
                ta = ((bx % groups) * iters + k) % n_tiles
                tb = ((bx // groups) * iters + k) % b_tiles
                T.copy(A[ta // wide * rows:(ta // wide + 1) * rows, ta % wide * cols:(ta % wide + 1) * cols], A_shared)
                T.copy(B[tb // wide * rows:(tb // wide + 1) * rows, tb % wide * cols:(tb % wide + 1) * cols], B_shared)
                for i, j in T.Parallel(rows, cols):
                    acc[i, j] += A_shared[i, j] + B_shared[i, j]
            _block_stream_epilogue(acc, C_shared, Out, bx, rows, cols, store)

    return main


def _row_policy(M: int, threads: int):
    """The gemm warp policy of the microbenchmarks' fragments: whole rows per warp where M has 64
    rows for each warpgroup (the layout of flash attention's acc_s), else square."""
    return T.GemmWarpPolicy.FullRow if M >= 64 * (threads // 128) else T.GemmWarpPolicy.Square


def timer_columns(loop_clock: bool = False, first_gemm: bool = False) -> int:
    """Columns of timed_matmul's Times tensor for its switches (see its docstring)."""
    return 8 if first_gemm else (7 if loop_clock else 6)


@tilelang.jit
def gemm_loop(M, N, K, threads, iters, grid, dtype="float16"):
    """Tensor-core issue rate of one gemm tile shape: each block loads A (M x K) and B (N x K)
    into shared memory once, then calls T.gemm(A_s, B_s^T, C) `iters` times in a plain loop (each
    call is TileLang's wgmma sequence: fence, issue, commit, wait for completion), and stores C.
    Time per call = the gemm's cost inside a main loop when its operands are already in place."""
    policy = _row_policy(M, threads)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), Out: T.Tensor((grid * M, N), "float32")):
        with T.Kernel(grid, threads=threads) as bx:
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((N, K), dtype)
            C = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C)
            for _ in T.serial(iters):
                T.gemm(A_s, B_s, C, transpose_B=True, policy=policy)
            T.copy(C, Out[bx * M:(bx + 1) * M, :])

    return main


@tilelang.jit
def reduce_chain(M, N, threads, iters, grid):
    """Latency of a row reduction inside a loop: each iteration reduces a (M x N) float32
    fragment along its rows (T.reduce_max) and feeds the result back into every element (a mul
    and a sub each), so iterations form one dependent chain, as flash attention's online softmax
    does.  The fragment is first written by a T.gemm so it has the gemm accumulator's layout
    (rows spread over 4 threads, as acc_s in flash attention)."""
    policy = _row_policy(M, threads)

    @T.prim_func
    def main(A: T.Tensor((M, 64), "float16"), B: T.Tensor((N, 64), "float16"),
             Out: T.Tensor((grid * M, N), "float32")):
        with T.Kernel(grid, threads=threads) as bx:
            A_s = T.alloc_shared((M, 64), "float16")
            B_s = T.alloc_shared((N, 64), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            row = T.alloc_fragment((M,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            T.gemm(A_s, B_s, acc, transpose_B=True, policy=policy)
            for _ in T.serial(iters):
                T.reduce_max(acc, row, dim=1, clear=True)
                for i, j in T.Parallel(M, N):
                    acc[i, j] = acc[i, j] * 0.5 - row[i] * 0.25
            T.copy(acc, Out[bx * M:(bx + 1) * M, :])

    return main


@tilelang.jit
def div_chain(M, N, threads, iters, grid, op="div"):
    """Cost of element-wise fp32 arithmetic on a gemm-layout fragment inside a serial loop, as
    flash attention's epilogue (acc_o /= logsum) does once: each iteration divides (op "div",
    IEEE division as TileLang emits it without fast math) or multiplies (op "mul", the control)
    every element by its row's value, so iterations form one dependent chain per element and the
    elements of one iteration are independent."""
    policy = _row_policy(M, threads)

    @T.prim_func
    def main(A: T.Tensor((M, 64), "float16"), B: T.Tensor((N, 64), "float16"),
             D: T.Tensor((M,), "float32"), Out: T.Tensor((grid * M, N), "float32")):
        with T.Kernel(grid, threads=threads) as bx:
            A_s = T.alloc_shared((M, 64), "float16")
            B_s = T.alloc_shared((N, 64), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            row = T.alloc_fragment((M,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(D, row)
            T.clear(acc)
            T.gemm(A_s, B_s, acc, transpose_B=True, policy=policy)
            for _ in T.serial(iters):
                for i, j in T.Parallel(M, N):
                    if op == "div":
                        acc[i, j] = acc[i, j] / row[i]
                    else:
                        acc[i, j] = acc[i, j] * row[i]
            T.copy(acc, Out[bx * M:(bx + 1) * M, :])

    return main


# device helpers for timed_matmul, injected with T.import_source: the GPU-wide nanosecond timer
# and the SM a block runs on
TIMER_SOURCE = r"""
__device__ __forceinline__ long long tr_globaltimer() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return (long long)t; }
__device__ __forceinline__ long long tr_smid() {
  unsigned int r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return (long long)r; }
__device__ __forceinline__ long long tr_clock() { return (long long)clock64(); }
"""


@tilelang.jit
def timed_matmul(M, N, K, block_M, block_N, block_K, num_stages, threads, dtype="float16", swizzle=False,
                 panel_size=10, epilogue="direct", loop_clock=False, first_gemm=False):
    """The corpus GEMM (NN, fp32 accumulator) that also records, per block, the GPU timer when
    its thread 0 starts and after its epilogue, and its SM: Times[block, :] = (start ns, end ns,
    smid, SM cycles at start, SM cycles at end, GPU timer after the main loop[, SM cycles after the
    main loop]), block = by * gridDim.x + bx (after T.use_swizzle's remapping when swizzled); cycles
    over nanoseconds is the SM clock the block (its loop, its epilogue) ran at.  The seventh column
    is written when Times has one.  epilogue: "direct" stores the accumulator fragment to C (T.copy(C_local, C)),
    "shared" stages it through shared memory first (T.copy(C_local, C_shared); T.copy(C_shared, C)).
    first_gemm: Times has eight columns and the eighth is the GPU timer after the loop's first gemm
    has completed (the consumer waited for the first tiles, then for its wgmma: the prologue's end
    plus one gemm)."""
    gx, gy = (N + block_N - 1) // block_N, (M + block_M - 1) // block_M
    if epilogue not in ("direct", "shared"):
        raise ValueError(f"epilogue {epilogue!r}: 'direct' or 'shared'")

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype),
             Times: T.Tensor((gx * gy, timer_columns(loop_clock, first_gemm)), "int64")):
        with T.Kernel(gx, gy, threads=threads) as (bx, by):
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            if epilogue == "shared":
                C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.use_swizzle(panel_size=panel_size, enable=swizzle)
            if tx == 0:
                Times[by * gx + bx, 0] = T.call_extern("int64", "tr_globaltimer")
                Times[by * gx + bx, 3] = T.call_extern("int64", "tr_clock")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
                if first_gemm:
                    if k == 0 and tx == 0:
                        Times[by * gx + bx, 7] = T.call_extern("int64", "tr_globaltimer")
            if tx == 0:
                Times[by * gx + bx, 5] = T.call_extern("int64", "tr_globaltimer")
                if loop_clock:
                    Times[by * gx + bx, 6] = T.call_extern("int64", "tr_clock")
            if epilogue == "shared":
                T.copy(C_local, C_shared)
                T.copy(C_shared, C[by * block_M, bx * block_N])
            else:
                T.copy(C_local, C[by * block_M, bx * block_N])
            if tx == 0:
                Times[by * gx + bx, 1] = T.call_extern("int64", "tr_globaltimer")
                Times[by * gx + bx, 2] = T.call_extern("int64", "tr_smid")
                Times[by * gx + bx, 4] = T.call_extern("int64", "tr_clock")

    return main


def _gemm_pipe_body(block_M, block_N, block_K, num_stages, threads, iters, grid, n_tiles, dtype, stride=0,
                    chain=None):
    """gemm_pipe's loop (see gemm_pipe, gemm_pipe_fed).  chain = (n_gemm, hop): gemm_chain_nows's
    variant, with a staging buffer S_shared and n_gemm - 1 more gemms an iteration after the first,
    accumulated (hop "none") or each fed by the previous result through S_shared (hop "copy": a
    T.copy of the fragment, "masked": a T.Parallel copy with a causal mask; needs block_N ==
    block_K)."""
    n_more, hop = (chain[0] - 1, chain[1]) if chain is not None else (0, "none")
    staging = chain is not None

    @T.prim_func
    def main(A: T.Tensor((n_tiles * block_M, block_K), dtype), B: T.Tensor((n_tiles * block_K, block_N), dtype),
             Out: T.Tensor((grid * block_M, block_N), "float32"), Times: T.Tensor((grid, 4), "int64")):
        with T.Kernel(grid, threads=threads) as bx:
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            if staging:
                S_shared = T.alloc_shared((block_M, block_K), dtype)
            C = T.alloc_fragment((block_M, block_N), "float32")
            if tx == 0:
                Times[bx, 0] = T.call_extern("int64", "tr_globaltimer")
                Times[bx, 1] = T.call_extern("int64", "tr_clock")
            T.clear(C)
            for k in T.Pipelined(iters, num_stages=num_stages):
                t = (k + bx * stride) % n_tiles if stride else k % n_tiles
                T.copy(A[t * block_M:(t + 1) * block_M, 0:block_K], A_shared)
                T.copy(B[t * block_K:(t + 1) * block_K, 0:block_N], B_shared)
                T.gemm(A_shared, B_shared, C)
                if staging:
                    # (a serial TIR loop of n_gemm - 1 trips, as gemm_chain_nows has always built it)
                    for _ in range(n_more):
                        if hop == "none":
                            T.gemm(A_shared, B_shared, C)
                        else:
                            if hop == "copy":
                                T.copy(C, S_shared)
                            else:
                                for i, j in T.Parallel(block_M, block_K):
                                    S_shared[i, j] = T.if_then_else(i >= j, C[i, j], 0)
                            T.gemm(S_shared, B_shared, C, clear_accum=True)
            T.copy(C, Out[bx * block_M:(bx + 1) * block_M, :])
            if tx == 0:
                Times[bx, 2] = T.call_extern("int64", "tr_globaltimer")
                Times[bx, 3] = T.call_extern("int64", "tr_clock")

    return main


@tilelang.jit(pass_configs={"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True})
def gemm_pipe_nows(block_M, block_N, block_K, num_stages, threads, iters, grid, n_tiles=16, dtype="float16"):
    """gemm_pipe compiled as TileLang's upstream examples often are (tl.disable_tma_lower,
    tl.disable_warp_specialized): cp.async loads issued by the consumer threads themselves, no
    producer warps, a barrier per stage -- the fixed cost of such an iteration."""
    return _gemm_pipe_body(block_M, block_N, block_K, num_stages, threads, iters, grid, n_tiles, dtype)


@tilelang.jit
def gemm_pipe(block_M, block_N, block_K, num_stages, threads, iters, grid, n_tiles=16, dtype="float16"):
    """A GEMM main loop whose operand tiles every block reads in the same order from small,
    L2-resident A (n_tiles x block_M rows) and B (n_tiles x block_K rows) buffers, so the L2
    Request Coalescer merges the blocks' requests and the slices are not the limit: the time per
    iteration against block_K gives the fixed cost one pipelined iteration pays besides its math
    (producer/consumer barrier round trip, TMA issue, wgmma fence/commit/wait).  Times[block] =
    (GPU timer, SM cycles) at thread 0's start and after the store: the clock the block ran at."""
    return _gemm_pipe_body(block_M, block_N, block_K, num_stages, threads, iters, grid, n_tiles, dtype)


@tilelang.jit
def gemm_pipe_fed(block_M, block_N, block_K, num_stages, threads, iters, grid, n_tiles, stride, dtype="float16"):
    """gemm_pipe whose block bx reads tiles (k + bx * stride) mod n_tiles: with a small n_tiles and a
    small stride every block's tiles stay in L2 but no two blocks ask for the same one together (no
    merging); with n_tiles = grid x stride and stride >= iters every tile is read once, from DRAM.
    Its time per iteration against num_stages: what the tiles' latency adds to the iteration."""
    return _gemm_pipe_body(block_M, block_N, block_K, num_stages, threads, iters, grid, n_tiles, dtype, stride)


@tilelang.jit
def attn_pipe(block_M, block_N, dim, num_stages, threads, iters, grid, n_tiles=16, dtype="float16"):
    """An attention-shaped main loop without the softmax: per iteration S = Q K^T (fp32 fragment),
    P = S cast to `dtype` (registers), O += P V, with K and V tiles read by every block in the same
    order from small L2-resident buffers (the slices are not the limit).  Against gemm_pipe (one
    gemm per iteration) its time per iteration over block_N tells whether a pipelined iteration's
    fixed cost is paid once per gemm or once per iteration.  Times[block] = (GPU timer, SM cycles)
    at thread 0's start and after the store."""

    @T.prim_func
    def main(Q: T.Tensor((block_M, dim), dtype), K: T.Tensor((n_tiles * block_N, dim), dtype),
             V: T.Tensor((n_tiles * block_N, dim), dtype), Out: T.Tensor((grid * block_M, dim), "float32"),
             Times: T.Tensor((grid, 4), "int64")):
        with T.Kernel(grid, threads=threads) as bx:
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            S = T.alloc_fragment((block_M, block_N), "float32")
            P = T.alloc_fragment((block_M, block_N), dtype)
            O = T.alloc_fragment((block_M, dim), "float32")
            if tx == 0:
                Times[bx, 0] = T.call_extern("int64", "tr_globaltimer")
                Times[bx, 1] = T.call_extern("int64", "tr_clock")
            T.copy(Q, Q_shared)
            T.clear(O)
            for k in T.Pipelined(iters, num_stages=num_stages):
                t = k % n_tiles
                T.copy(K[t * block_N:(t + 1) * block_N, :], K_shared)
                T.clear(S)
                T.gemm(Q_shared, K_shared, S, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(V[t * block_N:(t + 1) * block_N, :], V_shared)
                T.copy(S, P)
                T.gemm(P, V_shared, O, policy=T.GemmWarpPolicy.FullRow)
            T.copy(O, Out[bx * block_M:(bx + 1) * block_M, :])
            if tx == 0:
                Times[bx, 2] = T.call_extern("int64", "tr_globaltimer")
                Times[bx, 3] = T.call_extern("int64", "tr_clock")

    return main


@tilelang.jit
def timed_attention(batch, heads, seq_len, dim, block_M=128, block_N=128, num_stages=2, threads=256,
                    dtype="float16"):
    """The corpus flash-attention forward (corpus.attention.flash_attn_fwd, non-causal: its key-loop
    step, corpus.attention.key_tile_step) that also
    records, per block, thread 0's GPU timer at its start, after the Q tile and the fills, after the
    main loop and after the epilogue, and its SM: Times[block, :] = (start, after prologue, after
    loop, end, smid), block = (bz * heads + by) * gridDim.x + bx."""
    from ..corpus.attention import LOG2E, key_tile_step
    scale = (1.0 / dim) ** 0.5 * LOG2E
    shape = (batch, heads, seq_len, dim)
    accum = "float32"
    key_tile = key_tile_step(block_M, block_N, dim, scale, False, accum)
    gx = (seq_len + block_M - 1) // block_M

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             Output: T.Tensor(shape, dtype), Times: T.Tensor((batch * heads * gx, 7), "int64")):
        with T.Kernel(gx, heads, batch, threads=threads) as (bx, by, bz):
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            O_shared = T.alloc_shared((block_M, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum)
            scores_max = T.alloc_fragment((block_M,), accum)
            scores_max_prev = T.alloc_fragment((block_M,), accum)
            scores_scale = T.alloc_fragment((block_M,), accum)
            scores_sum = T.alloc_fragment((block_M,), accum)
            logsum = T.alloc_fragment((block_M,), accum)
            row = (bz * heads + by) * gx + bx
            if tx == 0:
                Times[row, 0] = T.call_extern("int64", "tr_globaltimer")
                Times[row, 5] = T.call_extern("int64", "tr_clock")
            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            if tx == 0:
                Times[row, 1] = T.call_extern("int64", "tr_globaltimer")
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=num_stages):
                key_tile(K, V, bx, by, bz, k, Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o,
                         scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
            if tx == 0:
                Times[row, 2] = T.call_extern("int64", "tr_globaltimer")
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])
            if tx == 0:
                Times[row, 3] = T.call_extern("int64", "tr_globaltimer")
                Times[row, 4] = T.call_extern("int64", "tr_smid")
                Times[row, 6] = T.call_extern("int64", "tr_clock")

    return main


def _timed_affine_body(G, M, N, K, block_M, block_N, block_K, num_stages, threads, dtype):
    """corpus.upstream._grouped_affine_body (the grouped GEMM's loop with its groups written out:
    grid (M tiles, N tiles), M fastest, block bx reads B of group bx * G // gx) that also records
    per block Times[by * gx + bx] = (GPU timer at thread 0's start, after the main loop, after the
    store; SM id)."""
    gx = (M + block_M - 1) // block_M

    @T.prim_func
    def main(A: T.Tensor([M, K], dtype), B: T.Tensor([G, K, N], dtype), C: T.Tensor([M, N], dtype),
             Times: T.Tensor((gx * T.ceildiv(N, block_N), 4), "int64")):
        with T.Kernel(gx, T.ceildiv(N, block_N), threads=threads) as (bx, by):
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            A_shared = T.alloc_shared([block_M, block_K], dtype)
            B_shared = T.alloc_shared([block_K, block_N], dtype)
            C_local = T.alloc_fragment([block_M, block_N], "float32")
            if tx == 0:
                Times[by * gx + bx, 0] = T.call_extern("int64", "tr_globaltimer")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[bx * block_M, k * block_K], A_shared)
                T.copy(B[bx * G // gx, k * block_K, by * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if tx == 0:
                Times[by * gx + bx, 1] = T.call_extern("int64", "tr_globaltimer")
            T.copy(C_local, C[bx * block_M, by * block_N])
            if tx == 0:
                Times[by * gx + bx, 2] = T.call_extern("int64", "tr_globaltimer")
                Times[by * gx + bx, 3] = T.call_extern("int64", "tr_smid")

    return main


@tilelang.jit(pass_configs={"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True})
def timed_affine_cpasync(G, M, N, K, block_M=64, block_N=128, block_K=64, num_stages=2, threads=256,
                         dtype="float16"):
    """_timed_affine_body with the grouped GEMM's pass configs (cp.async loads, no producer warps)."""
    return _timed_affine_body(G, M, N, K, block_M, block_N, block_K, num_stages, threads, dtype)


@tilelang.jit
def timed_affine_tma(G, M, N, K, block_M=64, block_N=128, block_K=64, num_stages=2, threads=256, dtype="float16"):
    """_timed_affine_body with TileLang's default passes (TMA loads, warp specialisation)."""
    return _timed_affine_body(G, M, N, K, block_M, block_N, block_K, num_stages, threads, dtype)


@tilelang.jit(pass_configs={"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True})
def timed_grouped_gemm(batch_sizes_list, K, N, block_M=64, block_N=128, block_K=64, num_stages=2, threads=256,
                       dtype="float16"):
    """corpus.upstream.grouped_gemm (upstream's example_grouped_gemm_fwd: each block finds its group
    by a scan of the padded offsets) that also records per block Times[by * gx + bx] = (GPU timer at
    thread 0's start, after the main loop, after the store; SM id), gx = ceil(total / block_M) + groups."""
    batch_sum = sum(batch_sizes_list)
    batch_count = len(batch_sizes_list)
    gx = (batch_sum + block_M - 1) // block_M + batch_count

    @T.prim_func
    def main(A: T.Tensor([batch_sum, K], dtype), B: T.Tensor([batch_count, K, N], dtype),
             C: T.Tensor([batch_sum, N], dtype), batch_sizes: T.Tensor([batch_count], "int32"),
             batch_offsets: T.Tensor([batch_count], "int32"), batch_padded_offsets: T.Tensor([batch_count], "int32"),
             Times: T.Tensor((gx * T.ceildiv(N, block_N), 4), "int64")):
        with T.Kernel(gx, T.ceildiv(N, block_N), threads=threads) as (bx, by):
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            A_shared = T.alloc_shared([block_M, block_K], dtype)
            B_shared = T.alloc_shared([block_K, block_N], dtype)
            C_local = T.alloc_fragment([block_M, block_N], "float32")
            cur_batch_idx = T.alloc_local([1], "int32")
            cur_batch_size = T.alloc_local([1], "int32")
            if tx == 0:
                Times[by * gx + bx, 0] = T.call_extern("int64", "tr_globaltimer")
            m_start_padded = bx * block_M
            for i in range(batch_count):
                in_cur_batch_idx = (m_start_padded >= batch_padded_offsets[i])
                cur_batch_idx[0] = T.if_then_else(in_cur_batch_idx, i, cur_batch_idx[0])
            cur_batch_size[0] = batch_sizes[cur_batch_idx[0]]
            m_start = m_start_padded - batch_padded_offsets[cur_batch_idx[0]] + batch_offsets[cur_batch_idx[0]]
            actual_rows = T.max(0, T.min(block_M, cur_batch_size[0] + batch_padded_offsets[cur_batch_idx[0]]
                                         - m_start_padded))
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[m_start:m_start + block_M, k * block_K:(k + 1) * block_K], A_shared)
                T.copy(B[cur_batch_idx[0], k * block_K:(k + 1) * block_K, by * block_N:(by + 1) * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if tx == 0:
                Times[by * gx + bx, 1] = T.call_extern("int64", "tr_globaltimer")
            for i, j in T.Parallel(block_M, block_N):
                with T.If(i < actual_rows), T.Then():
                    C[m_start + i, by * block_N + j] = C_local[i, j]
            if tx == 0:
                Times[by * gx + bx, 2] = T.call_extern("int64", "tr_globaltimer")
                Times[by * gx + bx, 3] = T.call_extern("int64", "tr_smid")

    return main


@tilelang.jit(pass_configs={"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True})
def gemm_chain_nows(n_gemm, hop, iters, grid, tile=64, num_stages=2, threads=128, n_tiles=16, dtype="float16"):
    """A pipelined loop of `n_gemm` tile x tile x tile gemms an iteration, compiled as upstream's
    linear attention is (cp.async, no producer warps), every block reading the same L2-resident
    A and B tiles (gemm_pipe's feed and body, _gemm_pipe_body's chain variant).  hop "none": the
    gemms accumulate into one fragment (dependent through the accumulator only); "copy": each later
    gemm reads the previous one's result staged through shared memory (T.copy(C, S_shared)),
    "masked": staged by a T.Parallel element-wise copy with a causal mask (linear attention's s).
    The difference per hop is what a gemm fed by another gemm of the same iteration through shared
    memory waits besides its math.  Times[block] = (GPU timer, SM cycles) at thread 0's start and
    after the store."""
    return _gemm_pipe_body(tile, tile, tile, num_stages, threads, iters, grid, n_tiles, dtype, chain=(n_gemm, hop))


@tilelang.jit
def timed_matmul_iters(M, N, K, block_M, block_N, block_K, num_stages, threads, swizzle=False, panel_size=10,
                       dtype="float16"):
    """timed_matmul (the corpus GEMM, NN, fp32 accumulator, warp-specialised) with thread 0's GPU
    timer after every iteration's gemm: Iters[block, k], block = by * gridDim.x + bx after
    T.use_swizzle's remapping; Times[block] = (start ns, end ns, smid).  The step from one
    iteration's timer to the next is that iteration: its wait for its tiles and its gemm."""
    gx, gy = (N + block_N - 1) // block_N, (M + block_M - 1) // block_M
    nk = (K + block_K - 1) // block_K

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype),
             Times: T.Tensor((gx * gy, 3), "int64"), Iters: T.Tensor((gx * gy, nk), "int64")):
        with T.Kernel(gx, gy, threads=threads) as (bx, by):
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.use_swizzle(panel_size=panel_size, enable=swizzle)
            if tx == 0:
                Times[by * gx + bx, 0] = T.call_extern("int64", "tr_globaltimer")
            T.clear(C_local)
            for k in T.Pipelined(nk, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
                if tx == 0:
                    Iters[by * gx + bx, k] = T.call_extern("int64", "tr_globaltimer")
            T.copy(C_local, C[by * block_M, bx * block_N])
            if tx == 0:
                Times[by * gx + bx, 1] = T.call_extern("int64", "tr_globaltimer")
                Times[by * gx + bx, 2] = T.call_extern("int64", "tr_smid")

    return main


@tilelang.jit
def timed_copy(M, N, block_M, block_N, threads, dtype="float16"):
    """The corpus tile copy (corpus.elementwise.tile_copy: B = A through one shared tile) that also
    records, per block, thread 0's GPU timer at its start, after the load (thread 0 stores its
    share of the tile into shared memory once its loads have arrived), after the store is issued,
    its SM and its SM cycles at start and end: Times[block, :] = (start, load done, end, smid,
    cycles at start, cycles at end), block = by * gridDim.x + bx (timeline set 17)."""
    gx, gy = (N + block_N - 1) // block_N, (M + block_M - 1) // block_M

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), Times: T.Tensor((gx * gy, 6), "int64")):
        with T.Kernel(gx, gy, threads=threads) as (bx, by):
            T.import_source(TIMER_SOURCE)
            tx = T.get_thread_binding()
            tile = T.alloc_shared((block_M, block_N), dtype)
            if tx == 0:
                Times[by * gx + bx, 0] = T.call_extern("int64", "tr_globaltimer")
                Times[by * gx + bx, 4] = T.call_extern("int64", "tr_clock")
            T.copy(A[by * block_M, bx * block_N], tile)
            if tx == 0:
                Times[by * gx + bx, 1] = T.call_extern("int64", "tr_globaltimer")
            T.copy(tile, B[by * block_M, bx * block_N])
            if tx == 0:
                Times[by * gx + bx, 2] = T.call_extern("int64", "tr_globaltimer")
                Times[by * gx + bx, 3] = T.call_extern("int64", "tr_smid")
                Times[by * gx + bx, 5] = T.call_extern("int64", "tr_clock")

    return main
