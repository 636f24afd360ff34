"""Where a many-wave GEMM's iterations wait: reads timeline set 15 (tileroof.gpu.timeline --set
15: thread 0's GPU timer after every iteration's gemm; the raw timers in raw/<record>/iters-*.npz)
and prints per launch: the mean step from one iteration to the next after the first wave, the
mean of even and of odd iterations (a two-stage pipeline alternates when its tiles' latency
exceeds an iteration's compute: one buffer's reload waits, the other's has arrived), the spread of
the blocks' mean steps and of the iterations' means, and the share of steps in ranges of ns.

    python benchmarks/iter_steps.py [RECORD.json]   (default: the set 15 records)
"""
from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tileroof.gpu.derive import timeline_kind  # noqa: E402

EDGES = (0, 260, 340, 460, 600, 800, 10 ** 9)


def steps_of(record: Path, r: dict) -> np.ndarray:
    raw = record.parent / "raw" / record.stem / r["iters_file"]
    return np.diff(np.load(raw)["iters_ns"].astype(float), axis=1)


def main(argv=None) -> int:
    paths = [Path(p) for p in (argv or sorted(glob.glob(str(ROOT / "benchmarks/results/h200/timeline-*.json"))))]
    for path in paths:
        doc = json.loads(path.read_text())
        if timeline_kind(doc) != "iters":
            continue
        print(f"{path.name} ({doc['provenance']['date_utc']}, {doc['provenance']['gpu']})")
        for r in doc["results"]:
            if "iters_file" not in r:
                continue
            p = r["params"]
            later = steps_of(path, r)[r["resident_blocks"]:]
            h, _ = np.histogram(later, bins=EDGES)
            print(f"  {p['M']}x{p['N']}x{p['K']} {p['block_M']}x{p['block_N']}x{p['block_K']} s{p['num_stages']} "
                  f"t{p['threads']} sw{int(p['swizzle'])}: step {later.mean():4.0f} ns (even k {later[:, 1::2].mean():4.0f}, "
                  f"odd {later[:, 0::2].mean():4.0f}); block means std {later.mean(axis=1).std():3.0f}, iteration means "
                  f"std {later.mean(axis=0).std():3.0f}; share by ns " + " ".join(
                      f"{EDGES[i]}-{EDGES[i + 1] if EDGES[i + 1] < 10 ** 9 else ''}:{h[i] / h.sum():.2f}"
                      for i in range(len(h))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
