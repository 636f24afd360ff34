#!/usr/bin/env bash
# Session 37's device call (one call, everything under $OUT): what in the grouped GEMM's run-time
# tile addresses makes its extra L2 misses.  Against the written-out control (compile-time
# addresses) and the shift control (row start and group read from a tensor at run time), measured
# again on the same machine because these launches' DRAM moves 10-24 % between boards: only A's row
# start at run time (shifta), only B's group (shiftb), and both as int32 kernel arguments (shiftarg:
# run-time addresses and bounds predicates, no dependent load ahead of the first copy), with the
# data-keyed eq1024 kernel beside them; Nsight Compute on each, then the L2 partition counters
# (benchmarks/l2_fabric.py's set) on control / shift / shiftarg.  On an H200, while LIMIT seconds
# allow, the seven driftcheck GEMMs (and the int4 group-scale dequant GEMM of session 37's robustness sweep, in
# the first batch) (predictions committed in session 28) and blockrate --mode pieces.
#   run(command="TILEROOF_COMMIT=<sha> bash benchmarks/device_s37.sh", carry=[".dev"]); NOFABRIC=1 drops the counters
source "$(dirname "$0")/device_env.sh"
LIMIT=${LIMIT:-540}
T=bm128_bn128_bk32_s3_t128
CASES=probe_grouped_cpasync_$T,probe_grouped_shift_$T,probe_grouped_shifta_$T,probe_grouped_shiftb_$T,probe_grouped_shiftarg_$T,probe_grouped_keyed_eq1024_$T,probe_dequant_int4_gscale_fp16_m2048_n8192_k8192
bash benchmarks/gpu_run.sh --ncu --budget 230 --out "$OUTDIR/g" --cases "$CASES" 2>&1 | tail -14
echo "grouped probes done ${SECONDS}s"
if [ -z "${NOFABRIC:-}" ]; then
  M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_ltcfabric_op_read.sum,lts__t_sectors_srcunit_ltcfabric_lookup_hit.sum,lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum,lts__t_sectors_srcnode_ltcfabric.sum,lts__t_sectors_op_read_lookup_miss.sum,lts__t_sectors_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum
  mkdir -p "$OUTDIR/fab"
  timeout 120 python3 -m tileroof.gpu.measure --cases probe_grouped_cpasync_$T,probe_grouped_shift_$T,probe_grouped_shiftarg_$T \
    --ncu --ncu-metrics "$M" --out "$OUTDIR/fab" --time-budget 100 2>&1 | tail -5
  tar czf "$OUTDIR/fab.tar.gz" -C "$OUTDIR" fab && rm -rf "$OUTDIR/fab"; echo "fabric done ${SECONDS}s"
fi
h200_extras 140
finish
