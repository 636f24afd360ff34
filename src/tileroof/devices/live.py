"""The GPU this process can see, read through PyTorch and matched to its catalog entry."""
from __future__ import annotations

from dataclasses import replace

from ..errors import TileroofError


def live_device():
    from . import load, match_name

    try:
        import torch
    except ImportError:
        raise TileroofError("device 'live' needs PyTorch with CUDA to read the GPU") from None
    if not torch.cuda.is_available():
        raise TileroofError("device 'live': no GPU is visible to PyTorch")
    props = torch.cuda.get_device_properties(0)
    key = match_name(props.name)
    if key is None:
        raise TileroofError(f"device 'live': {props.name} is not in the catalog; pass a device .toml instead")
    dev = load(key)
    live = {"sm_count": props.multi_processor_count}
    l2 = getattr(props, "L2_cache_size", 0)
    if l2:
        live["l2_bytes"] = float(l2)
    smem = getattr(props, "shared_memory_per_multiprocessor", 0)
    if smem:
        live["smem_per_sm"] = float(smem)
    sources = dict(dev.sources)
    for k in live:
        sources[k] = f"torch.cuda.get_device_properties on the live {props.name}"
    return replace(dev, name=props.name, sources=sources, origin=f"live:{props.name}", **live)
