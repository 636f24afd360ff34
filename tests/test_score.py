"""The model against the recorded H200 measurements: figures no worse than the accepted ones."""
import json
import math

import pytest

from tileroof import score


@pytest.fixture(scope="module")
def report():
    return score.evaluate()


def test_recorded_corpus_is_complete(report):
    rows = report["rows"]
    assert len([r for r in rows if not r["sweep"]]) >= 25
    # issue 3: at least three sweeps of ten or more correct, measured configs
    assert sum(1 for s in report["sweeps"].values() if s["n"] >= 10) >= 3


def test_accuracy_not_below_accepted_figures(report):
    failures = score.check(report)
    assert not failures, "\n".join(failures)


def test_tensor_flops_match_counters(report):
    """Tensor-core FLOPs equal what Nsight Compute counted on the tensor pipe (exactly, for GEMMs)."""
    gemms = [r for r in report["rows"] if r["case"].startswith(("gemm_", "sweep_gemm")) and r["counter_flops"]]
    assert gemms
    for r in gemms:
        assert abs(r["flops_err"]) < 1e-3, r["case"]


def test_split_is_deterministic_and_covers_both():
    assert score.split_of("sweep_x", "gemm_8192") == "fit"
    assert score.split_of("sweep_y", "fa_fwd") == "holdout"
    names = [f"k{i}" for i in range(30)]
    splits = {score.split_of(n, None) for n in names}
    assert splits == {"fit", "holdout"}


def test_kendall_tau():
    assert score.kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert score.kendall_tau([1, 2, 3], [30, 20, 10]) == -1.0
    assert math.isclose(score.kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]), 4 / 6)


def test_check_flags_a_regression(report, tmp_path):
    figs = score.figures(report)
    strict = {k: (v - 0.01 if not k.endswith("kendall_tau") else v + 0.01) for k, v in figs.items()
              if v == v}
    p = tmp_path / "accepted.json"
    p.write_text(json.dumps({"figures": strict}))
    assert score.check(report, p)


def test_dram_figures_leave_out_launches_below_the_floor(report):
    # run 109's one-block copy of 128 B read 3072 B of DRAM (the launch's code and parameters):
    # scored for time, left out of the DRAM figures
    rows = {r["case"]: r for r in report["rows"]}
    tiny = rows["probe_chain_copy_1x64_g1"]
    assert tiny["measured_dram"] < score.DRAM_FLOOR_BYTES and tiny["dram_err"] is None
    assert tiny["time_err"] is not None
    big = rows["probe_chain_copy_64x256_g132"]
    assert big["measured_dram"] >= score.DRAM_FLOOR_BYTES and big["dram_err"] is not None


def test_each_gpu_checked_against_its_own_accepted_figures(tmp_path):
    # an H100 report is held to the "h100_sxm:" figures only, the H200's to the unprefixed ones
    rep = {"summary": {"all": {k: 0.10 for k in ("time_median", "time_p90", "dram_median", "dram_p90",
                                                 "dram_worst", "dram_range_worst")}}, "sweeps": {}}
    acc = tmp_path / "accepted.json"
    acc.write_text(json.dumps({"figures": {"all.time_median": 0.01, "h100_sxm:all.time_median": 0.2}}))
    assert score.check(rep, acc, device="h100_sxm") == []
    assert score.check(rep, acc, device="h200") != []
    acc.write_text(json.dumps({"figures": {"all.time_median": 0.2, "h100_sxm:all.time_median": 0.05}}))
    assert score.check(rep, acc, device="h100_sxm") != []
    assert score.check(rep, acc, device="h200") == []


def test_h100_runs_scored_with_the_carried_profile():
    rep = score.evaluate(score.RECORDED_GPUS["h100_sxm"], "h100_sxm")
    assert len(rep["rows"]) >= 150 and "H100" in rep["device"]
    assert not score.check(rep, device="h100_sxm")


def test_load_records_keeps_counters_of_an_earlier_profiled_run(tmp_path):
    """A case re-timed without Nsight Compute takes its time from the newest run and its counters
    from the newest earlier run that profiled it; a case never profiled has none."""
    import json

    from tileroof.score import load_records
    old = {"cases": {"a": {"time": {"median_s": 2e-6}, "ncu": {"dram__bytes_read.sum": 100}},
                     "b": {"time": {"median_s": 5e-6}}}, "provenance": {"gpu": "G"}}
    new = {"cases": {"a": {"time": {"median_s": 1e-6}}, "b": {"time": {"median_s": 4e-6}}},
           "provenance": {"gpu": "G"}}
    (tmp_path / "measure-20260101T000000Z.json").write_text(json.dumps(old))
    (tmp_path / "measure-20260102T000000Z.json").write_text(json.dumps(new))
    recs = load_records(tmp_path)
    assert recs["a"]["time"]["median_s"] == 1e-6 and recs["a"]["_file"] == "measure-20260102T000000Z.json"
    assert recs["a"]["ncu"] == {"dram__bytes_read.sum": 100}
    assert recs["a"]["_ncu_file"] == "measure-20260101T000000Z.json"
    assert not recs["b"].get("ncu")
