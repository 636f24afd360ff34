# Sourced by the benchmarks/device_s*.sh session scripts: the repository root, the tilelang bundle's
# environment (.dev, made by ../shared/device/make-tilelang-bundle.sh), this checkout's sources first
# on PYTHONPATH (after the bundle's), the commit the records name, OUTDIR (with br/) and GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
source .dev/gpu-env.sh
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
export TILEROOF_COMMIT="${TILEROOF_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
OUTDIR="${OUT:-out}"; mkdir -p "$OUTDIR/br"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $GPU"
