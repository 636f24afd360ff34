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
[ -z "${NOS32:-}" ] && h200_extras 150
finish
