#!/usr/bin/env bash
# Session 36's device call (one call, everything under $OUT): which tensor instruction the library
# GEMMs behind calibrate's tensor rates run (tileroof.gpu.cublas_instr at calibrate's 8192^3; IMMA
# counters added), the int8 mma.sync probe with the IMMA pipe counters (and the fp16 mma.sync probe
# beside it, read the same way), then on an H200, while LIMIT seconds allow, the seven driftcheck GEMMs
# (session 28; their predictions are committed) and blockrate --mode pieces (session 32).
#   run(command="TILEROOF_COMMIT=<sha> bash benchmarks/device_s36.sh", carry=[".dev"]); NOS32=1: the first two alone;
#   CASES=a,b: other probes (run 163: the three session-36 probes, predicted first in predictions-20261207T232914Z.json)
source "$(dirname "$0")/device_env.sh"
LIMIT=${LIMIT:-560}
s=$SECONDS
timeout 180 python3 -m tileroof.gpu.cublas_instr --n 8192 --out "$OUTDIR/ci" 2>&1 | tail -12
echo "cublas_instr rc=$? $((SECONDS - s))s"
CASES=${CASES:-probe_mma_int8_nn_bm128_bn256_bk64_s3_t256,probe_mma_fp16_nowgmma_bm128_bn256_bk32_s3_t256}
bash benchmarks/gpu_run.sh --ncu --budget 200 --out "$OUTDIR/dt" --cases "$CASES" 2>&1 | tail -12
echo "probes done ${SECONDS}s"
case "$GPU${NOS32:+ only}" in *H200)
  left=$((LIMIT - SECONDS - 150))
  [ $left -gt 90 ] && bash benchmarks/gpu_run.sh --ncu --budget $left --out "$OUTDIR/drift" --cases "$(drift_cases)" 2>&1 | tail -12
  [ $((LIMIT - SECONDS)) -gt 130 ] && br pieces 120 && tar czf "$OUTDIR/br.tar.gz" -C "$OUTDIR" br
  ;; esac
# at most 8 files come back: keep each run's record and raw logs, drop the copies the record holds
rm -rf "$OUTDIR/br"; find "$OUTDIR" \( -name nvidia-smi-start.txt -o -name measure.log \) -delete
echo "total ${SECONDS}s"; find "$OUTDIR" -type f | sort
