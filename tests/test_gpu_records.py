"""nvidia-smi parsing, JSON records, and the measure harness's pure parts (no GPU)."""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tileroof.gpu import measure as M
from tileroof.gpu.provenance import parse_smi_csv, tileroof_version
from tileroof.gpu.records import JsonLines, jsonable, read_jsonl, write_json_atomic


def test_parse_smi_csv():
    text = ("NVIDIA H200, 580.159.04, 345 MHz, 3201 MHz, 1980 MHz, 3201 MHz, 31, 76.54 W\n"
            "NVIDIA H200, 580.159.04, [N/A], 3201 MHz, 1980 MHz, 3201 MHz, 30, [N/A]\n")
    g = parse_smi_csv(text)
    assert g[0] == {"gpu": "NVIDIA H200", "driver": "580.159.04", "sm_clock_mhz": 345, "mem_clock_mhz": 3201,
                    "max_sm_clock_mhz": 1980, "max_mem_clock_mhz": 3201, "temperature_c": 31, "power_w": 76.54}
    assert g[1]["sm_clock_mhz"] is None and g[1]["power_w"] is None
    assert parse_smi_csv("garbage\n") == [{"unparsed": "garbage"}]
    two = parse_smi_csv("Odd, Name, 1.0, 1 MHz, 2 MHz, 3 MHz, 4 MHz, 5, 6 W")
    assert two[0]["gpu"] == "Odd, Name" and two[0]["power_w"] == 6


def test_jsonable_and_atomic_write(tmp_path):
    obj = {1: float("nan"), "t": (1, 2), "s": {3}, "inf": float("inf"), "ok": 1.5, "o": object}
    j = jsonable(obj)
    assert j["1"] is None and j["t"] == [1, 2] and j["s"] == [3] and j["inf"] is None and j["ok"] == 1.5
    assert isinstance(j["o"], str)
    p = tmp_path / "x.json"
    write_json_atomic(p, {"a": float("nan"), "b": [1.0]})
    assert json.loads(p.read_text()) == {"a": None, "b": [1.0]}
    assert not (tmp_path / "x.json.tmp").exists()


def test_jsonlines_torn_last_line(tmp_path):
    p = tmp_path / "r.jsonl"
    w = JsonLines(p)
    w.emit({"type": "compile", "case": "a", "ok": True, "seconds": 1.0})
    w.emit({"type": "result", "case": "a", "correct": {"ok": True, "rel_err": {0: 1e-4}}})
    w.close()
    with open(p, "a") as f:
        f.write('{"type": "start", "ca')
    recs = read_jsonl(p)
    assert [r["type"] for r in recs] == ["compile", "result"]
    assert recs[1]["correct"]["rel_err"] == {"0": 1e-4}
    assert read_jsonl(tmp_path / "missing.jsonl") == []


def _case(name, sweep=None):
    return SimpleNamespace(name=name, params={"M": 128, "dtype": "float16"}, sweep=sweep, tags=("gemm",), rtol=1e-2)


def test_select_cases():
    cases = {"a": _case("a", "s1"), "b": _case("b", "s2"), "gemm_c": _case("gemm_c", "s1")}
    ns = lambda **k: SimpleNamespace(**{"cases": None, "all": False, "sweep": None, "match": None, **k})  # noqa: E731
    assert M.select_cases(cases, ns(all=True)) == ["a", "b", "gemm_c"]
    assert M.select_cases(cases, ns(cases="b,a")) == ["b", "a"]
    assert M.select_cases(cases, ns(sweep=["s1"])) == ["a", "gemm_c"]
    assert M.select_cases(cases, ns(all=True, match="^gemm")) == ["gemm_c"]
    with pytest.raises(SystemExit):
        M.select_cases(cases, ns(cases="zzz"))
    with pytest.raises(SystemExit):
        M.select_cases(cases, ns())


