"""Nsight Compute CSV parsing and helpers (pure functions; no GPU, no ncu)."""
from tileroof.gpu import ncu as N

RAW = '''==PROF== Connected to process 4242 (/opt/torch/.venv/bin/python3.12)
==PROF== Profiling "main_kernel" - 0: 0%....50%....100% - 12 passes
==PROF== Profiling "main_kernel" - 1: 0%....50%....100% - 12 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum","launch__grid_size","lts__t_sector_hit_rate.pct","sm__inst_executed_pipe_tensor.sum","launch__registers_per_thread"
"","","","","","","","","","","","byte","byte","nsecond","","%","inst","register/thread"
"0","4242","python3.12","127.0.0.1","gemm_fp16_1024","1","7","(128, 1, 1)","(8, 8, 1)","0","9.0","4,194,304","2,097,152","25,536","64","12.34","65,536","168"
"1","4242","python3.12","127.0.0.1","softmax_4096","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","33,554,432","33,554,432","18,240.5","4096","n/a","0","32"
'''


def test_parse_raw_page_with_units_row():
    rows = N.parse_ncu_csv(RAW)
    assert [r["kernel_name"] for r in rows] == ["gemm_fp16_1024", "softmax_4096"]
    g = rows[0]
    assert g["id"] == 0 and g["process_id"] == 4242
    assert g["block_size"] == "(128, 1, 1)" and g["grid_size"] == "(8, 8, 1)"
    assert g["metrics"]["dram__bytes_read.sum"] == 4194304
    assert isinstance(g["metrics"]["dram__bytes_read.sum"], int)
    assert g["metrics"]["lts__t_sector_hit_rate.pct"] == 12.34
    assert g["metrics"]["launch__registers_per_thread"] == 168
    assert g["units"]["gpu__time_duration.sum"] == "nsecond"
    s = rows[1]
    assert s["metrics"]["gpu__time_duration.sum"] == 18240.5
    assert s["metrics"]["lts__t_sector_hit_rate.pct"] is None       # n/a
    assert "Kernel Name" not in s["metrics"] and "CC" not in s["metrics"]


def test_parse_quoted_kernel_name_with_commas_and_program_output():
    text = ('hello from the program\n'
            '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","gpu__time_duration.sum"\n'
            '"","","","","","","","","","","","nsecond"\n'
            'stray line the child printed\n'
            '"3","1","python3","h","void k<int, 4>(float *, int)","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","1,000"\n')
    rows = N.parse_ncu_csv(text)
    assert len(rows) == 1
    assert rows[0]["kernel_name"] == "void k<int, 4>(float *, int)"
    assert rows[0]["metrics"]["gpu__time_duration.sum"] == 1000


def test_parse_long_format():
    text = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","1","py","h","a","1","7","(1, 1, 1)","(2, 1, 1)","0","9.0","Command line profiler metrics",'
            '"dram__bytes_read.sum","byte","2,048"\n'
            '"0","1","py","h","a","1","7","(1, 1, 1)","(2, 1, 1)","0","9.0","Command line profiler metrics",'
            '"gpu__time_duration.sum","nsecond","3.5"\n'
            '"1","1","py","h","b","1","7","(1, 1, 1)","(2, 1, 1)","0","9.0","Command line profiler metrics",'
            '"dram__bytes_read.sum","byte","1"\n')
    rows = N.parse_ncu_csv(text)
    assert [r["kernel_name"] for r in rows] == ["a", "b"]
    assert rows[0]["metrics"] == {"dram__bytes_read.sum": 2048, "gpu__time_duration.sum": 3.5}
    assert rows[0]["units"]["dram__bytes_read.sum"] == "byte"


def test_parse_nothing():
    assert N.parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == []
    assert N.parse_ncu_csv("") == []


def test_parse_value():
    assert N.parse_value("1,234,567") == 1234567
    assert N.parse_value("1,234.5") == 1234.5
    assert N.parse_value("12") == 12
    assert N.parse_value("-3.25") == -3.25
    assert N.parse_value("1e+06") == 1e6
    assert N.parse_value("n/a") is None and N.parse_value("") is None
    assert N.parse_value("(128, 1, 1)") == "(128, 1, 1)"
    assert N.parse_value("12,34") == "12,34"          # not a valid thousands group: kept as text


def test_missing_metrics():
    req = ["dram__bytes_read.sum", "sm__ops_path_tensor_src_fp16.sum", "bad_metric_xyz.sum",
           "sm__inst_executed_pipe_tensor_op_gmma.sum"]
    out = ("==PROF== Connected to process 1\n"
           "==ERROR== Failed to find metric regex:^bad_metric_xyz\\.(sum|min|max|avg|pct|ratio|max_rate)$\n"
           "==ERROR== Failed to find metric sm__ops_path_tensor_src_fp16.sum\n"
           "==ERROR== Metric sm__inst_executed_pipe_tensor_op_gmma.sum is not available on this chip\n")
    assert N.missing_metrics(out, req) == ["bad_metric_xyz.sum", "sm__ops_path_tensor_src_fp16.sum",
                                           "sm__inst_executed_pipe_tensor_op_gmma.sum"]
    assert N.missing_metrics("==PROF== all fine", req) == []


