"""Roofline plot (matplotlib): the kernel's point against the device's DRAM, L2 and compute roofs."""
from __future__ import annotations


def roofline(d: dict, path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    dev = d["device"]
    peaks = {f"tensor {k}": v * 1e12 for k, v in dev["tensor_TFLOPs"].items()}
    peaks.update({f"cuda {k}": v * 1e12 for k, v in dev["cuda_TFLOPs"].items()})
    flops = max(d["total_flops"], 1)
    dram = max(d["dram_bytes"], 1)
    t = d["estimated_time"]
    x = np.logspace(-2, 4, 200)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    bw = dev["dram_bw_GBps"] * 1e9
    main = [k for k in d["resource_time"] if k.startswith(("tensor", "cuda"))]
    for name in (main or ["tensor fp16"])[:2]:
        peak = peaks.get(name)
        if peak:
            ax.loglog(x, np.minimum(peak, bw * x), label=f"{name} / DRAM roof")
    intensity = flops / dram
    ax.loglog([intensity], [flops / t], "o", color="crimson", label=f"{d['kernel']} (model: {d['bound']}-bound)")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(f"{d['kernel']} on {dev['name']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
