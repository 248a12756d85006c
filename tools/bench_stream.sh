#!/bin/sh
# Expert streaming benchmark (issues 4, 13): a model far larger than a memory cgroup (v1, page
# cache included), decoded with experts streamed from disk: decode tok/s, MB and reads per token,
# the time decode waited for reads, hit rates, peak RSS, and the disk-bound limit for the bytes
# actually read (edge0-infer diskbw: O_DIRECT random reads of expert-sized blocks). Each run is
# one process under tools/memcap.sh (a fresh cgroup, the model dropped from the page cache first).
# Needs root and /sys/fs/cgroup/memory.
#   sh tools/bench_stream.sh [BUILD] [MODEL] [LIMIT_BYTES]
# Settings (environment):
#   E0_STREAM_TRACE=FILE   replay a real routing trace (../shared/routing/*.csv): the runs are
#                          "replay" (routing=replay: the trace's experts, read as a real run would)
#                          and "replay+predicted" (replay_predict=E0_STREAM_PREDICT, default 0.9:
#                          predicted routing with a predictor right that often), plus "actual" (the
#                          synth model's own router, far more repetitive than a trained model's);
#                          "replay+prefetch" (in E0_STREAM_CONFIGS) computes the trace's experts
#                          exactly and only reads that predictor's guesses ahead (prefetch=on)
#   E0_STREAM_CONFIGS      the list of runs instead (actual, actual+prefetch, predicted, replay,
#                          replay+predicted, replay+prefetch); default without a trace: actual
#                          actual+prefetch predicted
#   E0_STREAM_LLAMACPP=1   also llama.cpp (BUILD/bin/llamacpp-bench) under the same cap, the same
#                          prompt ids: its default (mmap + repacked copies) and --no-repack; it runs
#                          the model's own routing (it cannot replay), so its row is a best case
#   E0_STREAM_NTOK (32), E0_STREAM_CTX (1024), E0_STREAM_LL_NTOK (4), E0_STREAM_LL_TIMEOUT (1200 s),
#   E0_STREAM_OPTS (more edge0 flags for every run)
# Output: a Markdown table on stdout (edge0-bench stream-row); the JSON rows and stderr of each
# run in BUILD/bench-stream/.
set -e
BUILD=${1:-build}
MODEL=${2:-$BUILD/bench-models/qwen3-30b-a3b-q4k.gguf}
LIMIT=${3:-4294967296}
BIN=$BUILD/bin
NTOK=${E0_STREAM_NTOK:-32}
CTX=${E0_STREAM_CTX:-1024}
TRACE=${E0_STREAM_TRACE:-}
PREDICT=${E0_STREAM_PREDICT:-0.9}
LL_NTOK=${E0_STREAM_LL_NTOK:-4}
LL_TIMEOUT=${E0_STREAM_LL_TIMEOUT:-1200}
if [ -n "$TRACE" ]; then
    CONFIGS=${E0_STREAM_CONFIGS:-replay replay+predicted actual}
    [ -f "$TRACE" ] || { echo "bench_stream: trace $TRACE: no such file" >&2; exit 1; }
else
    CONFIGS=${E0_STREAM_CONFIGS:-actual actual+prefetch predicted}
fi
[ -w /sys/fs/cgroup/memory/cgroup.procs ] || { echo "bench_stream: needs root and the cgroup v1 memory controller" >&2; exit 1; }
if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    echo "bench_stream: writing $MODEL (~17 GB, once)" >&2
    "$BIN/edge0-infer" synth --arch qwen3moe --shape qwen3-30b-a3b --type q4_k --out "$MODEL" >&2
fi
disk=$("$BIN/edge0-infer" diskbw --model "$MODEL" --block-kib 864 --threads 8 --reads 2000)
echo "bench_stream: $disk" >&2
dbw=$(echo "$disk" | awk '{print $4}')
OUT=$BUILD/bench-stream
mkdir -p "$OUT"
"$BIN/edge0-bench" stream-row --header
for cfg in $CONFIGS; do
    case $cfg in
        actual) opts="--model-option routing=actual" ;;
        actual+prefetch) opts="--model-option routing=actual --model-option prefetch=on" ;;
        predicted) opts="--model-option routing=predicted" ;;
        replay | replay+predicted | replay+prefetch)
            [ -n "$TRACE" ] || { echo "bench_stream: $cfg needs E0_STREAM_TRACE=FILE" >&2; exit 1; }
            opts="--model-option routing=replay --model-option routing_trace=$TRACE"
            [ "$cfg" != replay ] && opts="$opts --model-option replay_predict=$PREDICT"
            [ "$cfg" = replay+prefetch ] && opts="$opts --model-option prefetch=on" ;;
        *) echo "bench_stream: unknown configuration '$cfg'" >&2; exit 1 ;;
    esac
    # shellcheck disable=SC2086 # opts is a list of flags
    if sh tools/memcap.sh "$LIMIT" "$MODEL" "$BIN/edge0-infer" bench --model "$MODEL" --prompt short --raw --warmup 3 \
        --ntok "$NTOK" --context "$CTX" $opts $E0_STREAM_OPTS >"$OUT/$cfg.json" 2>"$OUT/$cfg.stderr"; then
        "$BIN/edge0-bench" stream-row "$OUT/$cfg.json" --disk-mbps "$dbw" --label "$cfg"
    else
        echo "| $cfg | failed: $(tail -1 "$OUT/$cfg.stderr") |"
    fi
done
if [ "${E0_STREAM_LLAMACPP:-0}" = 1 ]; then
    LL=$BIN/llamacpp-bench
    [ -x "$LL" ] || { echo "| llama.cpp | not run: $LL missing (make llamacpp) |"; exit 0; }
    # the same prompt ids as edge0's --prompt short --raw
    "$BIN/edge0-infer" tokenize --model "$MODEL" <tests/fixtures/bench/short-story-prompt.txt >"$OUT/prompt.ids"
    for mode in default norepack; do
        flag=""
        [ $mode = norepack ] && flag=--no-repack
        # shellcheck disable=SC2086 # flag is empty or one flag
        if sh tools/memcap.sh "$LIMIT" "$MODEL" timeout "$LL_TIMEOUT" "$LL" --model "$MODEL" --tokens-file "$OUT/prompt.ids" \
            --warmup 1 --ntok "$LL_NTOK" --context "$CTX" $flag >"$OUT/llama.cpp-$mode.json" 2>"$OUT/llama.cpp-$mode.stderr"; then
            "$BIN/edge0-bench" stream-row "$OUT/llama.cpp-$mode.json" --disk-mbps "$dbw" --label "llama.cpp $mode (mmap, own routing)"
        else
            rc=$?
            why=$(grep -m1 'memcap:' "$OUT/llama.cpp-$mode.stderr" || true)
            [ $rc -eq 137 ] && why="killed (SIGKILL: the cgroup's OOM killer); $why"
            [ $rc -eq 124 ] && why="over ${LL_TIMEOUT} s; $why"
            echo "| llama.cpp $mode (mmap, own routing) | failed, exit $rc: $why |"
        fi
    done
fi
