"""Drop-in for tilelang.tools.Analyzer: `Analyzer.analysis(fn, device)` with the seed's five
fields, computed by tileroof (64-bit counts, every grid axis, the device catalog)."""
from __future__ import annotations

from dataclasses import dataclass

from . import analyze
from .devices import Device, from_carver, load


@dataclass(frozen=True)
class AnalysisResult:
    total_flops: int
    total_global_bytes: int
    estimated_time: float          # seconds
    expected_tflops: float         # TFLOP/s achieved at the estimated time
    expected_bandwidth_GBps: float  # global bytes over the estimated time, GB/s
    result: object = None          # the full tileroof Result


def _device(device) -> Device:
    if device is None or isinstance(device, str):
        return load(device)
    if isinstance(device, Device):
        return device
    return from_carver(device)      # a tilelang.carver.arch device object


class Analyzer:
    """Same call shape as tilelang.tools.Analyzer."""

    @classmethod
    def analysis(cls, fn, device=None, **params) -> AnalysisResult:
        r = analyze(fn, device=_device(device), **params)
        t = r.estimated_time
        return AnalysisResult(
            total_flops=r.total_flops,
            total_global_bytes=r.global_bytes,
            estimated_time=t,
            expected_tflops=r.total_flops / t / 1e12 if t else 0.0,
            expected_bandwidth_GBps=r.global_bytes / t / 1e9 if t else 0.0,
            result=r,
        )
