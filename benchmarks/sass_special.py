"""The SASS the CUDA math library's float functions compile to on sm_90a, with and without
--use_fast_math: where counts._SFU_ACCURATE / _SFU_FAST come from.

    python benchmarks/sass_special.py [--cuobjdump PATH] [--fast]

TileLang's generated source calls exp2f, expf, logf, rsqrtf, tanhf, ... (benchmarks/lower_cuda.py
shows it) and builds with nvcc -O3, adding --use_fast_math only under tl.enable_fast_math.  This
compiles one tiny kernel per function (`b[i] = f(a[i])`) and prints its instructions without the
load, store, index and exit ones, each tagged with the pipe counts.py files it under.  Read each
function's common path off it by hand (a denormal / huge-argument branch that jumps over a block,
or a CALL to a slow path, is not taken for ordinary inputs; predicated instructions issue
whatever their predicate).  Needs nvcc (the CUDA toolkit) and cuobjdump, which the PyPI wheel
nvidia-cuda-cuobjdump carries (bin/cuobjdump) where the toolkit lacks it.  Development aid only.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FUNCTIONS = ["exp2f", "expf", "exp10f", "logf", "log2f", "log10f", "rsqrtf", "sqrtf", "tanhf", "erff",
             "sinf", "cosf"]
# SASS opcode -> the pipe counts.py counts it on
PIPES = {"FFMA": "fma", "FMUL": "fma", "FADD": "fma", "IMAD": "fma", "HFMA2": "fma",
         "FSETP": "alu", "FSEL": "alu", "ISETP": "alu", "LOP3": "alu", "SHF": "alu", "IADD3": "alu",
         "SEL": "alu", "I2FP": "alu", "FMNMX": "alu", "PLOP3": "alu", "VIADD": "alu", "LEA": "alu",
         "MUFU": "xu", "F2I": "xu", "I2F": "xu", "FCHK": "other",
         "BSSY": "other", "BSYNC": "other", "BRA": "other", "CALL": "other", "RET": "other"}
SKIP = re.compile(r"^(NOP|S2R|S2UR|LDC|ULDC|LDG|STG|EXIT|MOV|IMAD\.WIDE|UMOV)\b")


def source() -> str:
    lines = [f'extern "C" __global__ void k_{f}(const float* a, float* b) '
             f'{{ int i = threadIdx.x; b[i] = {f}(a[i]); }}' for f in FUNCTIONS]
    return "\n".join(lines) + "\n"


def sass(cuobjdump: str, fast: bool) -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as d:
        cu, cubin = Path(d) / "f.cu", Path(d) / "f.cubin"
        cu.write_text(source())
        cmd = ["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(cubin), str(cu)]
        if fast:
            cmd.insert(1, "--use_fast_math")
        subprocess.run(cmd, check=True)
        text = subprocess.run([cuobjdump, "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        m = re.search(r"Function : k_(\w+)", line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(.*?);", line)
        if name and m:
            ins = m.group(1).strip()
            op = ins.split()[1] if ins.startswith("@") else ins.split()[0]
            if not SKIP.match(op):
                out[name].append(ins)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    ap.add_argument("--fast", action="store_true", help="compile with --use_fast_math")
    args = ap.parse_args(argv)
    for name, lines in sass(args.cuobjdump, args.fast).items():
        tally: dict[str, int] = {}
        print(f"== {name}{' (fast math)' if args.fast else ''}")
        for ins in lines:
            op = (ins.split()[1] if ins.startswith("@") else ins.split()[0]).split(".")[0]
            pipe = PIPES.get(op, "?")
            tally[pipe] = tally.get(pipe, 0) + 1
            print(f"   {pipe:6s} {ins}")
        print(f"   all listed: {dict(sorted(tally.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
