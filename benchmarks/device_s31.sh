#!/usr/bin/env bash
# Session 31's device call (one call, everything under $OUT): blockrate --mode pieces (its
# predictions are committed), the grouped GEMM controls with Nsight Compute, the driftcheck GEMMs
# (H200 only: the H100 ran them in run 152), then blockrate --mode widths / touch while time is left.
#   run(command="bash benchmarks/device_s31.sh", carry=[".dev"]); NODRIFT=1 leaves the driftcheck GEMMs out, NOPIECES=1 the pieces run
source "$(dirname "$0")/device_env.sh"
[ -z "${NOPIECES:-}" ] && br pieces 120
CASES=sweep_grouped_bm128_bn128_bk32_s3_t128,probe_grouped_cpasync_bm128_bn128_bk32_s3_t128,probe_grouped_keyed_eq1024_bm128_bn128_bk32_s3_t128,probe_grouped_keyed_eq1023_bm128_bn128_bk32_s3_t128,sweep_grouped_bm64_bn256_bk64_s2_t256,apartcheck_g4_m8192_n4096_k4096_bm64_bn256_bk64_s2_t256
[ -z "${NODRIFT:-}" ] && case "$GPU" in *H200*) CASES="$CASES,$(drift_cases)" ;; esac
bash benchmarks/gpu_run.sh --ncu --budget "${MEASURE_BUDGET:-300}" --out "$OUTDIR/m" --cases "$CASES" 2>&1 | tail -40
LIMIT=${LIMIT:-560}     # wall seconds for the whole script
[ $SECONDS -lt $((LIMIT - 120)) ] && br widths $((LIMIT - 30 - SECONDS))
[ $SECONDS -lt $((LIMIT - 90)) ] && br touch $((LIMIT - SECONDS))
tar czf "$OUTDIR/br.tar.gz" -C "$OUTDIR" br && rm -rf "$OUTDIR/br"
echo "total ${SECONDS}s"; ls -la "$OUTDIR" "$OUTDIR/m"