def test_merge_and_table(capsys):
    state = {"schema": 1, "provenance": {}, "phases": {},
             "cases": {n: M.empty_entry(_case(n)) for n in ("a", "b", "c", "d")}}
    recs = [
        {"type": "info", "torch_device_name": "NVIDIA H200", "sm_count": 132},
        {"type": "compile", "case": "a", "ok": True, "seconds": 3.0},
        {"type": "compile", "case": "b", "ok": False, "seconds": 1.0, "error": "nvcc: boom"},
        {"type": "compile", "case": "c", "ok": True, "seconds": 2.0},
        {"type": "compile", "case": "d", "ok": True, "seconds": 2.0},
        {"type": "start", "case": "a"},
        {"type": "result", "case": "a", "correct": {"ok": True, "rel_err": {"2": 3e-4}},
         "time": {"median_s": 1.25e-5, "p10_s": 1.2e-5, "p90_s": 1.3e-5, "n": 50, "method": "graph",
                  "primary": "graph"}},
        {"type": "result", "case": "c", "correct": {"ok": False, "rel_err": {"2": 0.5}}, "time": None},
        {"type": "skipped", "case": "d", "reason": "time budget"},
        {"type": "result", "case": "unknown", "correct": {}},
    ]
    M.merge(state, recs)
    assert state["provenance"]["sm_count"] == 132
    assert state["cases"]["b"]["compile"]["error"] == "nvcc: boom"
    assert state["cases"]["a"]["time"]["median_s"] == 1.25e-5
    assert state["cases"]["d"]["error"] == "skipped: time budget"
    state["cases"]["a"]["ncu"] = {"dram__bytes_read.sum": 3_000_000, "dram__bytes_write.sum": 1_000_000}
    M.print_table(state)
    out = capsys.readouterr().out.splitlines()
    row = {line.split()[0]: line.split() for line in out[1:-1]}
    assert row["a"][1:4] == ["ok", "12.50", "4.0"]
    assert row["b"][1] == "COMPILE" and row["c"][1] == "WRONG" and row["d"][1] == "SKIP"
    assert out[-1] == "1/4 cases correct"


