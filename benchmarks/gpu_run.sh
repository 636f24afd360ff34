#!/usr/bin/env bash
# One device call: calibrate the GPU and measure the corpus, everything under $OUT.
#
#   bash benchmarks/gpu_run.sh [--calibrate] [--measure] [--ncu] [--budget S] [--repeat N]
#                              [--cases a,b] [--cal-only a,b] [--jobs N] [--out DIR] [-- more measure flags]
#   no part flag = --calibrate --measure --ncu.  --budget: wall seconds for the whole script
#   (default 540); measure gets what calibrate left, less 20 s.  Flags after "--" go to
#   tileroof.gpu.measure as they are (e.g. -- --sweep gemm_8192 --no-graph).
#
# Device calls (repo root; carry [".dev"], made by ../shared/device/make-tilelang-bundle.sh):
#   run(command="TILEROOF_COMMIT=<sha> bash benchmarks/gpu_run.sh", carry=[".dev"], timeout_s=600)
#   or in two calls:  ... gpu_run.sh --calibrate   then   ... gpu_run.sh --ncu --budget 560
set -uo pipefail
cd "$(dirname "$0")/.."
CAL=0; MEA=0; NCU=0; BUDGET=540; REPEAT=2; CASES=""; CALONLY=""; JOBS=16; OUTDIR="${OUT:-out}"; EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --calibrate) CAL=1 ;; --measure) MEA=1 ;; --ncu) NCU=1; MEA=1 ;;
    --budget) BUDGET=$2; shift ;; --repeat) REPEAT=$2; shift ;; --cases) CASES=$2; shift ;; --cal-only) CALONLY=$2; shift ;;
    --jobs) JOBS=$2; shift ;; --out) OUTDIR=$2; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac; shift
done
[ $CAL$MEA = 00 ] && { CAL=1; MEA=1; NCU=1; }
mkdir -p "$OUTDIR"
[ -f .dev/gpu-env.sh ] && source .dev/gpu-env.sh || echo "warning: no .dev/gpu-env.sh (tilelang may be missing)"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export TILEROOF_COMMIT="${TILEROOF_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
PY=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUTDIR/nvidia-smi-start.txt"
$PY -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
$PY -c "import tilelang; print('tilelang', tilelang.__version__)" || echo "tilelang import failed"
if [ $CAL = 1 ]; then
  ONLY=(); [ -n "$CALONLY" ] && ONLY=(--only "$CALONLY")
  $PY -m tileroof.gpu.calibrate --out "$OUTDIR" --repeat "$REPEAT" ${ONLY[@]+"${ONLY[@]}"} 2>&1 | tee "$OUTDIR/calibrate.log" | grep -v '^\[calibrate\] repeat'
fi
if [ $MEA = 1 ]; then
  LEFT=$((BUDGET - SECONDS - 20))
  [ $LEFT -lt 60 ] && LEFT=60
  SEL="--all"; [ -n "$CASES" ] && SEL="--cases $CASES"
  NCUF=""; [ $NCU = 1 ] && NCUF="--ncu"
  echo "measure: time budget ${LEFT}s"
  $PY -m tileroof.gpu.measure $SEL $NCUF --jobs "$JOBS" --out "$OUTDIR" --time-budget "$LEFT" ${EXTRA[@]+"${EXTRA[@]}"} 2>&1 | tee "$OUTDIR/measure.log" | tail -n 120
fi
# the device tool returns at most 8 files: pack logs and raw ncu output into one archive
( cd "$OUTDIR" && dirs=$(ls -d logs ncu 2>/dev/null) && [ -n "$dirs" ] && tar czf raw-logs.tar.gz $dirs && rm -rf $dirs )
echo "total ${SECONDS}s; files in $OUTDIR:"; ls -la "$OUTDIR"
