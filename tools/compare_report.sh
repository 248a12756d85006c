#!/bin/sh
# compare_report.sh — the side-by-side report docs/perf.md quotes: one model, edge0 against the
# pinned llama.cpp wherever llama.cpp can run the workload, three `edge0-bench compare` runs:
#   OUTDIR/single  --mode single: edge0 (CLI) vs llama.cpp (llamacpp-bench), alternated
#   OUTDIR/batch   --mode batch --batch-size 1,4,16: edge0's CLI (bench --batch-size B, lockstep),
#                  llama.cpp (llamacpp-bench --batch-size B: one llama_decode of B tokens per step)
#                  and edge0-infer serve (-np of the largest B) through the openai adapter, all at
#                  the same per-sequence context
#   OUTDIR/server  --mode server, a Poisson rate sweep against edge0-infer serve started by compare
#                  (every window's /metrics checked against the client) and llama.cpp's own
#                  llama-server, started by compare likewise when `make llamaserver` has built it
#                  from the pinned source (node-llama-cpp ships libllama, not llama-server), or at
#                  LLAMA_SERVER_URL=http://HOST:PORT of one you started; else said so
# then prints a Markdown summary (also OUTDIR/summary.md): the tables of the three reports, with
# the commands. Each part's full report is OUTDIR/PART/report.{json,md,svg}.
#
# usage: sh tools/compare_report.sh MODEL.gguf OUTDIR
# Settings (environment; the defaults are the perf.md run, 4 layers of the Qwen3-30B-A3B shape on
# a quiet 2-core machine: about half an hour):
#   BIN=build/bin  ROUNDS=3  WARMUP=5  NTOK=32  PROMPT=medium  THREADS=2  COOLDOWN=2  SIMD=avx2
#   BATCH_SIZES=1,4,16  BATCH_NTOK=64  BATCH_PROMPT=short
#   RATES=0.25,0.5,1,2,4  REQUESTS=32  PROMPT_LEN=64  OUTPUT_LEN=32  PARALLEL=4  SERVER_ROUNDS=2
#   LLAMA_SERVER=$BIN/../llamacpp/server/bin/llama-server  (make llamaserver)
#   LLAMA_SERVER_URL=  (instead: a running llama-server of the same model file for the server part)
#   LLAMACPP_BENCH=$BIN/llamacpp-bench  (llama.cpp's side, with its libraries in ../llamacpp/lib)
# Exit status: 0 when every part ran and was comparable, 1 otherwise (the summary says which).
# Not run by tests on a big model: tests/test_compare.c runs it on a tiny synth model, tiny settings.
set -u
if [ $# -ne 2 ]; then
    echo "usage: sh tools/compare_report.sh MODEL.gguf OUTDIR" >&2
    exit 2
fi
MODEL=$1
OUT=$2
BIN=${BIN:-build/bin}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-5}
NTOK=${NTOK:-32}
PROMPT=${PROMPT:-medium}
THREADS=${THREADS:-2}
COOLDOWN=${COOLDOWN:-2}
SIMD=${SIMD:-avx2}
BATCH_SIZES=${BATCH_SIZES:-1,4,16}
BATCH_NTOK=${BATCH_NTOK:-64}
BATCH_PROMPT=${BATCH_PROMPT:-short}
RATES=${RATES:-0.25,0.5,1,2,4}
REQUESTS=${REQUESTS:-32}
PROMPT_LEN=${PROMPT_LEN:-64}
OUTPUT_LEN=${OUTPUT_LEN:-32}
PARALLEL=${PARALLEL:-4}
SERVER_ROUNDS=${SERVER_ROUNDS:-2}
LLAMA_SERVER_URL=${LLAMA_SERVER_URL:-}
LLAMA_SERVER=${LLAMA_SERVER:-$BIN/../llamacpp/server/bin/llama-server}
LLAMACPP_BENCH=${LLAMACPP_BENCH:-$BIN/llamacpp-bench}

BENCH=$BIN/edge0-bench
CLI=$BIN/edge0-infer
for f in "$BENCH" "$CLI"; do
    [ -x "$f" ] || { echo "compare_report.sh: $f is not built (make)" >&2; exit 1; }
