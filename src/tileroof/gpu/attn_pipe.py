"""Is a pipelined iteration's fixed cost paid once per gemm or once per iteration?  TileLang's
attn_pipe kernel (tileroof.gpu.tl_kernels): an attention-shaped loop without the softmax, S = Q K^T
then O += P V with P the fp16 cast of S, one block per SM, K and V tiles read by every block in
the same order from small L2-resident buffers (merged by the L2 Request Coalescer, so the slices
are not the limit); iters = 400 and 1600, time per iteration = the difference over 1200.  Per tile
shape (block_M, threads, head dim 64, 96 or 128), time per iteration against block_N (32..96) is a line:
its intercept is the fixed cost of an iteration with two gemms, to set against gemm_pipe's one-gemm
intercept (gemm_iteration_cycles).

    python -m tileroof.gpu.attn_pipe --out DIR
"""
from __future__ import annotations

from .gemm_pipe import ITERS, run

# (block_M, threads, head dim): one consumer warpgroup with 64 query rows, two with 128 (64 rows
# each); the head dim 64 configs expose the two-warpgroup fixed cost at more block_N (less math)
SHAPES = ((64, 128, 128), (128, 256, 128), (64, 128, 64), (128, 256, 64), (64, 128, 96), (128, 256, 96))
BLOCK_NS = (32, 48, 64, 96)
STAGES = 3


def configs(sm_count: int) -> list[dict]:
    return [{"shape": [bm, threads, dim], "block_N": bn, "iters": iters,
             "params": dict(block_M=bm, block_N=bn, dim=dim, num_stages=STAGES, threads=threads, iters=iters,
                            grid=sm_count)}
            for bm, threads, dim in SHAPES for bn in BLOCK_NS for iters in ITERS]


def flops(shape, block_n) -> float:
    """Two gemms of block_M x block_N x head dim each."""
    return 2 * 2 * shape[0] * block_n * shape[2]


def _make_args(torch, p):
    d = p["dim"]
    return (torch.randn((p["block_M"], d), dtype=torch.float16, device="cuda") / 8,
            torch.randn((16 * p["block_N"], d), dtype=torch.float16, device="cuda") / 8,
            torch.randn((16 * p["block_N"], d), dtype=torch.float16, device="cuda") / 8,
            torch.empty((p["grid"] * p["block_M"], d), dtype=torch.float32, device="cuda"),
            torch.zeros((p["grid"], 4), dtype=torch.int64, device="cuda"))


def main(argv=None) -> int:
    return run(argv, "attn_pipe", __doc__, "attn_pipe", configs, _make_args, SHAPES, BLOCK_NS, "block_N", flops)


if __name__ == "__main__":
    raise SystemExit(main())
