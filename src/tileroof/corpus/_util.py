"""Small helpers shared by the corpus modules.

Everything that touches torch imports it lazily, inside the function, so that
``import tileroof.corpus`` works without torch installed.
"""
from __future__ import annotations

# bytes per element of the dtype strings used in the corpus
DTYPE_BYTES = {
    "float64": 8,
    "float32": 4,
    "float": 4,
    "int32": 4,
    "uint32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int8": 1,
    "uint8": 1,
}


def nbytes(dtype: str) -> int:
    return DTYPE_BYTES[dtype]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def torch_dtype(dtype: str):
    import torch

    return {
        "float64": torch.float64,
        "float32": torch.float32,
        "float": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "float8_e4m3fn": torch.float8_e4m3fn,
        "float8_e5m2": torch.float8_e5m2,
        "int32": torch.int32,
        "int8": torch.int8,
        "uint8": torch.uint8,
    }[dtype]


def generator(device, seed: int = 0):
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def randn(shape, dtype: str, device, gen, scale: float = 1.0, offset: float = 0.0):
    """Standard-normal tensor of `dtype` on `device` (fp8 goes through float32)."""
    import torch

    td = torch_dtype(dtype)
    if td in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        t = torch.randn(*shape, dtype=td, device=device, generator=gen)
        if scale != 1.0:
            t.mul_(scale)
        if offset != 0.0:
            t.add_(offset)
        return t
    t = torch.randn(*shape, dtype=torch.float32, device=device, generator=gen)
    if scale != 1.0:
        t.mul_(scale)
    if offset != 0.0:
        t.add_(offset)
    return t.to(td)


def nan_out(shape, dtype: str, device):
    """An output buffer filled with NaN (floats) or a sentinel (ints) so that elements the
    kernel never writes are caught by the reference check."""
    import torch

    td = torch_dtype(dtype)
    if td.is_floating_point:
        if td in (torch.float8_e4m3fn, torch.float8_e5m2):
            return torch.full(shape, float("nan"), dtype=torch.float32, device=device).to(td)
        return torch.full(shape, float("nan"), dtype=td, device=device)
    return torch.full(shape, -12345, dtype=td, device=device)


def zeros(shape, dtype: str, device):
    import torch

    return torch.zeros(shape, dtype=torch_dtype(dtype), device=device)
