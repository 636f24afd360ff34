"""Triton kernels for calibration.  Imported only on the GPU machine (by microbench); on a machine
without triton the names are None."""
from __future__ import annotations

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - CPU-only machines
    triton = None
    tl = None

if triton is not None:

    @triton.jit
    def read_chunks(x_ptr, out_ptr, n_chunks, ITERS: tl.constexpr, BLOCK: tl.constexpr):
        """Program p reads chunks p, p+P, p+2P, ... (mod n_chunks) of BLOCK fp32 each, ITERS times,
        bypassing L1 (.cg), and stores one sum (so nothing is dead code).  With a working set
        inside L2 this measures L2 -> SM bandwidth; with one far larger, DRAM read bandwidth."""
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(ITERS):
            chunk = ((pid + i * nprog) % n_chunks).to(tl.int64)
            acc += tl.load(x_ptr + chunk * BLOCK + offs, cache_modifier=".cg")
        tl.store(out_ptr + pid, tl.sum(acc, axis=0))

    @triton.jit
    def noop(x_ptr):
        """An empty kernel (one argument so Triton has something to specialise on)."""
        pass

else:  # pragma: no cover
    read_chunks = None
    noop = None
