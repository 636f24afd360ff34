"""Write into a device profile which tensor instruction each library GEMM behind calibrate's tensor
rates ran, read from a tileroof.gpu.cublas_instr record (Nsight Compute's GMMA / HMMA / IMMA
instruction counts of each launch): `instruction = "wgmma"` or `"mma.sync"` and its source, in the
profile's [measured.tensor_*] table.  A rate measured on mma.sync is mma.sync's; the catalog's
measured share turns it into the tensor cores' rate (devices._apply).

    python benchmarks/mark_instructions.py RECORD.json [--device h200]
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from tileroof import devices

KEYS = {"fp16": "tensor_tflops_fp16", "bf16": "tensor_tflops_bf16", "tf32": "tensor_tflops_tf32",
        "fp8": "tensor_tflops_fp8", "int8": "tensor_tops_int8"}


def instruction(row: dict) -> str | None:
    """"wgmma" where the launch issued GMMA instructions, "mma.sync" where it issued HMMA or IMMA and
    no GMMA, None where the counters say neither."""
    g = row.get("sm__inst_executed_pipe_tensor_op_gmma.sum") or 0
    mma = (row.get("sm__inst_executed_pipe_tensor_op_hmma.sum") or 0) + (row.get("sm__inst_executed_pipe_tensor_op_imma.sum") or 0)
    return "wgmma" if g else "mma.sync" if mma else None


def mark(text: str, key: str, instr: str, source: str) -> str:
    """The profile's TOML text with `instruction` / `instruction_source` set in table [measured.key]."""
    head = f"[measured.{key}]\n"
    i = text.index(head) + len(head)
    j = text.find("\n[", i)
    j = len(text) if j < 0 else j + 1
    body = re.sub(r'(?m)^instruction(_source)? = .*\n', "", text[i:j])
    return text[:i] + f'instruction = "{instr}"\ninstruction_source = {json.dumps(source)}\n' + body + text[j:]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("record")
    ap.add_argument("--device", default="h200")
    a = ap.parse_args()
    rec = json.load(open(a.record))
    prof = devices.profiles_dir() / f"{a.device}.toml"
    text = prof.read_text()
    prov = rec["provenance"]
    for kind, row in zip(rec["kinds"], rec["kernels"]):
        instr = instruction(row)
        if instr is None or KEYS.get(kind) is None or f"[measured.{KEYS[kind]}]" not in text:
            print(f"{kind}: {row.get('kernel_name')}: no tensor instruction counted or no profile entry; left")
            continue
        counts = {m.split("__")[1].split(".")[0]: row.get(m) for m in row if "inst_executed_pipe_tensor_op" in m and row.get(m)}
        src = (f"tileroof.gpu.cublas_instr on {prov.get('gpu')} ({prov.get('date_utc', '')[:10]}, "
               f"{Path(a.record).name}): the library kernel {row.get('kernel_name')} issued {counts}")
        text = mark(text, KEYS[kind], instr, src)
        print(f"{kind}: {row.get('kernel_name')}: {instr}")
    prof.write_text(text)
    print(f"wrote {prof}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
