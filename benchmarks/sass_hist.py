"""Opcode histograms of the loops in a `cuobjdump -sass` listing (a development aid, like
lower_cuda.py: tileroof never compiles; this reads what the compiler emitted for a corpus kernel, to
check the instruction counts the model estimates from TIR).

    python benchmarks/sass_hist.py LISTING.sass [--all]

A loop is a backward branch (BRA to a lower address); its body is the instructions from the target
to the branch.  Prints, for each loop (innermost first, nested loops' instructions included in the
outer), its instruction count and the opcode histogram (the opcode without its modifiers), and the
same histogram grouped by the issue pipe the opcode runs on (`PIPE` below: NVIDIA's Nsight pipe
names; opcodes not in the table are listed as "other")."""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter

# the pipe each SASS opcode issues to on sm_90 (Nsight Compute's sm__inst_executed_pipe_* names)
PIPE = {
    "LOP3": "alu", "SHF": "alu", "PRMT": "alu", "IADD3": "alu", "ISETP": "alu", "SEL": "alu",
    "LEA": "alu", "FSETP": "alu", "FSEL": "alu", "FMNMX": "alu", "IMNMX": "alu", "VIMNMX": "alu",
    "LOP": "alu", "SHL": "alu", "SHR": "alu", "FLO": "alu", "POPC": "alu", "BMSK": "alu", "PLOP3": "alu",
    "I2FP": "alu", "F2FP": "alu", "IABS": "alu", "P2R": "alu", "R2P": "alu", "VHMNMX": "alu",
    "IMAD": "fmaheavy", "IMUL": "fmaheavy", "IDP": "fmaheavy",
    "FFMA": "fma", "FADD": "fma", "FMUL": "fma", "FFMA2": "fma", "HFMA2": "fma", "HADD2": "fma", "HMUL2": "fma",
    "MOV": "alu|fma", "MUFU": "xu", "F2F": "xu", "I2F": "xu", "F2I": "xu",
    "HMMA": "tensor", "HGMMA": "tensor", "QGMMA": "tensor", "IGMMA": "tensor", "IMMA": "tensor",
    "LDS": "lsu", "STS": "lsu", "LDG": "lsu", "STG": "lsu", "LDSM": "lsu", "LD": "lsu", "ST": "lsu",
    "LDGSTS": "lsu", "ATOMS": "lsu", "ATOMG": "lsu", "RED": "lsu", "ATOM": "lsu", "LDL": "lsu", "STL": "lsu",
    "SHFL": "lsu", "LDC": "lsu", "STSM": "lsu",
    "UTMALDG": "uniform", "UTMASTG": "uniform", "SYNCS": "lsu",
    "BAR": "cbu", "BRA": "cbu", "WARPSYNC": "cbu", "EXIT": "cbu", "BSSY": "cbu", "BSYNC": "cbu",
    "NOP": "none", "DEPBAR": "cbu", "WARPGROUP": "cbu",
}

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?\s*([^;]*);")


def parse(text: str) -> list[tuple[int, str, str]]:
    """(address, opcode, operands) of each instruction of each function, in listing order."""
    out = []
    for m in LINE.finditer(text):
        out.append((int(m.group(1), 16), m.group(3), m.group(5)))
    return out


def loops(instrs: list[tuple[int, str, str]]) -> list[tuple[int, int]]:
    """(first, last) instruction indices of each backward-branch loop."""
    index = {addr: i for i, (addr, _, _) in enumerate(instrs)}
    found = []
    for i, (addr, op, args) in enumerate(instrs):
        if op != "BRA":
            continue
        m = re.search(r"0x([0-9a-f]+)", args)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target < addr and target in index:
            found.append((index[target], i))
    return sorted(found, key=lambda r: r[1] - r[0])


def histogram(instrs, first, last) -> Counter:
    return Counter(op for _, op, _ in instrs[first:last + 1])


def by_pipe(h: Counter) -> Counter:
    out = Counter()
    for op, n in h.items():
        out[PIPE.get(op, "other")] += n
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("listing")
    ap.add_argument("--all", action="store_true", help="also the whole function's histogram")
    args = ap.parse_args(argv)
    text = open(args.listing).read()
    instrs = parse(text)
    if not instrs:
        print("no instructions found", file=sys.stderr)
        return 1
    for first, last in loops(instrs):
        h = histogram(instrs, first, last)
        print(f"loop {instrs[first][0]:#06x}-{instrs[last][0]:#06x}: {last - first + 1} instructions")
        print("  pipes: " + ", ".join(f"{k} {v}" for k, v in by_pipe(h).most_common()))
        print("  ops:   " + ", ".join(f"{k} {v}" for k, v in h.most_common()))
    if args.all:
        h = histogram(instrs, 0, len(instrs) - 1)
        print(f"whole listing: {len(instrs)} instructions")
        print("  pipes: " + ", ".join(f"{k} {v}" for k, v in by_pipe(h).most_common()))
        print("  ops:   " + ", ".join(f"{k} {v}" for k, v in h.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
