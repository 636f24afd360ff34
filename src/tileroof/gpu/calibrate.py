"""Calibrate a device: measure the ceilings tileroof's model uses, each as the median of many
event-timed runs, the whole suite repeated --repeat times so the spread between repeats shows
whether a number reproduces (within 5 % is the bar).  The repeats are interleaved (repeat 0 of every
benchmark, then repeat 1 of every benchmark, ...) and a benchmark's value is the median of its
repeats.  Matmul benchmarks first run ~--matmul-warm-s seconds of back-to-back matmuls so they are
timed at the steady, power-limited SM clock (clocks are never touched).  About 45 s for --repeat 2
on an H200.

    python -m tileroof.gpu.calibrate --out DIR [--repeat 2] [--key h200] [--only a,b] [--skip a,b]

Writes DIR/calibrate-<UTC stamp>.json (raw results, after every benchmark) and
DIR/<key>-profile.toml (the device profile the catalog loader reads)."""
from __future__ import annotations

import argparse
import re
import sys
import time
import traceback
from pathlib import Path

from . import microbench as mb
from . import tomlw
from .provenance import base_provenance, query_smi, utc_now, utc_stamp
from .records import write_json_atomic
from .stats import median, spread_pct

SCHEMA = 1
REPRODUCE_PCT = 5.0

# profile key -> (function, kwargs).  Order: cheap and robust first.
BENCHES = {
    "dram_bandwidth_gbps": (mb.dram_copy, {}),
    "dram_read_bandwidth_gbps": (mb.dram_read, {}),
    "dram_read_triton_gbps": (mb.dram_read_triton, {}),
    "l2_bandwidth_gbps": (mb.l2_bandwidth, {}),
    "shared_mem_bandwidth_gbps": (mb.shared_mem_bandwidth, {}),
    "l2_atomic_throughput_gops": (mb.l2_atomic_throughput, {}),
    "atomic_throughput_distinct_gops": (mb.atomic_throughput_distinct, {}),
    # the same onto a 16 MiB table, which stays in L2 (flash-attention backward's dQ atomics)
    "atomic_throughput_l2_resident_gops": (mb.atomic_throughput_distinct, {"span_mib": 16}),
    "tensor_tflops_fp16": (mb.tensor_throughput, {"kind": "fp16"}),
    "tensor_tflops_bf16": (mb.tensor_throughput, {"kind": "bf16"}),
    "tensor_tflops_tf32": (mb.tensor_throughput, {"kind": "tf32"}),
    "tensor_tflops_fp8": (mb.tensor_throughput, {"kind": "fp8"}),
    "tensor_tops_int8": (mb.tensor_throughput, {"kind": "int8"}),
    "fp32_tflops": (mb.fp32_throughput, {}),
    "sfu_ops_per_clk_per_sm": (mb.sfu_throughput, {}),
    "launch_overhead_us": (mb.launch_overhead, {}),
    "sm_clock_mhz": (mb.sm_clock_under_matmul, {}),
    "tma_load_latency_us": (mb.tma_pipeline, {}),
    "block_overhead_us": (mb.block_overhead, {}),
    "gemm_tile_tflops_fp16": (mb.gemm_issue, {}),
    "reduce_latency_us": (mb.reduce_latency, {}),
}


def device_key(gpu_name: str | None) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA H100 80GB HBM3' -> 'h100'; else a slug of the name."""
    name = (gpu_name or "unknown").lower()
    m = re.search(r"\b([a-z]\d{2,4}[a-z]?)\b", name.replace("nvidia", ""))
    if m:
        return m.group(1)
    return re.sub(r"[^a-z0-9]+", "_", name).strip("_") or "unknown"


def summarize_bench(repeats: list[dict]) -> dict:
    """One benchmark over the repeats: value = median of the repeats' values."""
    ok = [r for r in repeats if r.get("value") is not None and not r.get("error")]
    vals = [float(r["value"]) for r in ok]
    out = {"repeats": vals, "raw": repeats}
    if vals:
        sp = spread_pct(vals)
        out.update(value=median(vals), unit=ok[0].get("unit"), method=ok[0].get("method"), spread_pct=sp,
                   reproduces_within_5pct=(sp is not None and sp <= REPRODUCE_PCT) if len(vals) > 1 else None)
    errs = [r["error"] for r in repeats if r.get("error")]
    if errs:
        out["errors"] = errs
    return out


