"""GPU measurement and calibration harness (the only part of tileroof that needs a GPU).

- ``python -m tileroof.gpu.calibrate --out DIR``: microbenchmarks -> ``DIR/calibrate-<date>.json``
  and a device profile ``DIR/<key>-profile.toml``.
- ``python -m tileroof.gpu.measure --out DIR --all [--ncu]``: compile, check and time every corpus
  case (and read Nsight Compute counters) -> ``DIR/measure-<date>.json``.

Nothing here imports torch, triton, cupy or tilelang at import time; the pure helpers (stats,
TOML writer, Nsight Compute CSV parser, nvidia-smi parser) run and are tested on any machine.
"""
