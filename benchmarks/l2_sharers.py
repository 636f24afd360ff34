"""The L2's hit share of re-reads against the working set and the readers of a tile per wave,
from an l2probe record (tileroof.gpu.l2probe, --rows or the default strides).

    python benchmarks/l2_sharers.py benchmarks/results/h200/l2probe-20261202T165938Z.json

Per launch: W (the working set), the blocks of a wave that read one tile (`sharers`) and how far
apart they launch (`gap`: 1 for the stride modes' and --pairs' neighbours, G for --rows), whether
they read a tile at the same iteration (`in_step`: --rows and --pairs), whether the launch stores
its output (`store`: --nostore's launches without), whether it reads a second operand (`B`:
--streams; B's bytes, read once, are taken off the DRAM reads), the passes over W
that came from DRAM (Nsight Compute's DRAM read bytes / W) and the hit share of the re-reads that
could hit -- every read of a tile after its first wave's, the sharers inside one wave taken to hit
each other: hit = 1 - (passes - 1) / (reads per tile over the waves - 1).  One block per SM (the
kernel is warp-specialised), so a wave is sm_count blocks.
"""
from __future__ import annotations

import json
import sys


def table(record: dict) -> list[dict]:
    sms = record["provenance"]["sm_count"]
    out = []
    for r in record["results"]:
        p, w = r["params"], r["working_set_bytes"]
        # (--streams: B's sequences, each shared inside one wave, are taken to come from DRAM once)
        dram = r["ncu"]["dram__bytes_read.sum"] - (r.get("b_bytes", 0) if r.get("b_stream") else 0)
        if r.get("groups"):
            g = r["groups"]
            waves_read = p["grid"] / max(g, sms)            # reads of a sequence that are not in-wave
            sharers, gap = sms / g, (1 if r.get("pair", 1) > 1 else g)
        else:
            sharers, gap = p["iters"] / p["stride"], 1
            waves_read = r["issued_read_bytes"] / (sharers * w)
        passes = dram / w
        hit = 1 - (passes - 1) / (waves_read - 1) if waves_read > 1 else float("nan")
        out.append({"W_MiB": w / 2**20, "groups": r.get("groups", 0), "sharers": sharers, "gap": gap,
                    "in_step": bool(r.get("groups")), "store": r.get("store", True), "b_stream": bool(r.get("b_stream")),
                    "dram_passes": passes, "reads": waves_read, "hit": hit})
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rows = table(json.load(open(argv[0])))
    print(f"{'W MiB':>6} {'sharers':>7} {'gap':>4} {'in step':>7} {'store':>5} {'B':>5} {'reads':>6} {'DRAM passes':>11} {'hit':>6}")
    for r in sorted(rows, key=lambda r: (not r["in_step"], r["sharers"], -r["gap"], not r["store"], r["b_stream"],
                                         r["W_MiB"])):
        print(f"{r['W_MiB']:6.1f} {r['sharers']:7.2f} {r['gap']:4d} {str(r['in_step']):>7} {str(r['store']):>5} "
              f"{str(r['b_stream']):>5} "
              f"{r['reads']:6.1f} {r['dram_passes']:11.2f} {r['hit']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
