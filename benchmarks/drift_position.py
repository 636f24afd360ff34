"""Where each recorded launch's DRAM lies between the model's in-step and drifting estimates,
against how far its pipeline prefetches relative to a tile's DRAM round trip.

    python benchmarks/drift_position.py [--device h200] [--results DIR]

Per recorded case whose drifting estimate exceeds the in-step one by more than 10 %: x = the
prefetch window ((stages - 1) x model.prefetch_iteration) over the DRAM round trip of its tile
(model.stream_time, one stage), f = (Nsight DRAM - in-step) / (drifting - in-step), model.drifts'
verdict and its two conditions (the L2 share at least the compute; the drifting DRAM at the
bandwidth longer than the launch in step: `ratio` is the one over the other).  f near 0: the blocks kept pace; near 1: they drifted apart."""
from __future__ import annotations

import argparse
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="h200")
    ap.add_argument("--results", type=Path)
    a = ap.parse_args(argv)
    from tileroof import devices, model, score
    from tileroof.corpus import CASES
    dev = devices.load(a.device)
    results = a.results or (score.DEFAULT_RESULTS.parent / ("h100" if a.device.startswith("h100") else "h200"))
    cap: dict = {}
    verdict = model.drifts

    def spy(pipe_info, time_s, dram_if_drifting, d):
        out = verdict(pipe_info, time_s, dram_if_drifting, d)
        if pipe_info and pipe_info.get("stages", 1) >= 2 and pipe_info.get("tile_bytes") and d.dram_stream:
            terms = pipe_info.get("terms_s") or {}
            cap.update(x=(pipe_info["stages"] - 1) * model.prefetch_iteration(pipe_info)
                       / model.stream_time(d.dram_stream, pipe_info["tile_bytes"], 1),
                       drifts=out, share=terms.get("l2", 0.0) >= terms.get("compute", 0.0),
                       mem=dram_if_drifting / d.dram_bw > time_s, ratio=dram_if_drifting / d.dram_bw / time_s)
        return out

    model.drifts = spy
    rows = []
    try:
        for name, rec in score.load_records(results).items():
            if name not in CASES or not (rec.get("correct") or {}).get("ok") or not rec.get("ncu"):
                continue
            cap.clear()
            t = score.analyze_record(CASES[name], rec, dev).timing
            if "x" not in cap or not t.dram_if_drifting or t.dram_if_drifting < 1.1 * t.dram_in_step:
                continue
            ncu = rec["ncu"]
            meas = ncu.get("dram__bytes_read.sum", 0) + ncu.get("dram__bytes_write.sum", 0)
            rows.append((cap["x"], (meas - t.dram_in_step) / (t.dram_if_drifting - t.dram_in_step), name, dict(cap)))
    finally:
        model.drifts = verdict
    print(f"{'x':>5} {'f':>6} drifts share mem  ratio  case")
    for x, f, name, c in sorted(rows):
        print(f"{x:5.2f} {f:+6.2f} {int(c['drifts']):6d} {int(c['share']):5d} {int(c['mem']):3d} {c['ratio']:6.2f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
