"""Which tensor-core instruction the library GEMMs behind calibrate's sustained tensor rates use
(`tensor_tflops_*`, `tensor_tops_int8`: torch.matmul, torch._scaled_mm, torch._int_mm), read from
Nsight Compute's HMMA / GMMA instruction counts: a rate measured on an mma.sync kernel is mma.sync's
share of the wgmma rate, not the tensor cores' (counts.gemm_instruction, catalog mma_sync_share_*).

    python -m tileroof.gpu.cublas_instr [--n 4096] [--out DIR]

Runs ncu (clocks left alone) over a child that launches each of microbench._mm_case's GEMMs once
between cudaProfilerStart / Stop, and writes cublas_instr-<stamp>.json: per dtype, every kernel
the call launched with its name, duration and tensor-pipe instruction counts.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("fp16", "bf16", "tf32", "fp8", "int8")
METRICS = ("gpu__time_duration.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum",
           "sm__inst_executed_pipe_tensor_op_gmma.sum", "sm__inst_executed_pipe_tensor_op_imma.sum",
           "sm__inst_executed_pipe_tensor.sum",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active", "sm__cycles_elapsed.avg")
# always asked for; the rest only where `ncu --query-metrics` lists them (IMMA's names vary by chip)
REQUIRED = ("gpu__time_duration.sum", "sm__inst_executed_pipe_tensor.sum", "sm__cycles_elapsed.avg")


def child(n: int) -> None:
    """Launch each GEMM once inside its own NVTX range, profiled (ncu --profile-from-start off)."""
    import torch

    from .microbench import _mm_case
    torch.backends.cuda.matmul.allow_tf32 = True
    for kind in KINDS:
        fn, _ = _mm_case(kind, n)
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(kind)
        torch.cuda.profiler.start()
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        torch.cuda.nvtx.range_pop()


def kernel_rows(rows: list[dict], metrics) -> list[dict]:
    """One flat row per profiled launch (ncu.parse_ncu_csv's records, in launch order: KINDS'):
    its kernel name and the asked-for metrics (None where ncu gave no value)."""
    out = []
    for r in rows:
        row = {"kernel_name": r.get("kernel_name")}
        row.update({m: (r.get("metrics") or {}).get(m) for m in metrics})
        out.append(row)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--out", default="out")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args(argv)
    if a.child:
        child(a.n)
        return 0
    from . import ncu, provenance
    t0 = time.time()
    prov = provenance.base_provenance("cublas_instr")
    exe = shutil.which("ncu") or "ncu"
    metrics, dropped = ncu.filter_by_device(exe, METRICS, keep=REQUIRED)
    with tempfile.TemporaryDirectory() as tmp:
        rep = str(Path(tmp) / "r")
        cmd = ncu.profile_command(exe, metrics, rep, [sys.executable, "-m", "tileroof.gpu.cublas_instr",
                                                     "--child", "--n", str(a.n)])
        run = subprocess.run(cmd, capture_output=True, text=True)
        imp = subprocess.run(ncu.import_command(exe, rep + ".ncu-rep", nvtx_rename=False), capture_output=True, text=True)
    kernels = kernel_rows(ncu.parse_ncu_csv(imp.stdout), metrics)
    body = {"n": a.n, "kinds": list(KINDS), "metrics": metrics, "dropped_metrics": dropped, "kernels": kernels, "ncu_rc": run.returncode,
            "ncu_tail": (run.stdout + run.stderr)[-2000:]}
    path = provenance.write_record(Path(a.out), prov, t0, body,
                                   f"ncu --clock-control none over one launch each of microbench._mm_case(kind, {a.n}) "
                                   f"for {', '.join(KINDS)} (the GEMMs calibrate's tensor rates time), in that order")
    for k in kernels:
        print(json.dumps(k)[:400])
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
