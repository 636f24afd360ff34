"""One corpus case: a TileLang kernel, its parameters, how to make inputs, a torch reference,
and the counts derived by hand.  The tests, the GPU harness, the CI score and the demo all read
the same cases (tileroof.corpus.CASES)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Expected:
    """Counts derived by hand (each formula has a comment in the case's module).

    None means "not asserted".  Bytes are bytes actually issued by the kernel's ops to global
    memory (tile copies clipped at tensor edges, element loads/stores, atomics), summed over every
    block and loop iteration; `unique_bytes` is the sum over global buffers of the bytes touched
    at least once (the DRAM lower bound)."""

    tensor_flops: int | None = None      # 2*M*N*K summed over every T.gemm execution
    cuda_flops: int | None = None        # CUDA-core FLOPs (add, mul, max, ... = 1; fma = 2)
    sfu_ops: int | None = None           # special-function results (exp, exp2, log, rsqrt, tanh, ...)
    global_read_bytes: int | None = None
    global_write_bytes: int | None = None
    global_atomic_bytes: int | None = None
    unique_bytes: int | None = None


@dataclass(frozen=True)
class Case:
    name: str                                   # unique id, e.g. "gemm_nn_fp16_4096"
    kernel: Any                                 # the @tilelang.jit function
    params: dict                                # keyword arguments for kernel.get_tir / kernel(...)
    make_inputs: Callable[..., list]            # (params, torch_device) -> every kernel argument, in order
    reference: Callable[[list], dict]           # (args) -> {arg index: expected output tensor}
    expected: Expected = field(default_factory=Expected)
    rtol: float = 1e-2                          # ||out - ref|| / ||ref|| accepted
    sweep: str | None = None                    # sweep this config belongs to, if any
    tags: tuple = ()                            # e.g. ("gemm", "fp16")
    note: str = ""
    # what a user would tell tileroof about its run-time data (analyze(..., taken=)): the share of
    # the time a branch on a mask holds, worked out from the same inputs make_inputs builds
    taken: dict = field(default_factory=dict)
