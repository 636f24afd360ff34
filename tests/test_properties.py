"""Property tests over shapes and tiles: counts follow the closed forms for any size, edges included."""
from hypothesis import given, settings
from hypothesis import strategies as st

import tileroof

from . import kernels as K

tiles = st.sampled_from([32, 64, 128])


def cdiv(a, b):
    return -(-a // b)


@settings(max_examples=25, deadline=None)
@given(M=st.integers(1, 3000), N=st.integers(1, 3000), K_=st.integers(1, 3000), bm=tiles, bn=tiles,
       bk=st.sampled_from([16, 32, 64]))
def test_gemm_counts_any_shape(M, N, K_, bm, bn, bk):
    r = tileroof.analyze(K.gemm, M=M, N=N, K=K_, bm=bm, bn=bn, bk=bk)
    gx, gy, kt = cdiv(N, bn), cdiv(M, bm), cdiv(K_, bk)
    assert r.trace.grid == (gx, gy, 1)
    # tensor cores run whole tiles
    assert r.tensor_flops == gx * gy * kt * 2 * bm * bn * bk
    # in-bounds reads: every block column reads all of A, every block row all of B (fp16)
    assert r.counts.level_bytes("global", "read") == (gx * M * K_ + gy * K_ * N) * 2
    assert r.counts.level_bytes("global", "write") == M * N * 4
    assert r.unique_bytes == (M * K_ + K_ * N) * 2 + M * N * 4
    assert 0 < r.dram_bytes <= r.global_bytes


@settings(max_examples=30, deadline=None)
@given(N=st.integers(1, 10 ** 7), block=st.sampled_from([128, 256, 1024]))
def test_guarded_elementwise_any_size(N, block):
    r = tileroof.analyze(K.add_guarded, N=N, block=block)
    assert r.cuda_flops == N
    assert r.counts.level_bytes("global", "read") == 8 * N
    assert r.counts.level_bytes("global", "write") == 4 * N
    assert r.unique_bytes == 12 * N


@settings(max_examples=15, deadline=None)
@given(S=st.sampled_from([256, 512, 1024, 2048]), bm=st.sampled_from([64, 128]), bn=st.sampled_from([32, 64]))
def test_triangular_loop_sum(S, bm, bn):
    r = tileroof.analyze(K.triangle, S=S, bm=bm, bn=bn)
    blocks = cdiv(S, bm)
    iters = sum(cdiv((b + 1) * bm, bn) for b in range(blocks))
    copy = next(op for op in r.trace.ops if op.kind == "copy" and op.operands[0].buffer == "K")
    assert copy.executions == iters