done
[ -f "$MODEL" ] || { echo "compare_report.sh: model $MODEL: not a file" >&2; exit 1; }
mkdir -p "$OUT" || exit 1
SIMD_FLAG=""
[ -n "$SIMD" ] && SIMD_FLAG="--simd $SIMD"
status=0
have_llama=1
[ -x "$LLAMACPP_BENCH" ] || have_llama=0
# where compare finds llama.cpp (and, with --simd, its CPU libraries): only when it is there
LLFLAG=""
[ $have_llama -eq 1 ] && LLFLAG="--llamacpp $LLAMACPP_BENCH"

run() { # NAME CMD...: runs and logs one part; its exit status in part_rc
    name=$1
    shift
    printf '%s\n' "$*" >"$OUT/$name.cmd"
    echo "compare_report.sh: $name: $*" >&2
    "$@" 2>"$OUT/$name.log"
    part_rc=$?
    [ $part_rc -eq 0 ] || { status=1; echo "compare_report.sh: $name: exit $part_rc (see $OUT/$name.log)" >&2; }
}

# 1. single: edge0 vs llama.cpp
if [ $have_llama -eq 1 ]; then
    run single "$BENCH" compare --model "$MODEL" --out "$OUT/single" --engines edge0,llama.cpp --rounds "$ROUNDS" \
        --warmup "$WARMUP" --ntok "$NTOK" --prompt "$PROMPT" --threads "$THREADS" --cooldown "$COOLDOWN" \
        --llamacpp "$LLAMACPP_BENCH" $SIMD_FLAG
    single_rc=$part_rc
else
    single_rc=skipped
    status=1
fi

# 2. batch: the CLI's lockstep batch and serve's concurrent streams, the same per-sequence context
MAXB=$(echo "$BATCH_SIZES" | tr ',' '\n' | sort -n | tail -1)
# the context: the prompt's ids + warm-up + ntok, rounded up to 256 (compare's own rule)
case "$BATCH_PROMPT" in
    long) PFILE=tests/fixtures/bench/library-report-prompt.txt ;;
    medium) PFILE=tests/fixtures/bench/library-report-prompt-head.txt ;;
    short) PFILE=tests/fixtures/bench/short-story-prompt.txt ;;
    *) PFILE=$BATCH_PROMPT ;;
esac
NIDS=$("$CLI" tokenize --model "$MODEL" <"$PFILE" | wc -w) || exit 1
CTX=$(( (NIDS + WARMUP + BATCH_NTOK + 1 + 255) / 256 * 256 ))
SERVE_LOG=$OUT/batch-serve.log
# E0_SIMD for the serve as compare's --simd sets it for the CLI
if [ -n "$SIMD" ]; then E0_SIMD=$SIMD; export E0_SIMD; fi
"$CLI" serve -m "$MODEL" --port 0 -np "$MAXB" -c $((CTX * MAXB)) -t "$THREADS" 2>"$SERVE_LOG" &
SERVE_PID=$!
URL=""
i=0
while [ $i -lt 600 ] && [ -z "$URL" ] && kill -0 $SERVE_PID 2>/dev/null; do
    URL=$(sed -n 's|.*listening on \(http://[0-9.]*:[0-9]*\).*|\1|p' "$SERVE_LOG" | head -1)
    [ -n "$URL" ] || sleep 0.5
    i=$((i + 1))
done
if [ -n "$URL" ]; then
    BENGINES="edge0,openai=$URL"
    [ $have_llama -eq 1 ] && BENGINES="edge0,llama.cpp,openai=$URL"
    run batch "$BENCH" compare --model "$MODEL" --out "$OUT/batch" --engines "$BENGINES" --mode batch \
        --batch-size "$BATCH_SIZES" --rounds "$ROUNDS" --warmup "$WARMUP" --ntok "$BATCH_NTOK" --prompt "$BATCH_PROMPT" \
        --threads "$THREADS" --context "$CTX" --cooldown "$COOLDOWN" $LLFLAG $SIMD_FLAG
    batch_rc=$part_rc
else
    echo "compare_report.sh: batch: edge0-infer serve did not start (see $SERVE_LOG)" >&2
    batch_rc="serve did not start"
    status=1
fi
kill $SERVE_PID 2>/dev/null
wait $SERVE_PID 2>/dev/null

