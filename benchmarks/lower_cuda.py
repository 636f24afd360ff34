"""Lower corpus kernels to CUDA on a machine without a GPU and, where the CUDA toolkit's ptxas is
installed, compile them for sm_90a: what the compiler really allocates (registers per thread,
spills, stack, shared memory layout), to check tileroof's estimates of them without a device.

    python benchmarks/lower_cuda.py CASE [CASE ...] [--out DIR] [--ptxas]

Writes DIR/CASE.cu (TileLang's generated source: the shared buffers' offsets in the dynamic
allocation, the loop structure, which copies became cp.async or TMA) and, with --ptxas, prints
ptxas's resource line and tileroof's estimate side by side.  Seen on the blocksparse attention:
ptxas's 143 registers equal Nsight Compute's launch__registers_per_thread on the H200.
This is a development aid: tileroof itself never compiles anything."""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path


def lower(case_name: str, out: Path) -> Path:
    import tilelang
    from tilelang import tvm

    from tileroof.corpus import CASES

    case = CASES[case_name]
    func = case.kernel.get_tir(**case.params)
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    # the kernel's @tilelang.jit pass_configs (no TMA lowering, no warp specialisation, ...)
    impl = getattr(case.kernel, "jit_impl", case.kernel)
    configs = dict(getattr(impl, "pass_configs", None) or {})
    with tvm.transform.PassContext(opt_level=3, config=configs), target:
        artifact = tilelang.lower(func, target=target)
    path = out / f"{case_name}.cu"
    path.write_text(artifact.kernel_source)
    return path


def ptxas(source: Path, cubin: Path | None = None) -> str:
    """ptxas's resource usage line for the source compiled for sm_90a (nvcc -Xptxas -v); the cubin
    is kept at `cubin` when given (for `cuobjdump -sass` where the toolkit has it).  No
    --use_fast_math: TileLang 0.1.15 passes it only when the pass config tl.enable_fast_math is set
    (default off), so IEEE division and the non-ftz ex2 sequence are what runs."""
    import tilelang

    root = Path(tilelang.__file__).parent
    cmd = ["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-std=c++17", f"-I{root / 'src'}",
           f"-I{root / '3rdparty' / 'cutlass' / 'include'}", "-w", "-Xptxas", "-v",
           "-o", str(cubin) if cubin else "/dev/null", str(source)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in (p.stdout + p.stderr).splitlines() if "Used" in ln or "spill" in ln]
    return " | ".join(ln.split(":", 1)[-1].strip() for ln in lines) if lines else p.stderr.strip()[-300:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--out", default="lowered")
    ap.add_argument("--ptxas", action="store_true", help="compile with nvcc/ptxas and print resource usage")
    ap.add_argument("--cubin", action="store_true", help="with --ptxas, keep DIR/CASE.cubin (for cuobjdump -sass)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.ptxas and not shutil.which("nvcc"):
        print("nvcc not found: only lowering", file=sys.stderr)
        args.ptxas = False
    import tileroof
    from tileroof.corpus import CASES

    for name in args.cases:
        src = lower(name, out)
        c = CASES[name]
        occ = tileroof.analyze(c.kernel, **c.params).timing.occupancy
        offsets = re.findall(r"buf_dyn_shmem \+ (\d+)", src.read_text())
        line = (f"{name}: {src}  shared offsets {sorted(set(int(x) for x in offsets))}; tileroof: "
                f"{occ.regs_per_thread} registers, {occ.smem_per_block} B shared, {occ.blocks_per_sm} blocks/SM "
                f"({occ.limiter})")
        if args.ptxas:
            line += f"\n  ptxas: {ptxas(src, out / f'{name}.cubin' if args.cubin else None)}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
