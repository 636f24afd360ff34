# Sourced by the benchmarks/device_s*.sh session scripts: the repository root, the tilelang bundle's
# environment (.dev, made by ../shared/device/make-tilelang-bundle.sh), this checkout's sources first
# on PYTHONPATH (after the bundle's), the commit the records name, OUTDIR (with br/) and GPU; br MODE
# SECONDS runs tileroof.gpu.blockrate into $OUTDIR/br, drift_cases names the seven driftcheck GEMMs,
# h200_extras RESERVE runs those and blockrate pieces on an H200 while LIMIT allows, finish packs up.
set -uo pipefail
cd "$(dirname "$0")/.."
source .dev/gpu-env.sh
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
export TILEROOF_COMMIT="${TILEROOF_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
OUTDIR="${OUT:-out}"; mkdir -p "$OUTDIR/br"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $GPU"
br() { local s=$SECONDS; timeout "$2" python3 -m tileroof.gpu.blockrate --mode "$1" --out "$OUTDIR/br/$1" > "$OUTDIR/br/$1.log" 2>&1
       echo "blockrate $1 rc=$? $((SECONDS - s))s"; tail -3 "$OUTDIR/br/$1.log"; }
# the seven driftcheck GEMMs: the cases of their committed predictions (written in session 28)
drift_cases() { python3 -c "import json; print(','.join(json.load(open('benchmarks/results/h200/predictions-20261206T060328Z.json'))['cases']))"; }
# on an H200, while LIMIT seconds allow (RESERVE of them kept back): the driftcheck GEMMs with ncu,
# then blockrate --mode pieces (session 32)
h200_extras() { case "$GPU" in *H200)
  local left=$((LIMIT - SECONDS - $1))
  [ $left -gt 90 ] && bash benchmarks/gpu_run.sh --ncu --budget $left --out "$OUTDIR/drift" --cases "$(drift_cases)" 2>&1 | tail -12
  [ $((LIMIT - SECONDS)) -gt 130 ] && br pieces 120 && tar czf "$OUTDIR/br.tar.gz" -C "$OUTDIR" br
  ;; esac; }
# at most 8 files come back: keep each run's record and raw logs, drop the copies the record holds
finish() { rm -rf "$OUTDIR/br"; find "$OUTDIR" \( -name nvidia-smi-start.txt -o -name measure.log \) -delete
           echo "total ${SECONDS}s"; find "$OUTDIR" -type f | sort; }
