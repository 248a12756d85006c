#!/bin/sh
# `make bench`: the standard measurement (edge0-bench sweep) of $E0_BENCH_MODEL with this build.
# The report goes to $E0_BENCH_OUT (default $BUILD/bench-report); extra sweep flags in
# $E0_BENCH_ARGS, e.g. E0_BENCH_ARGS="--configs all --runs 5". See docs/bench.md.
BUILD=${1:-build}
if [ -z "$E0_BENCH_MODEL" ]; then
    echo "make bench: set E0_BENCH_MODEL=/path/to/model.gguf (optional: E0_BENCH_ARGS, E0_BENCH_OUT)" >&2
    exit 1
fi
# shellcheck disable=SC2086 # E0_BENCH_ARGS is a list of flags
exec "$BUILD/bin/edge0-bench" sweep --cli "$BUILD/bin/edge0-infer" --model "$E0_BENCH_MODEL" \
    --out "${E0_BENCH_OUT:-$BUILD/bench-report}" $E0_BENCH_ARGS
