"""The command line, through a subprocess, as a user runs it."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "gemm.py") + ":matmul"


def run(*args):
    return subprocess.run([sys.executable, "-m", "tileroof.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_analyze_json_has_the_documented_fields():
    p = run("analyze", EXAMPLE, "-p", "M=4096", "-p", "N=4096", "-p", "K=4096", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    for key in ("schema", "total_flops", "tensor_flops", "global_bytes", "dram_bytes", "estimated_time",
                "bound", "unmodeled", "ops", "device"):
        assert key in d
    assert d["tensor_flops"] == 2 * 4096 ** 3
    assert d["device"]["key"] == "h200"
    assert d["estimated_time"] > 0
    # the H200 merges TPC mates' identical tile reads before the L2 slices
    assert 0 < d["l2_slice_bytes"] < d["l2_bytes"]


def test_analyze_terminal_report_and_plot(tmp_path):
    png = tmp_path / "roof.png"
    p = run("analyze", EXAMPLE, "-p", "M=1024", "-p", "N=1024", "-p", "K=1024", "--device", "a100_80gb",
            "--plot", str(png))
    assert p.returncode == 0, p.stderr
    assert "estimated time" in p.stdout and "A100" in p.stdout
    assert png.exists() and png.stat().st_size > 1000


def test_corpus_case_and_devices_and_rank():
    p = run("analyze", "case:softmax_fp16_8192x8192", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["bound"]
    p = run("devices", "--json")
    keys = {d["key"] for d in json.loads(p.stdout)}
    on = {d["key"]: d["calibrated_on"] for d in json.loads(p.stdout)}
    assert on["h200"] == "h200" and on["h100_sxm"] == "h200" and on["mi300x"] == ""
    from tileroof import devices
    from tileroof.cli import _calibration_summary
    summary = {k: _calibration_summary(devices.load(k).describe()) for k in ("h200", "h100_sxm", "mi300x")}
    assert summary["h200"].endswith(" measured") and summary["h100_sxm"].endswith(" carried from h200")
    assert summary["mi300x"] == "-"
    assert {"h100_sxm", "h100_pcie", "h200", "a100_40gb", "a100_80gb", "l40s", "rtx_4090", "b200", "mi300x"} <= keys
    p = run("rank", EXAMPLE, "-p", "M=4096", "-p", "N=4096", "-p", "K=4096",
            "--sweep", "block_M=64,128", "--sweep", "block_N=128,256", "--json")
    assert p.returncode == 0, p.stderr
    ranked = json.loads(p.stdout)
    assert len(ranked) == 4
    assert ranked == sorted(ranked, key=lambda r: r["estimated_time"])


def test_errors_are_one_line():
    cases = [
        (("analyze", EXAMPLE, "-p", "M=4096"), "missing parameter"),
        (("analyze", EXAMPLE, "-p", "M=64", "-p", "Nx=64", "-p", "K=64"),
         "missing parameter N: pass it with -p N=<value> (given -p Nx, which it does not take: a typo?)"),
        (("analyze", EXAMPLE, "-p", "M=64", "-p", "N=64", "-p", "K=64", "--device", "gtx480"), "unknown device"),
        (("analyze", "no/such/file.py:k"), "no such file"),
        (("analyze", str(ROOT / "examples" / "gemm.py") + ":nothing"), "no attribute"),
        (("analyze", str(ROOT / "tests" / "kernels.py") + ":T"), "not a TileLang function"),
        # a plain function returning a PrimFunc is called (examples' `def matmul(M, N, K): ... return main`)
        (("analyze", str(ROOT / "tests" / "kernels.py") + ":symbolic_copy"), "symbolic shape m has no value"),
        (("analyze", "case:nope"), "unknown corpus case"),
        (("analyze", str(ROOT / "tests" / "kernels.py") + ":offset_copy", "--assume", "off=abc"),
         "--assume off=abc: the value must be a number"),
    ]
    for args, text in cases:
        p = run(*args)
        assert p.returncode == 2, args
        assert text in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "Traceback" not in p.stderr


def test_analyze_taken_flag():
    p = run("analyze", str(ROOT / "tests" / "kernels.py") + ":masked", "-p", "N=8192", "-p", "NB=64", "-p", "block=128",
            "--taken", "Mask=0.5", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["cuda_flops"] == 64 * 128 // 2 and d["taken"] == {"Mask": 0.5} and d["bounded"] == []
    p = run("analyze", str(ROOT / "tests" / "kernels.py") + ":masked", "-p", "N=8192", "-p", "NB=64", "-p", "block=128",
            "--taken", "Mask=half")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_corpus_case_brings_its_branch_shares():
    """`analyze case:NAME` uses the --taken shares the case was measured and scored with (a
    block-sparse mask's density), so the CLI gives what `tileroof score` compares; --taken overrides."""
    import tileroof
    from tileroof.corpus import CASES

    name = "probe_bsgemm_m4096_n4096_k8192_bm128_bn128_bk64_s3_t256_d1"
    case = CASES[name]
    p = run("analyze", f"case:{name}", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["taken"] == {"Mask": case.taken["Mask"]}
    assert d["dram_bytes"] == tileroof.analyze(case.kernel, taken=case.taken, **case.params).dram_bytes
    p = run("analyze", f"case:{name}", "--taken", "Mask=1", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["taken"] == {"Mask": 1.0}
