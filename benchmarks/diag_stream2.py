"""Diagnose run 102-103's hang of l2probe --streams on the device: compile one block_stream2
config (timed), launch it once with a 30 s watchdog, print each step as it finishes.

    timeout 120 python benchmarks/diag_stream2.py
"""
import faulthandler
import sys
import time

faulthandler.dump_traceback_later(100, exit=True)
import torch  # noqa: E402

from tileroof.gpu.l2probe import configs_streams  # noqa: E402
from tileroof.gpu.tl_kernels import block_stream2  # noqa: E402

for idx in (2, 0):
    c = configs_streams(torch.cuda.get_device_properties(0).multi_processor_count)[idx]
    p = c["params"]
    t = time.time()
    k = block_stream2(**p)
    print("compiled", idx, p, f"{time.time() - t:.1f} s", flush=True)
    A = torch.randn((p["n_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda")
    B = torch.randn((p["b_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda")
    O = torch.empty((p["grid"] * p["rows"], p["cols"]), dtype=torch.float16, device="cuda")
    t = time.time()
    k(A, B, O)
    torch.cuda.synchronize()
    print("launched", idx, f"{(time.time() - t) * 1e3:.1f} ms", flush=True)
sys.exit(0)
