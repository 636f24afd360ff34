import pytest
"""The drop-in Analyzer and the model's mechanisms on small cases."""
import numpy as np

import tileroof
from tileroof import devices, memory, model
from tileroof.compat import Analyzer

from . import kernels as K


def test_compat_fields_match_tileroof():
    func = K.gemm.get_tir(M=4096, N=4096, K=4096, bm=128, bn=128, bk=32)
    a = Analyzer.analysis(func, "h200")
    r = tileroof.analyze(func, device="h200")
    assert a.total_flops == r.total_flops == 2 * 4096 ** 3
    assert a.total_global_bytes == r.global_bytes > 0          # no int32 wrap
    assert a.estimated_time == r.estimated_time > 0
    assert abs(a.expected_tflops - r.total_flops / r.estimated_time / 1e12) < 1e-9
    assert a.expected_bandwidth_GBps > 0


def test_compat_accepts_carver_like_device():
    class FakeCarver:                      # what tilelang.carver.arch.CUDA exposes: .device.name
        class device:
            name = "NVIDIA A100-SXM4-80GB"
    func = K.add_guarded.get_tir(N=1 << 20, block=256)
    a = Analyzer.analysis(func, FakeCarver())
    assert a.result.device.key == "a100_80gb"


def test_swizzle_launch_order_is_a_permutation():
    from tileroof.trace import KernelTrace
    tr = KernelTrace("k", (12, 7, 1), (128, 1, 1), {}, (), swizzle_panel=4)
    order = memory.launch_order(tr)
    assert sorted(order.tolist()) == list(range(84))
    # rasterization2DRow: the first block ids walk down a panel of 4 rows in column 0
    assert order[:4].tolist() == [0, 12, 24, 36]


def test_warp_specialised_occupancy_on_hopper_only():
    h200 = devices.load("h200")
    a100 = devices.load("a100_80gb")
    tr = tileroof.analyze(K.gemm, M=4096, N=4096, K=4096, bm=128, bn=128, bk=32).trace
    occ_h = model.occupancy(tr, h200)
    occ_a = model.occupancy(tr, a100)
    assert occ_h.warp_specialized and occ_h.threads_per_block == 256 and occ_h.blocks_per_sm == 1
    assert not occ_a.warp_specialized and occ_a.threads_per_block == 128


def test_dram_between_unique_and_issued_and_l2_reuse():
    r = tileroof.analyze(K.gemm, M=8192, N=8192, K=8192, bm=128, bn=128, bk=32)
    mem = r.timing.memory
    c_bytes = 8192 * 8192 * 4                      # fp32 C
    assert mem.l2_write == c_bytes
    # reads: at least the inputs once, at most what the tiles issue
    assert r.unique_bytes - c_bytes <= mem.dram_read <= r.global_bytes - c_bytes
    # writes: C, less what is still dirty in one L2 partition at the end, in the kernel's
    # read/write mix
    dev = devices.load("h200")
    dirty = dev.l2_bytes / dev.l2_partitions * c_bytes / (mem.dram_read + c_bytes)
    assert mem.dram_write == pytest.approx(c_bytes - dirty, abs=2)
    small = tileroof.analyze(K.gemm, M=1024, N=1024, K=1024, bm=128, bn=128, bk=32)
    # inputs (4 MB) fit in L2: each byte comes from DRAM once; C (4 MB) is still in L2 at the end
    assert small.timing.memory.dram_read == 2 * 1024 * 1024 * 2
    assert small.timing.memory.dram_write == 0


def test_causal_imbalance_longer_than_balanced():
    r = tileroof.analyze(K.triangle, S=8192, bm=128, bn=64)
    per_block = r.trace.ops[1].per_block
    assert per_block.max() > per_block.min()
    assert r.timing.imbalance >= 1.0


def test_faster_device_is_faster():
    # a tile that keeps the tensor cores busy (two consumer warpgroups, three stages)
    kw = dict(M=4096, N=4096, K=4096, bm=128, bn=256, bk=64, stages=3, threads=256)
    t_h200 = tileroof.analyze(K.gemm, device="h200", **kw).estimated_time
    t_a100 = tileroof.analyze(K.gemm, device="a100_40gb", **kw).estimated_time
    assert t_a100 > t_h200
    t_copy_h200 = tileroof.analyze(K.add2d, device="h200", M=16384, N=16384, bm=64, bn=256).estimated_time
    t_copy_4090 = tileroof.analyze(K.add2d, device="rtx_4090", M=16384, N=16384, bm=64, bn=256).estimated_time
    assert t_copy_4090 > 3 * t_copy_h200
