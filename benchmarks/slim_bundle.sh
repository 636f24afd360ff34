#!/usr/bin/env bash
# Shrinks .dev/tilelang-py312.tar.xz (made by ../shared/device/make-tilelang-bundle.sh) so that the
# working tree plus the bundle stays under the device call's 64 MiB: strips libz3's symbols and drops
# what a CUDA compile never reads (TVM's C++ sources, CUTLASS's tools), then recompresses (xz -9e).
#   usage (from the project root): bash benchmarks/slim_bundle.sh
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf .dev/tilelang-py312.tar.xz
strip --strip-unneeded "$tmp"/site/z3/lib/libz3.so.* 2>/dev/null || true
rm -rf "$tmp/site/tilelang/3rdparty/tvm/src" "$tmp/site/tilelang/3rdparty/cutlass/tools"
find "$tmp/site" -name __pycache__ -type d -prune -exec rm -rf {} +
tar -C "$tmp" -cf - site | xz -T0 -9e > .dev/tilelang-py312.tar.xz.new
mv .dev/tilelang-py312.tar.xz.new .dev/tilelang-py312.tar.xz
ls -la .dev
