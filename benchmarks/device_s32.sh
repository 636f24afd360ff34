#!/usr/bin/env bash
# Session 32's device call (one call, everything under $OUT): the grouped GEMM probes that separate
# what makes the data-keyed kernel miss (the sweep case, its control, the data-keyed kernel at equal
# groups with and without padding tiles, the control with run-time offsets, the control on 9 groups)
# with Nsight Compute; on an H200 also the seven driftcheck GEMMs and blockrate --mode pieces (their
# predictions are committed).
#   run(command="bash benchmarks/device_s32.sh", carry=[".dev"]); NODRIFT=1 / NOPIECES=1 leave those out,
#   ONLY_PROBES=1 every H200 extra (the five probes alone, as on an H100)
source "$(dirname "$0")/device_env.sh"
T=bm128_bn128_bk32_s3_t128
CASES=probe_grouped_cpasync_$T,probe_grouped_keyed_eq1024_$T,probe_grouped_keyed_tight_$T,probe_grouped_shift_$T,probe_grouped_cpasync_g9_$T
case "$GPU${ONLY_PROBES:+ only}" in *H200)
  CASES="$CASES,sweep_grouped_$T,probe_grouped_keyed_eq1023_$T,sweep_grouped_bm64_bn256_bk64_s2_t256,apartcheck_g4_m8192_n4096_k4096_bm64_bn256_bk64_s2_t256"
  [ -z "${NODRIFT:-}" ] && CASES="$CASES,$(drift_cases)"
  ;; esac
bash benchmarks/gpu_run.sh --ncu --budget "${MEASURE_BUDGET:-300}" --out "$OUTDIR/m" --cases "$CASES" 2>&1 | tail -30
case "$GPU" in *H200*)
  [ -z "${NOPIECES:-}" ] && br pieces 120 && tar czf "$OUTDIR/br.tar.gz" -C "$OUTDIR" br ;; esac
rm -rf "$OUTDIR/br"
echo "total ${SECONDS}s"; ls -la "$OUTDIR" "$OUTDIR/m"
