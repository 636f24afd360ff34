# Sourced by the benchmarks/device_s*.sh session scripts: the repository root, the tilelang bundle's
# environment (.dev, made by ../shared/device/make-tilelang-bundle.sh), this checkout's sources first
# on PYTHONPATH (after the bundle's), the commit the records name, OUTDIR (with br/) and GPU; br MODE
# SECONDS runs tileroof.gpu.blockrate into $OUTDIR/br, drift_cases names the seven driftcheck GEMMs.
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
