#!/bin/sh
# side_by_side.sh — edge0-infer and llama.cpp on the same GGUF, the same prompt token ids and the
# same threads, alternated in one run; prints a Markdown table (medians, min to max, ratios).
#
# Usage: sh tools/side_by_side.sh MODEL.gguf [THREADS]        (after `make` and `make llamacpp`)
#
# One round runs, one process each and in this order: `edge0-infer bench --raw` on the prompt
# text, then llamacpp-bench in each of LLAMACPP_MODES on the ids our tokenizer gives for that
# text (so all see the same tokens; the first decoded ids are compared too). Rounds repeat
# PAIRS times (A B A B ...). A process that fails is recorded in the table and the run goes on.
# Environment:
#   BUILD (build)  PAIRS (3)  WARMUP (5)  NTOK (50)
#   LLAMACPP_MODES ("mmap nommap"): mmap = llama.cpp's defaults (file mapped, weights repacked
#           into anonymous memory), nommap = --no-mmap, norepack = mapped, --no-repack
#   CAP_PERCENT (unset): run every process under a cgroup v1 memory limit of this percentage of
#           the model file's size (tools/memcap.sh: needs root; it drops the file from the page
#           cache first, so prefer a private copy of the model); LLAMACPP_MODES then defaults to
#           "mmap norepack nommap"
#   PROMPT (tests/fixtures/bench/library-report-prompt-head.txt, the `--prompt medium` text; cut
#           at a word boundary when prompt + WARMUP + NTOK exceed the model's context length)
#   OUT (BUILD/side-by-side/<model name>): rows (*.jsonl), the prompt and ids used, table.md
#   TIMEOUT (3600 s per process)
set -eu

die() { echo "side_by_side.sh: $*" >&2; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: sh tools/side_by_side.sh MODEL.gguf [THREADS]"
MODEL=$1
THREADS=${2:-$(nproc)}
BUILD=${BUILD:-build}
PAIRS=${PAIRS:-3}
WARMUP=${WARMUP:-5}
NTOK=${NTOK:-50}
CAP_PERCENT=${CAP_PERCENT:-}
if [ -n "$CAP_PERCENT" ]; then LLAMACPP_MODES=${LLAMACPP_MODES:-mmap norepack nommap}; fi
LLAMACPP_MODES=${LLAMACPP_MODES:-mmap nommap}
PROMPT=${PROMPT:-tests/fixtures/bench/library-report-prompt-head.txt}
TIMEOUT=${TIMEOUT:-3600}
E0=$BUILD/bin/edge0-infer
LL=$BUILD/bin/llamacpp-bench

[ -f "$MODEL" ] || die "$MODEL: no such file"
[ -f "$PROMPT" ] || die "$PROMPT: no such file (run from the source tree or set PROMPT)"
[ -x "$E0" ] || die "$E0 missing: run make"
[ -x "$LL" ] || die "$LL missing: run make llamacpp (needs npm and the npm registry)"
command -v jq >/dev/null 2>&1 || die "jq not found (apt-get install jq)"
for v in "$THREADS" "$PAIRS" "$WARMUP" "$NTOK" "$TIMEOUT" ${CAP_PERCENT:+"$CAP_PERCENT"}; do
    case $v in '' | *[!0-9]*) die "'$v' is not a whole number (THREADS, PAIRS, WARMUP, NTOK, TIMEOUT, CAP_PERCENT)" ;; esac
done
for m in $LLAMACPP_MODES; do
    case $m in mmap | nommap | norepack) ;; *) die "LLAMACPP_MODES: unknown mode '$m' (mmap, nommap, norepack)" ;; esac
done
CAP=""
if [ -n "$CAP_PERCENT" ]; then
    limit=$(($(wc -c < "$MODEL") * CAP_PERCENT / 100))
    CAP="sh tools/memcap.sh $limit $MODEL"
fi

