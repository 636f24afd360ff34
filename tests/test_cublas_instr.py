"""cublas_instr's record keeps each launch's kernel name and counters (session 36's first run lost
them: it filtered parse_ncu_csv's records by top-level keys, where the metrics sit one level down)."""
from tileroof.gpu import ncu
from tileroof.gpu.cublas_instr import kernel_rows

CSV = '''"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","sm__inst_executed_pipe_tensor_op_imma.sum","sm__inst_executed_pipe_tensor_op_gmma.sum"
"","","","","","","","","","","","ns","inst","inst"
"0","697","python3.12","vm","nvjet_sm90_hsh_320x128_64x3_1","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","1,650,112","0","8,388,608"
"1","697","python3.12","vm","Kernel2","1","7","(256, 1, 1)","(2048, 1, 1)","0","9.0","1,245,000","67,108,864","0"
'''


def test_kernel_rows_keep_name_and_counters():
    metrics = ["gpu__time_duration.sum", "sm__inst_executed_pipe_tensor_op_imma.sum",
               "sm__inst_executed_pipe_tensor_op_gmma.sum", "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active"]
    rows = kernel_rows(ncu.parse_ncu_csv(CSV), metrics)
    assert [r["kernel_name"] for r in rows] == ["nvjet_sm90_hsh_320x128_64x3_1", "Kernel2"]
    assert rows[0]["sm__inst_executed_pipe_tensor_op_gmma.sum"] == 8388608
    assert rows[1]["sm__inst_executed_pipe_tensor_op_imma.sum"] == 67108864
    assert rows[1]["gpu__time_duration.sum"] == 1245000
    assert rows[1]["sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active"] is None
