"""The TOML writer round-trips through tomllib; the device profile has the agreed shape."""
import math
import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

from tileroof.gpu import tomlw
from tileroof.gpu.calibrate import device_key, profile_doc, summarize_bench


def test_round_trip_types_and_escapes():
    doc = {"schema": 1, "key": "h200", "flag": True, "ratio": 0.5, "big": 1e20, "whole": 5.0,
           "text": 'quote " backslash \\ newline \n tab \t bell \x07 é',
           "list": [1.5, 2.0], "ints": [1, 2, 3], "none": None,
           "provenance": {"gpu": "NVIDIA H200", "weird key": "x"},
           "measured": {"dram_bandwidth_gbps": {"value": 4310.2, "unit": "GB/s", "repeats": [4310.2, 4305.9]},
                        "l2_bandwidth_gbps": {"value": 1.0}}}
    back = tomllib.loads(tomlw.dumps(doc))
    expect = {k: v for k, v in doc.items() if v is not None}
    assert back == expect
    assert isinstance(back["whole"], float)


def test_special_floats_and_empty_table():
    text = tomlw.dumps({"a": {"n": float("nan"), "p": float("inf"), "m": float("-inf")}, "empty": {}})
    back = tomllib.loads(text)
    assert math.isnan(back["a"]["n"]) and back["a"]["p"] == math.inf and back["a"]["m"] == -math.inf
    assert back["empty"] == {}


def test_rejects_unknown_types():
    with pytest.raises(TypeError):
        tomlw.dumps({"x": object()})


def test_device_key():
    assert device_key("NVIDIA H200") == "h200"
    assert device_key("NVIDIA H100 80GB HBM3") == "h100"
    assert device_key("NVIDIA A100-SXM4-80GB") == "a100"
    assert device_key("NVIDIA GeForce RTX 4090") == "nvidia_geforce_rtx_4090"
    assert device_key(None) == "unknown"


def test_profile_doc_shape_round_trips():
    prov = {"gpu": "NVIDIA H200", "driver": "580.159.04", "date_utc": "2026-11-18T10:00:00Z",
            "smi_before": {"sm_clock_mhz": 345, "mem_clock_mhz": 3201, "max_sm_clock_mhz": 1980},
            "smi_after": {"sm_clock_mhz": 1980, "mem_clock_mhz": 3201},
            "command": "python3 -m tileroof.gpu.calibrate --out /o", "tileroof_commit": "abc", "repeat": 2}
    results = {
        "dram_bandwidth_gbps": summarize_bench([{"value": 4310.2, "unit": "GB/s", "method": "copy"},
                                                {"value": 4305.9, "unit": "GB/s", "method": "copy"}]),
        "sfu_ops_per_clk_per_sm": summarize_bench([{"value": 15.9, "unit": "results/clk/SM", "method": "ex2",
                                                    "sm_clock_mhz": 1980}]),
        "tensor_tflops_fp8": summarize_bench([{"error": "RuntimeError: nope"}]),
    }
    doc = profile_doc("h200", prov, results)
    back = tomllib.loads(tomlw.dumps(doc))
    assert back["schema"] == 1 and back["key"] == "h200"
    assert back["provenance"]["gpu"] == "NVIDIA H200" and back["provenance"]["sm_clock_mhz_before"] == 345
    d = back["measured"]["dram_bandwidth_gbps"]
    assert d["value"] == pytest.approx(4308.05) and d["unit"] == "GB/s" and d["repeats"] == [4310.2, 4305.9]
    assert d["spread_pct"] == pytest.approx(0.0998, abs=1e-3)
    assert back["measured"]["sfu_ops_per_clk_per_sm"]["sm_clock_mhz"] == 1980
    assert "tensor_tflops_fp8" not in back["measured"]
    assert "nope" in back["calibration_errors"]["tensor_tflops_fp8"]


def test_summarize_bench_reproducibility_flag():
    r = summarize_bench([{"value": 100.0, "unit": "u", "method": "m"}, {"value": 107.0, "unit": "u", "method": "m"}])
    assert r["value"] == 103.5 and r["reproduces_within_5pct"] is False
    r = summarize_bench([{"value": 100.0, "unit": "u", "method": "m"}, {"value": 101.0}])
    assert r["reproduces_within_5pct"] is True