OUT=${OUT:-$BUILD/side-by-side/$(basename "$MODEL" .gguf)}
mkdir -p "$OUT"
rm -f "$OUT"/*.jsonl "$OUT"/*.stderr "$OUT"/*.failed

# The prompt: our tokenizer's ids for the raw text; shortened when the model's context is small.
ctx_len=$("$E0" info --model "$MODEL" | awk -F: '/^context length/ { gsub(/ /, "", $2); print $2 }')
case $ctx_len in '' | *[!0-9]*) die "$MODEL: no context length in 'edge0-infer info'" ;; esac
cp "$PROMPT" "$OUT/prompt.txt"
bytes=$(wc -c < "$PROMPT")
while :; do
    "$E0" tokenize --model "$MODEL" < "$OUT/prompt.txt" > "$OUT/ids.txt" || die "tokenizing $PROMPT failed"
    n_prompt=$(wc -w < "$OUT/ids.txt")
    need=$((n_prompt + WARMUP + NTOK))
    [ "$need" -gt "$ctx_len" ] || break
    bytes=$((bytes * 9 / 10))
    [ "$bytes" -gt 16 ] || die "WARMUP + NTOK ($WARMUP + $NTOK) do not fit the context length $ctx_len"
    head -c "$bytes" "$PROMPT" | sed '$ s/[^ ]*$//' > "$OUT/prompt.txt"
done
[ "$bytes" -eq "$(wc -c < "$PROMPT")" ] ||
    echo "side_by_side.sh: prompt cut to $bytes bytes ($n_prompt tokens) to fit the context length $ctx_len" >&2
# The same KV cache size for both: what the run needs, rounded up to 256 like llamacpp-bench does.
context=$(((need + 255) / 256 * 256))
[ "$context" -le "$ctx_len" ] || context=$ctx_len

# run NAME CMD...: one process (under the memory cap if any); its JSON row is appended to
# OUT/NAME.jsonl, or a failure line ("killed (out of memory?)", "exit 1", ...) to OUT/NAME.failed.
run() {
    name=$1
    shift
    echo "side_by_side.sh: $name: $*" >&2
    rc=0
    # shellcheck disable=SC2086 # CAP is a command prefix
    timeout "$TIMEOUT" $CAP "$@" > "$OUT/row.json" 2> "$OUT/$name.stderr" || rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -n 2 "$OUT/$name.stderr" >&2
        case $rc in
        124) why="timed out after $TIMEOUT s" ;;
        137) why="killed (out of memory?)" ;;
        *) why="exit $rc" ;;
        esac
        echo "$why" >> "$OUT/$name.failed"
        echo "side_by_side.sh: $name failed: $why (stderr: $OUT/$name.stderr)" >&2
    elif ! jq -c . "$OUT/row.json" >> "$OUT/$name.jsonl" 2>/dev/null; then
        echo "no JSON row" >> "$OUT/$name.failed"
    fi
    rm -f "$OUT/row.json"
}

engines=ours
for m in $LLAMACPP_MODES; do engines="$engines llamacpp-$m"; done
i=1
while [ "$i" -le "$PAIRS" ]; do
    run ours "$E0" bench --model "$MODEL" --user-file "$OUT/prompt.txt" --raw --warmup "$WARMUP" --ntok "$NTOK" \
        --threads "$THREADS" --context "$context"
    for m in $LLAMACPP_MODES; do
        case $m in mmap) flag="" ;; nommap) flag=--no-mmap ;; norepack) flag=--no-repack ;; esac
        # shellcheck disable=SC2086 # flag is empty or one flag
        run "llamacpp-$m" "$LL" --model "$MODEL" --tokens-file "$OUT/ids.txt" --warmup "$WARMUP" --ntok "$NTOK" \
            --threads "$THREADS" --context "$context" $flag
    done
    i=$((i + 1))
done

# Every engine must have seen the same number of prompt tokens.
for e in $engines; do
    [ -s "$OUT/$e.jsonl" ] || continue
    got=$(jq -s 'map(.n_prompt) | unique | if length == 1 then .[0] else "differ" end' "$OUT/$e.jsonl")
    [ "$got" = "$n_prompt" ] || die "$e saw $got prompt tokens, expected $n_prompt"
done
# Our greedy continuation, to compare with llama.cpp's first decoded ids (informative only).
n_first=$((WARMUP + NTOK + 1))
[ "$n_first" -le 8 ] || n_first=8
ours_first=$($CAP "$E0" run -m "$MODEL" --tokens "$(tr -s ' \n' ',,' < "$OUT/ids.txt" | sed 's/,$//')" --print-ids \
    -n "$n_first" --temp 0 -t "$THREADS" -c "$context" 2>/dev/null || echo "unavailable")
ll_first=$(cat "$OUT"/llamacpp-*.jsonl 2>/dev/null | jq -r '.first_tokens | map(tostring) | join(" ")' | sort -u |
    tr '\n' ';' | sed 's/;$//')

# stats FILE FIELD: "median min max" of a numeric field over the rows.
stats() {
    jq -s -r --arg f "$2" 'map(.[$f] // .memory[$f]) | sort | length as $n
        | [ (if $n % 2 == 1 then .[($n - 1) / 2] else (.[$n / 2 - 1] + .[$n / 2]) / 2 end), .[0], .[-1] ]
        | map(tostring) | join(" ")' "$1"
}
cell() { # "median [min to max]" with one decimal
    echo "$1" | awk '{ printf "%.1f [%.1f to %.1f]", $1, $2, $3 }'
}
label() {
    case $1 in
    ours) echo "edge0-infer" ;;
    llamacpp-mmap) echo "llama.cpp (defaults: mmap, repack)" ;;
    llamacpp-nommap) echo "llama.cpp --no-mmap" ;;
    llamacpp-norepack) echo "llama.cpp --no-repack (mmap only)" ;;
    esac
}
failures() { # ", 2 failed: killed (out of memory?)" or nothing
    [ -s "$OUT/$1.failed" ] || return 0
    printf ', %s failed: %s' "$(wc -l < "$OUT/$1.failed")" "$(sort -u "$OUT/$1.failed" | tr '\n' ';' | sed 's/;$//')"
}
ok_rows() { [ -s "$OUT/$1.jsonl" ]; }

table=$OUT/table.md
{
    e0_commit=$(cat "$OUT/ours.jsonl" 2>/dev/null |
        jq -r '.engine.git_commit[0:10] + (if .engine.git_dirty then "+dirty" else "" end)' | head -n 1)
    ll_ver=$(cat "$OUT"/llamacpp-*.jsonl 2>/dev/null |
        jq -r '"ggml " + .engine.version + " commit " + .engine.commit + ", " + .engine.package' | head -n 1)
    echo "Model \`$(basename "$MODEL")\` ($(wc -c < "$MODEL") bytes), $n_prompt prompt tokens (identical ids), warm-up $WARMUP,"
    echo "$NTOK timed decode steps, $THREADS threads, context $context, $PAIRS rounds alternated; $(date -u +%Y-%m-%dT%H:%MZ),"
    echo "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "edge0-infer: ${e0_commit:-no row}; llama.cpp: ${ll_ver:-no row}. Ranges are min to max over the rounds."
    [ -z "$CAP" ] || echo "Every process ran under a memory limit of $CAP_PERCENT% of the model file ($limit bytes, page cache included)."
    echo
    echo "| engine | prefill tok/s | decode tok/s | peak RSS MiB |"
    echo "| --- | --- | --- | --- |"
    for e in $engines; do
        if ok_rows "$e"; then
            rss=$(stats "$OUT/$e.jsonl" peak_rss_bytes | awk '{ printf "%.0f", $1 / 1048576 }')
            echo "| $(label "$e")$(failures "$e") | $(cell "$(stats "$OUT/$e.jsonl" prefill_tokens_per_second)") | $(cell "$(stats "$OUT/$e.jsonl" decode_tokens_per_second)") | $rss |"
        else
            echo "| $(label "$e")$(failures "$e") | - | - | - |"
        fi
    done
    for e in $engines; do
        [ "$e" = ours ] && continue
        ok_rows ours && ok_rows "$e" || continue
        p=$(stats "$OUT/ours.jsonl" prefill_tokens_per_second | cut -d' ' -f1)
        pl=$(stats "$OUT/$e.jsonl" prefill_tokens_per_second | cut -d' ' -f1)
        d=$(stats "$OUT/ours.jsonl" decode_tokens_per_second | cut -d' ' -f1)
        dl=$(stats "$OUT/$e.jsonl" decode_tokens_per_second | cut -d' ' -f1)
        echo "| ours / $(label "$e") (medians) | $(awk -v a="$p" -v b="$pl" 'BEGIN { printf "%.2fx", a / b }') | $(awk -v a="$d" -v b="$dl" 'BEGIN { printf "%.2fx", a / b }') | |"
    done
    echo
    echo "First greedy ids after the prompt: edge0-infer \`$ours_first\`, llama.cpp \`$ll_first\`."
} > "$table"
cat "$table"
