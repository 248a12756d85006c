#!/bin/sh
# side_by_side.sh — edge0-infer and llama.cpp on the same GGUF, the same prompt token ids and the
# same threads, alternated in one run: a thin wrapper of `edge0-bench compare` (bench/compare.c),
# kept for its environment variables. Prints the report's Markdown.
#
# Usage: sh tools/side_by_side.sh MODEL.gguf [THREADS]        (after `make` and `make llamacpp`)
# Environment:
#   BUILD (build)  PAIRS (3 rounds)  WARMUP (5)  NTOK (50)  TIMEOUT (3600 s per process)
#   LLAMACPP_MODES ("mmap nommap"): mmap = llama.cpp's defaults (file mapped, weights repacked),
#           nommap = --no-mmap, norepack = mapped, --no-repack
#   CAP_PERCENT (unset): every process under a cgroup v1 memory limit of this percentage of the
#           model file (tools/memcap.sh, needs root); LLAMACPP_MODES then defaults to
#           "mmap norepack nommap"
#   PROMPT (medium): long, medium, short or a text file
#   OUT (BUILD/side-by-side/<model name>): report.json, report.md, report.svg, ids.txt
#   COOLDOWN (0 s between processes)
set -eu
die() { echo "side_by_side.sh: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: sh tools/side_by_side.sh MODEL.gguf [THREADS]"
MODEL=$1
THREADS=${2:-$(nproc)}
BUILD=${BUILD:-build}
if [ -n "${CAP_PERCENT:-}" ]; then LLAMACPP_MODES=${LLAMACPP_MODES:-mmap norepack nommap}; fi
engines=edge0
for m in ${LLAMACPP_MODES:-mmap nommap}; do
    case $m in
    mmap) engines="$engines,llama.cpp" ;;
    nommap | norepack) engines="$engines,llama.cpp-$m" ;;
    *) die "LLAMACPP_MODES: unknown mode '$m' (mmap, nommap, norepack)" ;;
    esac
done
OUT=${OUT:-$BUILD/side-by-side/$(basename "$MODEL" .gguf)}
rc=0
"$BUILD/bin/edge0-bench" compare --model "$MODEL" --out "$OUT" --engines "$engines" --threads "$THREADS" \
    --rounds "${PAIRS:-3}" --warmup "${WARMUP:-5}" --ntok "${NTOK:-50}" --timeout "${TIMEOUT:-3600}" \
    --prompt "${PROMPT:-medium}" --cooldown "${COOLDOWN:-0}" ${CAP_PERCENT:+--memory-cap "$CAP_PERCENT"} || rc=$?
[ -f "$OUT/report.md" ] && cat "$OUT/report.md"
exit $rc