def test_query_filter_keeps_core():
    listing = "\n".join(["Device NVIDIA H200 (GH100)", "-" * 40, "Metric Name   Metric Description"]
                        + [f"unit{i}__thing_{i}   some description" for i in range(60)]
                        + ["dram__bytes   # of bytes accessed in DRAM"])
    bases = N.parse_query_metrics(listing)
    assert "dram__bytes" in bases and "unit3__thing_3" in bases and "Device" not in bases
    kept, dropped = N.filter_by_query(["dram__bytes_read.sum", "sm__ops_path_tensor_src_fp16.sum",
                                       "unit3__thing_3.sum"], bases)
    assert kept == ["dram__bytes_read.sum", "unit3__thing_3.sum"]      # dram__bytes_read is core
    assert dropped == ["sm__ops_path_tensor_src_fp16.sum"]
    assert N.filter_by_query(["x__y.sum"], set())[0] == ["x__y.sum"]    # query failed: keep all


def test_assign_rows_by_nvtx_name_and_by_order():
    rows = N.parse_ncu_csv(RAW)
    by, unmatched, how = N.assign_rows(rows, ["gemm_fp16_1024", "softmax_4096"])
    assert how == "nvtx" and not unmatched and set(by) == {"gemm_fp16_1024", "softmax_4096"}
    for r in rows:
        r["kernel_name"] = "main_kernel"           # rename did not happen
    by, unmatched, how = N.assign_rows(rows, ["gemm_fp16_1024", "softmax_4096"])
    assert how == "order" and by["softmax_4096"][0]["id"] == 1
    by, unmatched, how = N.assign_rows(rows, ["only_one"])
    assert how == "none" and len(unmatched) == 2


def test_match_case():
    cases = ["gemm", "gemm_fp16", "softmax"]
    assert N.match_case("gemm_fp16", cases) == "gemm_fp16"
    assert N.match_case("tileroof/gemm_fp16", cases) == "gemm_fp16"
    assert N.match_case("main_kernel", cases) is None


def test_aggregate_sums_and_dominant_row():
    rows = [{"id": 0, "metrics": {"gpu__time_duration.sum": 10, "dram__bytes_read.sum": 100,
                                  "lts__t_sector_hit_rate.pct": 50.0, "launch__grid_size": 4}},
            {"id": 1, "metrics": {"gpu__time_duration.sum": 30, "dram__bytes_read.sum": 300,
                                  "lts__t_sector_hit_rate.pct": 10.0, "launch__grid_size": 8}}]
    m = N.aggregate(rows)
    assert m["gpu__time_duration.sum"] == 40 and m["dram__bytes_read.sum"] == 400
    assert m["lts__t_sector_hit_rate.pct"] == 10.0 and m["launch__grid_size"] == 8
    assert m["n_kernels"] == 2
    assert N.aggregate([]) == {}
    assert N.dram_mb({"dram__bytes_read.sum": 1_500_000, "dram__bytes_write.sum": 500_000}) == 2.0
    assert N.dram_mb({}) is None


def test_commands():
    cmd = N.profile_command("ncu", ["a.sum", "b.sum"], "/tmp/r", ["python3", "-m", "x"])
    i = cmd.index("--clock-control")
    assert cmd[i + 1] == "none"
    assert cmd[cmd.index("--metrics") + 1] == "a.sum,b.sum"
    assert "--profile-from-start" in cmd and "--nvtx" in cmd and cmd[-3:] == ["python3", "-m", "x"]
    imp = N.import_command("ncu", "/tmp/r.ncu-rep")
    assert imp[imp.index("--page") + 1] == "raw" and "--csv" in imp
    assert imp[imp.index("--print-units") + 1] == "base" and "--print-nvtx-rename" in imp
    assert "--print-nvtx-rename" not in N.import_command("ncu", "r", nvtx_rename=False)
    assert len(set(N.DEFAULT_METRICS)) == len(N.DEFAULT_METRICS)


def test_plan_chunk():
    from tileroof.gpu.profiling import plan_chunk
    inf = float("inf")
    assert plan_chunk(60, 30, inf, None, first=True) == 30
    assert plan_chunk(5, 30, inf, None, first=True) == 5
    assert plan_chunk(60, 30, 300, None, first=True) == 8          # learn the cost first
    assert plan_chunk(60, 30, 30, None, first=True) == 0           # under 45 s: nothing
    # 15 s start-up, 2 s per case, 100 s left: (100 - 15 - 19.5) / 2.6 = 25
    assert plan_chunk(60, 30, 100, (15.0, 2.0), first=False) == 25
    assert plan_chunk(60, 30, 50, (40.0, 2.0), first=False) == 0   # start-up alone does not fit