def _env():
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ)
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def test_modules_import_without_gpu_libraries():
    code = ("import sys, tileroof; before = set(sys.modules); "
            "import tileroof.gpu.measure, tileroof.gpu.calibrate, tileroof.gpu.worker, "
            "tileroof.gpu.profiling, tileroof.gpu.timing, tileroof.gpu.microbench; "
            "bad = [m for m in ('torch', 'triton', 'cupy', 'tilelang') if m in sys.modules and m not in before]; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr


def test_cli_help_runs_without_gpu():
    for mod in ("tileroof.gpu.measure", "tileroof.gpu.calibrate"):
        r = subprocess.run([sys.executable, "-m", mod, "--help"], capture_output=True, text=True, env=_env())
        assert r.returncode == 0 and "--out" in r.stdout, r.stderr
    r = subprocess.run([sys.executable, "-m", "tileroof.gpu.calibrate", "--out", "/tmp/x", "--list"],
                       capture_output=True, text=True, env=_env())
    assert "dram_bandwidth_gbps" in r.stdout and "sm_clock_mhz" in r.stdout


def test_version():
    assert tileroof_version()


def test_write_record_names_and_finishes_the_probe_record(tmp_path):
    import json
    import time

    from tileroof.gpu.provenance import base_provenance, write_record
    prov = base_provenance("gemm_pipe", touch_gpu=False)
    path = write_record(tmp_path / "out", prov, time.time() - 1.0, {"fits": []}, "method text")
    doc = json.loads(path.read_text())
    assert path.name.startswith("gemm_pipe-") and path.suffix == ".json"
    assert doc["schema"] == "tileroof.gemm_pipe/1" and doc["method"] == "method text" and doc["fits"] == []
    assert doc["wall_s"] >= 1.0 and "smi_after" in doc["provenance"] and doc["provenance"]["tool"] == "gemm_pipe"


def test_gemm_pipe_fed_configs_and_points_from_the_record():
    """--fed: per shape and stage count three feeds -- merged (16 tiles, no stride), L2 (an 8 MiB
    working set, stride 7) and DRAM (every block its own ITERS[1] tiles: read once); fed_points
    of the recorded run (run 90) gives the per-iteration times NOTES quotes (the 128x128x32 tile:
    merged / L2 two stages 297 ns, DRAM 559 ns)."""
    import glob

    from tileroof.gpu import gemm_pipe as G
    cfgs = G.fed_configs(132)
    assert len(cfgs) == len(G.FED_SHAPES) * len(G.FED_STAGES) * len(G.FED_FEEDS) * len(G.ITERS)
    dram = [c for c in cfgs if c["feed"] == "dram"]
    assert all(c["params"]["n_tiles"] == 132 * c["params"]["stride"] and c["params"]["stride"] >= max(G.ITERS)
               for c in dram)
    l2 = [c for c in cfgs if c["feed"] == "l2"]
    assert all(c["params"]["n_tiles"] * c["tile_bytes"] <= 8 << 20 for c in l2)
    root = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "h200"
    rec = json.loads(Path(sorted(glob.glob(str(root / "gemm_pipe_fed-*.json")))[-1]).read_text())
    pts = {(tuple(p["shape"]), p["block_K"], p["feed"], p["num_stages"]): p for p in G.fed_points(rec["configs"])}
    assert pts == {(tuple(p["shape"]), p["block_K"], p["feed"], p["num_stages"]): p for p in rec["points"]}
    key = ((128, 128, 128), 32)
    assert pts[key + ("merged", 2)]["per_iter_s"] == pytest.approx(297e-9, abs=1e-9)
    assert pts[key + ("l2", 2)]["per_iter_s"] == pytest.approx(297e-9, abs=1e-9)
    assert pts[key + ("dram", 2)]["per_iter_s"] == pytest.approx(559e-9, abs=1e-9)


def test_gemm_chain_record_points():
    """--chain (run 91): ten configs (one gemm; 2-4 gemms accumulated, staged by T.copy or by a
    masked copy); the record's points are the ITERS difference of its configs' medians."""
    import glob

    from tileroof.gpu import gemm_pipe as G
    assert len(G.CHAIN) == 10 and len(G.chain_configs(132)) == 20
    root = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "h200"
    rec = json.loads(Path(sorted(glob.glob(str(root / "gemm_chain-*.json")))[-1]).read_text())
    for p in rec["points"]:
        t = {c["iters"]: c["stats"]["median_s"] for c in rec["configs"]
             if c["n_gemm"] == p["n_gemm"] and c["hop"] == p["hop"]}
        assert p["per_iter_s"] == pytest.approx((t[G.ITERS[1]] - t[G.ITERS[0]]) / (G.ITERS[1] - G.ITERS[0]))
    by = {(p["n_gemm"], p["hop"]): p["per_iter_s"] for p in rec["points"]}
    # a gemm fed by the previous one through shared memory costs more than one accumulated
    assert all(by[(n, "copy")] > by[(n, "none")] for n in (2, 3, 4))


def test_blockrate_fit_and_profile_entry():
    """The probe's line: kernel time = a + G x slope gives one SM's start interval slope x SMs; the
    profile entry takes the store-only blocks' median."""
    from tileroof.gpu import derive
    from tileroof.gpu.blockrate import fit_rows
    sms = 132
    times = {}
    for t, k, per_sm_ns in ((128, 0, 180.0), (256, 0, 200.0), (1024, 0, 220.0), (256, 4, 400.0)):
        for m in (8, 32, 128, 512):
            g = sms * m
            times[(t, k, g)] = 5e-6 + g * per_sm_ns * 1e-9 / sms
    rows = fit_rows(times, sms)
    got = {(r["threads"], r["per_thread"]): r for r in rows}
    assert got[(256, 4)]["interval_s"] == pytest.approx(400e-9)
    assert got[(128, 0)]["intercept_s"] == pytest.approx(5e-6)
    assert got[(1024, 0)]["resident_per_sm"] == 2 and got[(128, 0)]["resident_per_sm"] == 16
    entry = derive.block_start_entry({"results": rows, "wave_multiples": [8, 32, 128, 512]}, "test")
    assert entry["block_start_interval_ns"]["value"] == pytest.approx(200.0)


def test_blockrate_warp_start_entry():
    """Store-only blocks whose interval exceeds the block floor by more than WARP_BOUND_MARGIN are
    timed by their warps' launch: 1024 threads at 137.4 ns over a 79.4 ns floor gives 137.4 / 32
    = 4.294 ns a warp; a bounce-mode run gives no entry at all; no wide row, no warp entry."""
    from tileroof.gpu import derive
    rows = [{"threads": t, "per_thread": 0, "interval_s": ns * 1e-9}
            for t, ns in ((32, 79.4), (128, 79.3), (256, 79.4), (512, 79.1), (1024, 137.4))]
    rows.append({"threads": 1024, "per_thread": 4, "interval_s": 805e-9})
    entry = derive.block_start_entry({"results": rows, "per_thread": [0, 4]}, "test")
    assert entry["block_start_interval_ns"]["value"] == pytest.approx(79.4)
    assert entry["warp_start_interval_ns"]["value"] == pytest.approx(137.4 / 32, abs=1e-3)
    assert derive.block_start_entry({"results": rows, "mode": "bounce"}, "test") == {}
    narrow = derive.block_start_entry({"results": rows[:4]}, "test")
    assert "warp_start_interval_ns" not in narrow


def test_blockrate_pair_permutation():
    """block_tiles' "pair" write permutation: every tile written once, and blocks b and b + D (b // D
    even) write tiles 2k and 2k + 1, the two halves of the same 128-byte fp16 lines."""
    import numpy as np

    from tileroof.gpu.blockrate import pair_slots
    G = 33 * 128          # a multiple of 2D for every D below (the probe: SMs x 512)
    b = np.arange(G)
    for D in (1, 4, 16, 64):
        w = pair_slots(G, D)
        assert sorted(w.tolist()) == list(range(G))
        lead = b[(b // D) % 2 == 0]
        assert (w[lead] % 2 == 0).all() and (w[lead + D] == w[lead] + 1).all()


def test_gemm_pipe_warps_configs_points_and_check(tmp_path):
    """--warps (session 34): one-warp blocks at 1, 2, 3, 4 and 8 an SM and two-warp blocks at 1, 2
    and 4 (block_K 64), both at block_K 32 / 64 / 128 alone on their SMs; warps_points takes the
    ITERS difference of each point's two medians; benchmarks/warps_check.py reads such a record."""
    import subprocess
    import sys

    from tileroof.gpu import gemm_pipe as G
    cfgs = G.warps_configs(132)
    keys = {(tuple(c["shape"]), c["block_K"], c["blocks_per_sm"]) for c in cfgs}
    assert {k[2] for k in keys if k[0] == (16, 64, 32) and k[1] == 64} == {1, 2, 3, 4, 8}
    assert {k[2] for k in keys if k[0] == (32, 64, 64) and k[1] == 64} == {1, 2, 4}
    assert len(cfgs) == 2 * len(keys)
    assert all(c["params"]["grid"] == c["blocks_per_sm"] * 132 for c in cfgs)
    # a made-up run: 1 us more over the ITERS difference at every point, 1.8 GHz
    fake = []
    for c in cfgs:
        t = 1e-3 + (1e-6 * (G.ITERS[1] - G.ITERS[0]) if c["iters"] == G.ITERS[1] else 0.0)
        fake.append({**c, "stats": {"median_s": t}, "sm_clock_hz": 1.8e9})
    pts = G.warps_points(fake)
    assert len(pts) == len(keys) and all(p["per_iter_s"] == pytest.approx(1e-6) for p in pts)
    rec = tmp_path / "gemm_pipe_warps.json"
    rec.write_text(json.dumps({"sm_count": 132, "points": [p for p in pts if p["block_K"] == 64]}))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve().parent.parent / "benchmarks" / "warps_check.py"),
                          str(rec)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[16, 64, 32]")]
    assert len(lines) == 5 and all(" 1800 " in ln for ln in lines)     # 1 us at 1.8 GHz
