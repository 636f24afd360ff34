"""Small hand-written TileLang kernels for the unit tests (the corpus holds the big ones)."""
import tilelang
import tilelang.language as T


def _gemm(M, N, K, bm, bn, bk, dtype="float16", stages=2, threads=128, trans_b=False, no_set_max_nreg=False):
    b_shape = (N, K) if trans_b else (K, N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared((bm, bk), dtype)
            Bs = T.alloc_shared((bn, bk) if trans_b else (bk, bn), dtype)
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            if no_set_max_nreg:
                T.no_set_max_nreg()
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], As)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], Bs)
                else:
                    T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl, transpose_B=trans_b)
            T.copy(Cl, C[by * bm, bx * bn])
    return main


gemm = tilelang.jit(_gemm)
# the same GEMM compiled without warp specialisation (upstream's linear-attention examples do this)
gemm_no_ws = tilelang.jit(pass_configs={"tl.disable_warp_specialized": True})(_gemm)


@tilelang.jit
def batched_gemm(Bt, M, N, K, bm, bn, bk):
    @T.prim_func
    def main(A: T.Tensor((Bt, M, K), "float16"), B: T.Tensor((Bt, K, N), "float16"), C: T.Tensor((Bt, M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), Bt, threads=128) as (bx, by, bz):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[bz, by * bm, k * bk], As)
                T.copy(B[bz, k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[bz, by * bm, bx * bn])
    return main


@tilelang.jit
def add_guarded(N, block, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main


@tilelang.jit
def add2d(M, N, bm, bn, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + B[by * bm + i, bx * bn + j]
    return main


@tilelang.jit
def triangle(S, bm, bn):
    """Causal-style loop: block bx runs ceildiv((bx+1)*bm, bn) iterations, each copies a bn×64 tile."""
    @T.prim_func
    def main(K: T.Tensor((S, 64), "float16"), O: T.Tensor((S, 64), "float32")):
        with T.Kernel(T.ceildiv(S, bm), threads=128) as bx:
            Ks = T.alloc_shared((bn, 64), "float16")
            acc = T.alloc_fragment((bn, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv((bx + 1) * bm, bn), num_stages=1):
                T.copy(K[k * bn, 0], Ks)
                for i, j in T.Parallel(bn, 64):
                    acc[i, j] += Ks[i, j] * 2.0
            T.copy(acc[0:bm, 0:64], O[bx * bm, 0])
    return main


def _fma_exp(N, block):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = T.exp(X[bx * block + i]) * 3.0 + X[bx * block + i]
    return main


fma_exp = tilelang.jit(_fma_exp)
fma_exp_fast = tilelang.jit(pass_configs={"tl.enable_fast_math": True})(_fma_exp)


@tilelang.jit
def masked(N, NB, block):
    """Block-sparse style: whether a block works depends on a mask tensor read at run time."""
    @T.prim_func
    def main(Mask: T.Tensor((NB,), "int32"), X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(NB, threads=128) as bx:
            if Mask[bx] != 0:
                for i in T.Parallel(block):
                    Y[bx * block + i] = X[bx * block + i] * 2.0
    return main


def symbolic_copy():
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((m, 256), "float16"), B: T.Tensor((m, 256), "float16")):
        with T.Kernel(T.ceildiv(m, 64), threads=128) as bx:
            S = T.alloc_shared((64, 256), "float16")
            T.copy(A[bx * 64, 0], S)
            T.copy(S, B[bx * 64, 0])
    return main


def offset_copy():
    """Copy 64-row tiles of A, starting `off` rows down (a scalar kernel argument that shapes no
    buffer: a run-time value, like an offset read from a tensor), into B."""
    @T.prim_func
    def main(A: T.Tensor((4096, 256), "float16"), B: T.Tensor((2048, 256), "float16"), off: T.int32):
        with T.Kernel(32, threads=128) as bx:
            S = T.alloc_shared((64, 256), "float16")
            T.copy(A[bx * 64 + off, 0], S)
            T.copy(S, B[bx * 64, 0])
    return main


@tilelang.jit
def row_onehot_max(M, N, bm, threads=128):
    """Each row's maximum, then a one-hot of where it sits: a row reduction, a compare and a select
    per element (the pattern of upstream's top-k)."""
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            x = T.alloc_fragment((bm, N), "float32")
            mx = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(bm, N):
                x[i, j] = T.if_then_else(x[i, j] == mx[i], 1.0, 0.0)
            T.copy(x, Y[bx * bm, 0])
    return main


@tilelang.jit
def two_phases(rows_a=64, rows_b=128, cols=64, looped=False):
    """Two shared tiles used one after the other (A through A_s, then B through B_s), or both inside
    one sequential loop: what TileLang's merged shared allocation can share."""
    @T.prim_func
    def main(A: T.Tensor((rows_a, cols), "float16"), B: T.Tensor((rows_b, cols), "float16"),
             C: T.Tensor((rows_a, cols), "float16"), D: T.Tensor((rows_b, cols), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((rows_a, cols), "float16")
            B_s = T.alloc_shared((rows_b, cols), "float16")
            if looped:
                for _ in T.serial(2):
                    T.copy(A, A_s)
                    T.copy(A_s, C)
                    T.copy(B, B_s)
                    T.copy(B_s, D)
            else:
                T.copy(A, A_s)
                T.copy(A_s, C)
                T.copy(B, B_s)
                T.copy(B_s, D)
    return main


@tilelang.jit
def scaled_register_a(M, N, K, bm, bn, bk, threads=256, policy=T.GemmWarpPolicy.Square):
    """A GEMM whose A tile is scaled in registers (a fragment) before the gemm reads it: the
    register operand of fragment_replicas (upstream's dequantising GEMM in miniature)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            Al = T.alloc_fragment((bm, bk), "float16")
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                for i, j in T.Parallel(bm, bk):
                    Al[i, j] = As[i, j] * T.float16(2.0)
                T.gemm(Al, Bs, Cl, policy=policy)
            T.copy(Cl, C[by * bm, bx * bn])
    return main


@tilelang.jit
def shared_lanes(pattern: str):
    """One warp reads a 32 x 33 float32 shared tile by thread index (no T.Parallel): row-wise
    ("row": lane t reads S[i, t], 32 consecutive words), column-wise ("col": lane t reads S[t, i],
    a stride of 32 words -- every lane on one bank unless the tile is padded), column-wise in the
    padded tile ("padded": S[t, i] with rows of 33 words), every other word ("stride2": S[0, 2t]
    over the first 64 words of a 64-wide view), one word for all lanes ("broadcast": S[0, 0])."""
    cols = 33 if pattern == "padded" else 64 if pattern == "stride2" else 32

    @T.prim_func
    def main(A: T.Tensor((32, cols), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((32, cols), "float32")
            for i in T.serial(cols):
                S[tx, i] = A[tx, i]
            for i in T.serial(32):
                if pattern == "row":
                    B[i, tx] = S[i, tx]
                elif pattern == "stride2":
                    B[i, tx] = S[0, 2 * tx]
                elif pattern == "broadcast":
                    B[i, tx] = S[0, 0]
                else:
                    B[i, tx] = S[tx, i]
    return main


@tilelang.jit
def local_array(n=8, threads=128):
    """Every thread keeps n float32 in a T.alloc_local array."""
    @T.prim_func
    def main(A: T.Tensor((threads * n,), "float32"), B: T.Tensor((threads * n,), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            x = T.alloc_local((n,), "float32")
            for i in T.serial(n):
                x[i] = A[tx * n + i]
            for i in T.serial(n):
                B[tx * n + i] = x[i] * 2.0
    return main


@tilelang.jit
def scale_by_exp(N, block):
    """Y = X * exp(S[0]): exp(S[0]) reads no T.Parallel variable."""
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), S: T.Tensor((1,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = X[bx * block + i] * T.exp(S[0])
    return main


@tilelang.jit
def tile_cumsum(dim, M=256, N=64, bm=128, dtype="float32"):
    """Each block copies a bm x N tile to shared memory, scans it along `dim` (T.cumsum) and
    copies it back."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            S = T.alloc_shared((bm, N), dtype)
            T.copy(A[bx * bm, 0], S)
            T.cumsum(src=S, dim=dim)
            T.copy(S, B[bx * bm, 0])
    return main


def _tile_of(tile_id, m_blocks, group=8):
    """Upstream's persistent GEMM tile order: (row tile, column tile) of a tile id, groups of 8
    column tiles walked down the rows."""
    return (tile_id // group) % m_blocks, tile_id % group + (tile_id // group) // m_blocks * group


@tilelang.jit
def persistent_gemm(M, N, K, bm=128, bn=256, bk=64, sm_num=132, stages=3, virtual=False):
    """examples/gemm/example_gemm_persistent.py's serial wave loop: sm_num blocks, trip w of block b
    runs tile w * sm_num + b.  virtual=True: the same tiles as a plain (sm_num, waves) grid, tile
    by * sm_num + bx: the grid the persistent loop stands for."""
    m_blocks, n_blocks = T.ceildiv(M, bm), T.ceildiv(N, bn)
    waves = T.ceildiv(m_blocks * n_blocks, sm_num)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(sm_num, waves if virtual else 1, threads=256) as (b, v):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float")
            for w in T.serial(1 if virtual else waves):
                tile = sm_num * (v if virtual else w) + b
                tx, ty = _tile_of(tile, m_blocks)
                if tx * bm < M and ty * bn < N:
                    T.clear(C_l)
                    for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                        T.copy(A[tx * bm, k * bk], A_s)
                        T.copy(B[k * bk, ty * bn], B_s)
                        T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C[tx * bm, ty * bn])
    return main


@tilelang.jit
def persistent_copy(M=4096, N=4096, bm=64, bn=64, sm_num=132):
    """A persistent tile copy (the persistent GEMM's loop and tile order, no math): small blocks
    that would fit many to an SM, launched one an SM."""
    m_blocks, n_blocks = M // bm, N // bn
    waves = T.ceildiv(m_blocks * n_blocks, sm_num)

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(sm_num, threads=128) as b:
            S = T.alloc_shared((bm, bn), "float16")
            for w in T.serial(waves):
                tx, ty = _tile_of(sm_num * w + b, m_blocks)
                if tx * bm < M and ty * bn < N:
                    T.copy(A[tx * bm, ty * bn], S)
                    T.copy(S, B[tx * bm, ty * bn])
    return main


@tilelang.jit
def guarded_atomic(M, N, D=64, bm=64, bn=64):
    """A causal-style loop (k from by) whose element guard k * bn + i < N always holds (k < N / bn,
    i < bn): on two loop variables, with too many (block, k, i) to enumerate at M = N = 4096."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), dQ: T.Tensor((N, D), "float32")):
        with T.Kernel(M // bm, 256, threads=128) as (by, bh):
            a_s = T.alloc_shared((bn, D), "float16")
            acc = T.alloc_fragment((bn, D), "float32")
            for k in T.Pipelined(by, N // bn, num_stages=2):
                T.copy(A[k * bn, 0], a_s)
                T.copy(a_s, acc)
                for i, j in T.Parallel(bn, D):
                    if k * bn + i < N:
                        T.atomic_add(dQ[k * bn + i, j], acc[i, j])
    return main


@tilelang.jit
def loop_then_residual(M=8192, N=64, bm=64, residual="A"):
    """Each block streams its bm rows of A through a 16-row loop, then reads the same bm rows
    again whole (residual="A": a part of what it swept, as the Mamba chunk scan's residual x) or
    bm rows of another tensor R (residual="R"), and writes their sum."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), R: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(M // bm, threads=128) as bx:
            S = T.alloc_shared((16, N), "float16")
            acc = T.alloc_fragment((bm, N), "float32")
            S2 = T.alloc_shared((bm, N), "float16")
            T.clear(acc)
            for k in T.serial(bm // 16):
                T.copy(A[bx * bm + k * 16, 0], S)
                for i, j in T.Parallel(16, N):
                    acc[k * 16 + i, j] += S[i, j]
            if residual == "A":
                T.copy(A[bx * bm, 0], S2)
            else:
                T.copy(R[bx * bm, 0], S2)
            for i, j in T.Parallel(bm, N):
                acc[i, j] += S2[i, j]
            T.copy(acc, B[bx * bm, 0])
    return main


@tilelang.jit
def row_stencil(M=8192, N=64, bm=32):
    """B[r] = A[r] + A[r + 1] + A[r + 2]: each block copies its bm rows and the 2 halo rows below
    them (bm + 2 rows, overlapping the next block's tile by 2)."""
    @T.prim_func
    def main(A: T.Tensor((M + 2, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(M // bm, threads=128) as bx:
            S = T.alloc_shared((bm + 2, N), "float16")
            out = T.alloc_fragment((bm, N), "float16")
            T.copy(A[bx * bm, 0], S)
            for i, j in T.Parallel(bm, N):
                out[i, j] = S[i, j] + S[i + 1, j] + S[i + 2, j]
            T.copy(out, B[bx * bm, 0])
    return main
