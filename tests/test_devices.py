"""The device catalog is data with a source for every number; profiles overlay measurements."""
import sys

import pytest

from tileroof import devices

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

KEYS = devices.catalog_keys()


@pytest.mark.parametrize("key", KEYS)
def test_every_spec_cites_a_source(key):
    with open(devices.catalog_dir() / f"{key}.toml", "rb") as f:
        data = tomllib.load(f)
    assert data["key"] == key
    for name, spec in data["spec"].items():
        assert {"value", "unit", "source"} <= spec.keys(), name
        assert spec["source"] in data["sources"], (name, spec["source"])
    dev = devices.load(key, calibrated=False)
    assert dev.sm_count > 0 and dev.dram_bw > 0 and dev.tensor_peak


def test_required_devices_present():
    assert {"h100_sxm", "h100_pcie", "h200", "a100_40gb", "a100_80gb", "l40s", "rtx_4090", "b200", "mi300x"} <= set(KEYS)


def test_h200_profile_overlays_measurements():
    raw = devices.load("h200", calibrated=False)
    cal = devices.load("h200")
    assert cal.dram_bw < raw.dram_bw                      # measured copy bandwidth under datasheet
    assert 3.5e12 < cal.dram_bw <= 4.8e12
    assert cal.tensor_peak["fp16"] <= 989.5e12
    assert cal.l2_bw > cal.dram_bw
    assert "measured" in cal.sources["dram_bw"]
    # the one-warpgroup efficiency is not fitted where gemm iterations follow the measured law
    # (and the cost of a run-time branch test, fitted on the block-sparse probes: fit_branch_check.py;
    # one block's uncontended stream rate, fitted on run 130's SiLU-mul grids: fit_block_stream.py)
    assert cal.fitted and set(cal.fitted) == {"iteration_overhead_s", "load_latency_s", "data_branch_check_s",
                                              "block_stream_bps"}
    assert cal.gemm_iteration_cycles > 0 and "gemm_pipe" in cal.sources["gemm_iteration_cycles"]


def test_user_file_and_unknown(tmp_path):
    p = tmp_path / "mygpu.toml"
    p.write_text('key = "mygpu"\nname = "My GPU"\n[sources]\nme = "my measurement"\n'
                 '[spec.sm_count]\nvalue = 10\nunit = "SMs"\nsource = "me"\n'
                 '[spec.dram_bandwidth_gbps]\nvalue = 100\nunit = "GB/s"\nsource = "me"\n'
                 '[spec.tensor_tflops_fp16]\nvalue = 10\nunit = "TFLOP/s"\nsource = "me"\n')
    dev = devices.load(str(p))
    assert dev.name == "My GPU" and dev.sm_count == 10 and dev.dram_bw == 100e9
    with pytest.raises(devices.TileroofError):
        devices.load("nonexistent-gpu")


def test_match_name():
    assert devices.match_name("NVIDIA H200") == "h200"
    assert devices.match_name("NVIDIA H100 80GB HBM3") == "h100_sxm"
    assert devices.match_name("NVIDIA A100-SXM4-40GB") == "a100_40gb"
    assert devices.match_name("Some GPU") is None


def test_recorded_calibrations_reproduce_within_5_percent():
    """Two calibrate runs of the same procedure on the H200 (runs 2 and 3) agree within 5 %."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    res = root / "benchmarks" / "results" / "h200"
    p = subprocess.run([sys.executable, str(root / "benchmarks" / "compare_calibrations.py"),
                        str(res / "h200-profile-20261129T163056Z.toml"), str(res / "h200-profile-20261129T170803Z.toml")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout
    assert "tensor_tflops_fp16" in p.stdout


def test_device_files_are_reread_when_they_change(tmp_path):
    """Parsed device files are cached (a device load is mostly TOML parsing), keyed by the file's
    modification time: an edited file is read again."""
    import os
    src = devices.catalog_dir() / "h100_sxm.toml"
    path = tmp_path / "mine.toml"
    text = src.read_text()
    path.write_text(text)
    first = devices.load(str(path))
    assert devices.load(str(path)) == first
    path.write_text(text.replace("[spec.sm_count]\nvalue = 132", "[spec.sm_count]\nvalue = 100"))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert devices.load(str(path)).sm_count == 100 and first.sm_count == 132


def test_h100_carries_the_h200_profile_by_datasheet_ratios():
    # the H100 SXM has no profile of its own; it is the H200's chip (GH100, 132 SMs at 1980 MHz) with
    # HBM3 at 3350 GB/s instead of HBM3e at 4800 and a 50 MB L2 instead of 60, so the H200's
    # measurements carry over: DRAM rates x 3350 / 4800, L2 reuse distances x 50 / 60, the tensor
    # rates x 989.4 / 989.5 (the two datasheets' fp16 peaks), SM cycles kept
    import tomllib
    h200 = devices.load("h200")
    prof = tomllib.loads((devices.profiles_dir() / "h200.toml").read_text())["measured"]
    h100 = devices.load("h100_sxm")
    assert "transferred" in h100.origin
    assert h100.calibrated_on == "h200" and devices.load("h200").calibrated_on == "h200"
    assert h100.dram_bw == pytest.approx(prof["dram_bandwidth_gbps"]["value"] * 1e9 * 3350 / 4800)
    assert h100.tensor_rate("fp16") == pytest.approx(prof["tensor_tflops_fp16"]["value"] * 1e12 * 989.4 / 989.5)
    assert h100.l2_hit_curve[0][0] == pytest.approx(prof["l2_reuse_hit_curve"]["value"][0][0] * 50 / 60)
    assert h100.l2_hit_curve[0][1] == h200.l2_hit_curve[0][1]
    assert h100.gemm_iteration_cycles == h200.gemm_iteration_cycles
    assert h100.flush_dirty_bytes == pytest.approx(h200.flush_dirty_bytes * 50 / 60)
    assert h100.dram_stream == h200.dram_stream          # a tile's round trip: kept
    # the catalog numbers alone where asked, and for another architecture
    assert devices.load("h100_sxm", calibrated=False).dram_bw == 3350e9
    assert "transferred" not in devices.load("a100_80gb").origin
    assert devices.load("a100_80gb").calibrated_on == ""


def test_every_measured_key_has_a_transfer_rule():
    import tomllib
    prof = tomllib.loads((devices.profiles_dir() / "h200.toml").read_text())["measured"]
    rules = tomllib.loads((devices.profiles_dir().parent / "transfer.toml").read_text())["rules"]
    assert set(prof) <= set(rules)
