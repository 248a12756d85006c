#!/bin/sh
# Expert streaming benchmark (issue 4): the full 48-layer synth Qwen3-30B-A3B-shape model at Q4_K
# (~17 GB) inside a memory cgroup (v1, page cache included) of 4 GiB: peak RSS, decode tok/s for
# routing=actual, actual+prefetch and predicted, bytes read per token, hit rates, and the disk-bound
# limit from the disk bandwidth measured here (edge0-infer diskbw: O_DIRECT random reads of
# expert-sized blocks). Needs root and /sys/fs/cgroup/memory.
#   sh tools/bench_stream.sh [BUILD] [MODEL] [LIMIT_BYTES]
set -e
BUILD=${1:-build}
MODEL=${2:-$BUILD/bench-models/qwen3-30b-a3b-q4k.gguf}
LIMIT=${3:-4294967296}
BIN=$BUILD/bin
NTOK=${E0_STREAM_NTOK:-32}
CTX=${E0_STREAM_CTX:-1024}
[ -w /sys/fs/cgroup/memory/cgroup.procs ] || { echo "bench_stream: needs root and the cgroup v1 memory controller" >&2; exit 1; }
if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    echo "bench_stream: writing $MODEL (~17 GB, once)" >&2
    "$BIN/edge0-infer" synth --arch qwen3moe --shape qwen3-30b-a3b --type q4_k --out "$MODEL" >&2
fi
CG=/sys/fs/cgroup/memory/e0-bench-$$
mkdir "$CG"
trap 'rmdir "$CG" 2>/dev/null' EXIT
echo "$LIMIT" > "$CG/memory.limit_in_bytes"
disk=$("$BIN/edge0-infer" diskbw --model "$MODEL" --block-kib 864 --threads 8 --reads 2000)
echo "bench_stream: $disk" >&2
dbw=$(echo "$disk" | awk '{print $4}')
OUT=$BUILD/bench-stream
mkdir -p "$OUT"
"$BIN/edge0-bench" stream-row --header
for cfg in actual actual+prefetch predicted; do
    case $cfg in
        actual) opts="--model-option routing=actual" ;;
        actual+prefetch) opts="--model-option routing=actual --model-option prefetch=on" ;;
        predicted) opts="--model-option routing=predicted" ;;
    esac
    # shellcheck disable=SC2086 # opts is a list of flags
    if sh -c "echo \$\$ > $CG/cgroup.procs && exec $BIN/edge0-infer bench --model $MODEL --prompt short --raw --warmup 3 --ntok $NTOK --context $CTX $opts $E0_STREAM_OPTS" \
        > "$OUT/$cfg.json" 2> "$OUT/$cfg.stderr"; then
        "$BIN/edge0-bench" stream-row "$OUT/$cfg.json" --disk-mbps "$dbw" --label "$cfg"
    else
        echo "| $cfg | failed: $(tail -1 "$OUT/$cfg.stderr") |"
    fi
done