# 3. server: a rate sweep against our serve (and llama-server when given)
ENGINES=edge0
SURL=""
LLAMA_SERVER_HOW=""
if [ -n "$LLAMA_SERVER_URL" ]; then
    ENGINES=edge0,llama.cpp
    SURL="--server-url llama.cpp=$LLAMA_SERVER_URL"
    LLAMA_SERVER_HOW="llama.cpp: the llama-server at $LLAMA_SERVER_URL."
elif [ -x "$LLAMA_SERVER" ]; then
    ENGINES=edge0,llama.cpp
    SURL="--llama-server $LLAMA_SERVER"
    LLAMA_SERVER_HOW="llama.cpp: its llama-server ($LLAMA_SERVER, built from the pinned source by \`make llamaserver\`: $(ls "$(dirname "$LLAMA_SERVER")"/../.built-* 2>/dev/null | sed 's|.*/.built-||' | head -1)), started by compare with the same -np, -c and -t."
fi
run server "$BENCH" compare --model "$MODEL" --out "$OUT/server" --engines "$ENGINES" $SURL --mode server --rates "$RATES" \
    --requests "$REQUESTS" --prompt-len "$PROMPT_LEN" --output-len "$OUTPUT_LEN" --parallel "$PARALLEL" \
    --rounds "$SERVER_ROUNDS" --prompt "$PROMPT" --threads "$THREADS" --cooldown "$COOLDOWN" $LLFLAG $SIMD_FLAG
server_rc=$part_rc

# the summary: sections of the reports' Markdown
section() { # FILE HEADING: the lines under the heading, up to the next "#" or "##" heading
    awk -v h="$2" '$0 == h { on = 1; next } on && /^##? / { exit } on { print }' "$1"
}
{
    echo "## edge0 vs llama.cpp: \`tools/compare_report.sh\` ($(date -u +%Y-%m-%dT%H:%MZ))"
    echo
    echo "Model \`$MODEL\`; the full reports are $OUT/{single,batch,server}/report.md. Machine, identities"
    echo "and conditions per process: in each report."
    echo
    echo "### Single sequence (edge0 vs llama.cpp)"
    echo
    if [ -f "$OUT/single/report.md" ]; then
        echo "\`$(cat "$OUT/single.cmd")\` (exit $single_rc)"
        echo
        section "$OUT/single/report.md" "## Comparison"
        section "$OUT/single/report.md" "## Results" | sed '/^### /,$d'
    else
        echo "Not run: llama.cpp is not installed ($LLAMACPP_BENCH; \`make llamacpp\` needs the npm registry)."
    fi
    echo
    echo "### Batch $BATCH_SIZES (edge0 CLI lockstep, llama.cpp batched llama_decode, edge0 serve streams)"
    echo
    if [ $have_llama -eq 0 ]; then
        echo "llama.cpp: not measured: not installed ($LLAMACPP_BENCH)."
        echo
    fi
    if [ -f "$OUT/batch/report.md" ]; then
        echo "\`$(cat "$OUT/batch.cmd")\` against \`edge0-infer serve -np $MAXB -c $((CTX * MAXB)) -t $THREADS\` (exit $batch_rc)"
        echo
        section "$OUT/batch/report.md" "## Results" | sed '/^### /,$d'
    else
        echo "Not run: $batch_rc."
    fi
    echo
    echo "### Server: Poisson rates $RATES"
    echo
    if [ -z "$LLAMA_SERVER_HOW" ]; then
        echo "llama.cpp: not measured: node-llama-cpp@3.21.1 ships no llama-server and none is built (\`make llamaserver\`, or LLAMA_SERVER_URL=URL of one)."
    else
        echo "$LLAMA_SERVER_HOW"
    fi
    echo
    if [ -f "$OUT/server/report.md" ]; then
        echo "\`$(cat "$OUT/server.cmd")\` (exit $server_rc)"
        echo
        section "$OUT/server/report.md" "## Server load"
    else
        echo "Not run (exit $server_rc, see $OUT/server.log)."
    fi
    for p in single batch server; do
        [ -f "$OUT/$p/report.md" ] || continue
        w=$(section "$OUT/$p/report.md" "## Warnings" | grep -v '^$')
        [ -n "$w" ] && { echo; echo "Warnings ($p):"; echo; echo "$w"; }
    done
} >"$OUT/summary.md"
cat "$OUT/summary.md"
exit $status
