#!/usr/bin/env bash
# Session 35's device call (one call, everything under $OUT): corpus.dtypes' mma.sync probes and the
# gemm_tf32 / gemm_int8 sweeps (predicted first: results/{h200,h100}/predictions-20261207T17*.json)
# with Nsight Compute; on an H200 then the small-block probe (gemm_pipe --warps, as device_s34.sh) and,
# while LIMIT seconds allow, session 32's H200 cases without the driftcheck GEMMs or pieces.
#   run(command="TILEROOF_COMMIT=<sha> bash benchmarks/device_s35.sh", carry=[".dev"]); DTYPES_ONLY=1: the dtype cases alone
source "$(dirname "$0")/device_env.sh"
LIMIT=${LIMIT:-540}
# the six mma.sync probes always; the two sweeps on an H200 (the H100 ran them in run 160) or with SWEEPS=1
CASES=$(python3 -c "from tileroof.corpus import CASES, SWEEPS; import sys
sw = SWEEPS['gemm_tf32'] + SWEEPS['gemm_int8'] if sys.argv[1] else []
print(','.join([n for n in CASES if n.startswith('probe_mma_')] + sw))" "$([[ "$GPU" == *H200 || -n "${SWEEPS:-}" ]] && echo 1)" 2>/dev/null | tail -1)
bash benchmarks/gpu_run.sh --ncu --budget 300 --out "$OUTDIR/dt" --cases "$CASES" 2>&1 | tail -20
echo "dtypes done ${SECONDS}s"
case "$GPU${DTYPES_ONLY:+ only}" in *H200)
  s=$SECONDS
  timeout 150 python3 -m tileroof.gpu.gemm_pipe --warps --out "$OUTDIR/warps" 2>&1 | grep -v "^\[" | tail -16
  echo "warps rc=$? $((SECONDS - s))s"
  left=$((LIMIT - SECONDS))
  [ $left -gt 150 ] && NODRIFT=1 NOPIECES=1 MEASURE_BUDGET=$((left - 30)) OUT="$OUTDIR/s32" bash benchmarks/device_s32.sh 2>&1 | tail -24
  ;; esac
# at most 8 files come back: keep each run's record and raw logs, drop the copies the record holds
rm -rf "$OUTDIR/br"; find "$OUTDIR" \( -name nvidia-smi-start.txt -o -name measure.log \) -delete
echo "total ${SECONDS}s"; find "$OUTDIR" -type f | sort
