#!/usr/bin/env bash
# Session 34's device call (one call, everything under $OUT): gemm_pipe --warps first (blocks of one
# and two warps at 1-8 blocks an SM: does a small block's pipelined iteration run at its warps'
# share of the SM, model.subpartitions_used? benchmarks/warps_check.py reads the record), then
# session 32's call (benchmarks/device_s32.sh: the grouped GEMM probes; on an H200 also the sweep
# case, eq1023, the 64x256 pair, the driftcheck GEMMs and blockrate pieces).
#   run(command="TILEROOF_COMMIT=<sha> bash benchmarks/device_s34.sh", carry=[".dev"]); WARPS_ONLY=1: the probe alone
source "$(dirname "$0")/device_env.sh"
s=$SECONDS
timeout 150 python3 -m tileroof.gpu.gemm_pipe --warps --out "$OUTDIR/warps" 2>&1 | grep -v "^\[" | tail -16
echo "warps rc=$? $((SECONDS - s))s"
[ -z "${WARPS_ONLY:-}" ] && bash benchmarks/device_s32.sh
