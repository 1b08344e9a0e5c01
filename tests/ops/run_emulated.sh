#!/bin/sh
# run_emulated.sh CPU TEST_BINARY [ARGS...]: runs a test binary on a CPU emulated by qemu's
# user mode (CPU as qemu names it: Haswell for AVX2 with FMA and F16C, qemu64 for baseline
# x86-64), so that the kernels, the instruction-set clones and the run-time choices a CPU
# without AVX-512 takes are tested on one that has it. Exits 77 (skipped, for ctest) where
# qemu-x86_64 is missing; tools/install-deps installs it (Debian's qemu-user).
set -eu
if [ $# -lt 2 ]; then
  echo "usage: run_emulated.sh CPU TEST_BINARY [ARGS...]" >&2
  exit 2
fi
cpu=$1
shift
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  echo "run_emulated.sh: qemu-x86_64 not found (Debian's qemu-user): skipped" >&2
  exit 77
fi
exec qemu-x86_64 -cpu "$cpu" "$@"