# figures a benchmark's first repeat reports besides its value, kept in its profile entry
RESULT_EXTRAS = ("bytes_per_clk_per_sm", "fma_per_clk_per_sm", "results_per_s", "sm_clock_mhz",
                 "best_working_set_mib", "triton_back_to_back_us", "cupy_back_to_back_us", "graph_per_launch_us",
                 "queued_back_to_back_us", "behind_flush_us", "atomic_gbps", "chunk_spread_pct",
                 "single_load_gbps_per_sm")


def result_extras(name: str, r: dict) -> dict:
    """The RESULT_EXTRAS figures of benchmark `name`'s result `r` (from its first repeat), numbers
    only, as its profile entry keeps them (calibrate and benchmarks/merge_calibration.py alike)."""
    if name == "sm_clock_mhz":
        return {}
    raw0 = (r.get("raw") or [{}])[0]
    out = {}
    for extra in RESULT_EXTRAS:
        v = raw0.get(extra)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[extra] = v if isinstance(v, int) else round(float(v), 4)
    return out


def profile_doc(key: str, prov: dict, results: dict) -> dict:
    """The device-profile TOML document (see module doc of tileroof.devices for the reader)."""
    before, after = prov.get("smi_before") or {}, prov.get("smi_after") or {}
    p = {
        "gpu": prov.get("gpu") or prov.get("torch_device_name"), "driver": prov.get("driver"),
        "date": prov.get("date_utc"), "hostname": prov.get("hostname"),
        "sm_clock_mhz_before": before.get("sm_clock_mhz"), "mem_clock_mhz_before": before.get("mem_clock_mhz"),
        "sm_clock_mhz_after": after.get("sm_clock_mhz"), "mem_clock_mhz_after": after.get("mem_clock_mhz"),
        "max_sm_clock_mhz": before.get("max_sm_clock_mhz"), "max_mem_clock_mhz": before.get("max_mem_clock_mhz"),
        "temperature_c_before": before.get("temperature_c"), "temperature_c_after": after.get("temperature_c"),
        "power_w_before": before.get("power_w"), "power_w_after": after.get("power_w"),
        "sm_count": prov.get("sm_count"), "l2_cache_bytes": prov.get("l2_cache_bytes"),
        "cuda": prov.get("cuda"), "torch": prov.get("torch"), "triton": prov.get("triton"), "cupy": prov.get("cupy"),
        "tileroof_version": prov.get("tileroof_version"), "tileroof_commit": prov.get("tileroof_commit"),
        "command": prov.get("command"), "repeats": prov.get("repeat"),
    }
    measured, errors = {}, {}
    for name, r in results.items():
        if r.get("value") is None:
            errors[name] = "; ".join(r.get("errors") or ["no value"])[:500]
            continue
        t = {"value": round(float(r["value"]), 4), "unit": r.get("unit"), "method": r.get("method"),
             "repeats": [round(v, 4) for v in r["repeats"]],
             "spread_pct": None if r.get("spread_pct") is None else round(r["spread_pct"], 3)}
        t.update(result_extras(name, r))
        if r.get("reproduces_within_5pct") is not None:
            t["reproduces_within_5pct"] = r["reproduces_within_5pct"]
        measured[name] = t
    doc = {"schema": SCHEMA, "key": key, "provenance": {k: v for k, v in p.items() if v is not None},
           "measured": measured}
    if errors:
        doc["calibration_errors"] = errors
    return doc


