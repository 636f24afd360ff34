"""tileroof: how fast a TileLang kernel can run, from its TIR alone.

    >>> import tileroof
    >>> r = tileroof.analyze(matmul, device="h200", M=4096, N=4096, K=4096, block_M=128, ...)
    >>> r.estimated_time, r.bound, r.tensor_flops, r.dram_bytes
"""
from __future__ import annotations

from .errors import TileroofError

__version__ = "0.1.0"
__all__ = ["analyze", "analyze_trace", "TileroofError", "__version__"]


def analyze_trace(trace, device=None, params=None):
    """Counts, memory and time for an already-walked KernelTrace."""
    from dataclasses import replace

    from . import counts, devices, model
    from .result import Result

    dev = devices.load(device) if not isinstance(device, devices.Device) else device
    c = counts.count(trace, dev.tensor_instruction)
    if trace.launches:      # several T.Kernel launches in one PrimFunc: timed one after another
        parts, d = [], dev
        for t in trace.launches:
            # one flush and one pair of events around the whole run: each launch evicts what the ones
            # before it left dirty, and the later launches queue behind the first (graph-like launch cost)
            parts.append(analyze_trace(t, d, params))
            d = replace(d, flush_dirty_bytes=max(d.flush_dirty_bytes - parts[-1].timing.flush_writeback, 0.0),
                        timing_floor_s=0.0)
        return Result(trace, c, dev, model.sequence([p.timing for p in parts]), dict(params or {}), parts)
    timing = model.estimate(trace, c, dev)
    return Result(trace, c, dev, timing, dict(params or {}))


def analyze(kernel, device=None, assume: dict | None = None, taken: dict | None = None, **params):
    """Analyse a @tilelang.jit kernel (with its parameters), a PrimFunc or an IRModule.

    device: a catalog key ("h200", the default), a path to a device/profile .toml, "live", or a
    tileroof Device.  assume: values for run-time quantities (buffer or variable name -> number).
    taken: for branches on run-time data (a block-sparse mask), the share of the time the branch
    holds (value name, as the result's `bounded` lists it -> 0..1); without it such a branch
    counts as always taken and the estimate is an upper bound."""
    from . import devices
    from .ir import trace as walk

    dev = devices.load(device) if not isinstance(device, devices.Device) else device
    tr = walk(kernel, params, assume, taken=taken)
    return analyze_trace(tr, dev, params)