def derived(key: str, doc: dict, results: dict, fname: str) -> dict:
    """Model constants derived from this run's microbenchmarks (tileroof.gpu.derive), against the
    catalog device for `key` overlaid with what this run measured."""
    from .. import devices
    from . import derive
    try:
        dev = devices.apply_profile(devices.load(key, calibrated=False), doc, fname)
    except Exception:  # noqa: BLE001  (a GPU the catalog does not know: no derived constants)
        return {}
    out = {}
    where = f"run {fname}"
    gemm = results.get("gemm_tile_tflops_fp16") or {}
    if gemm.get("raw"):
        out.update(derive.gemm_shape_entries(gemm, where))
    block = doc["measured"].get("block_overhead_us")
    if block and dev.l2_bw and dev.sm_count:
        out["block_fixed_us"] = derive.block_fixed_entry(block, dev.l2_bw, dev.sm_count)
    tma = results.get("tma_load_latency_us") or {}
    if tma.get("raw"):
        out["tma_stream_dram_ns"] = derive.stream_table_entry(tma, where)
    red = results.get("reduce_latency_us") or {}
    if red.get("raw"):
        out.update(derive.reduce_entries(red, dev, where))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tileroof.gpu.calibrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=2, help="times the whole suite runs")
    ap.add_argument("--runs", type=int, default=30, help="timed runs per benchmark and repeat")
    ap.add_argument("--matmul-warm-s", type=float, default=1.5,
                    help="seconds of back-to-back matmuls before each matmul benchmark is timed")
    ap.add_argument("--key", help="catalog key (default: from the GPU name, e.g. h200)")
    ap.add_argument("--only", help="comma-separated benchmark names")
    ap.add_argument("--skip", help="comma-separated benchmark names to leave out")
    ap.add_argument("--list", action="store_true", help="print the benchmark names and exit")
    a = ap.parse_args(argv)
    names = list(BENCHES)
    if a.list:
        print("\n".join(names))
        return 0
    if a.only:
        names = [n for n in a.only.split(",") if n in BENCHES]
    if a.skip:
        names = [n for n in names if n not in a.skip.split(",")]

    import torch
    if not torch.cuda.is_available():
        raise SystemExit("calibrate needs a CUDA GPU (torch.cuda.is_available() is False)")
    t0 = time.time()
    a.out.mkdir(parents=True, exist_ok=True)
    stamp = utc_stamp()
    path = a.out / f"calibrate-{stamp}.json"
    prov = base_provenance("calibrate", touch_gpu=True)
    prov["repeat"] = a.repeat
    key = a.key or device_key(prov.get("gpu") or prov.get("torch_device_name"))
    ctx = mb.Ctx(sm_count=prov.get("sm_count") or torch.cuda.get_device_properties(0).multi_processor_count,
                 l2_bytes=prov.get("l2_cache_bytes") or (50 << 20), runs=a.runs, mm_warm_s=a.matmul_warm_s)
    raw: dict = {n: [] for n in names}
    state = {"schema": SCHEMA, "key": key, "provenance": prov, "results": {}, "notes": ctx.notes}

    def save():
        state["results"] = {n: summarize_bench(raw[n]) for n in names}
        write_json_atomic(path, state)

    try:
        mb.warm_gpu()
    except Exception as e:  # noqa: BLE001
        ctx.notes.append(f"warm-up failed: {type(e).__name__}: {e}")
    for rep in range(a.repeat):           # interleaved: every benchmark once per repeat
        for n in names:
            fn, kw = BENCHES[n]
            t = time.time()
            try:
                r = fn(ctx, **kw)
            except Exception as e:  # noqa: BLE001
                r = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
            r["seconds"] = time.time() - t
            r["repeat"] = rep
            raw[n].append(r)
            v = r.get("value")
            print(f"[calibrate] repeat {rep} {n:<28} " + (f"{v:12.2f} {r.get('unit')}" if v is not None
                  else f"ERROR {r.get('error', '')[:200]}"), flush=True)
            torch.cuda.empty_cache()
            save()
    prov["smi_after"] = query_smi()
    prov["finished_utc"] = utc_now()
    prov["wall_s"] = time.time() - t0
    save()
    toml_path = a.out / f"{key}-profile.toml"
    doc = profile_doc(key, prov, state["results"])
    try:
        doc["measured"].update(derived(key, doc, state["results"], path.name))
    except Exception as e:  # noqa: BLE001  (derived constants are optional; the record keeps the raw numbers)
        doc.setdefault("calibration_errors", {})["derived"] = f"{type(e).__name__}: {e}"[:500]
    tomlw.dump(doc, toml_path)
    print(f"\n{'benchmark':<28} {'value':>12} {'unit':<15} {'spread%':>8}  repeats")
    for n in names:
        r = state["results"][n]
        if r.get("value") is None:
            print(f"{n:<28} {'ERROR':>12}  {'; '.join(r.get('errors') or [])[:90]}")
            continue
        sp = r.get("spread_pct")
        print(f"{n:<28} {r['value']:12.2f} {r['unit'] or '':<15} {sp if sp is not None else float('nan'):8.2f}  "
              + ", ".join(f"{v:.2f}" for v in r["repeats"]))
    print(f"[calibrate] wrote {path} and {toml_path} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
