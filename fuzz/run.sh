#!/bin/sh
# run.sh — run each libFuzzer target of fuzz/ for SECONDS on its corpus; print executions and
# coverage per target (libFuzzer's final stats); exit 1 if any target found a crash, leak,
# timeout or out-of-memory (the input is then in DIR/artifacts/, reproduce with
# DIR/fuzz_NAME DIR/artifacts/FILE).
#   usage: sh fuzz/run.sh DIR SECONDS [TARGET...]     (DIR = $(BUILD)/fuzz, as `make fuzz` calls it)
# Limits per input: -max_len below (each target also skips larger inputs itself), -timeout=10 s,
# -rss_limit_mb=2048 (malloc_limit follows it); leaks are checked (-detect_leaks=1, ASan).
DIR=$1; SECS=$2; shift 2
[ $# -gt 0 ] || set -- gguf tokenizer jinja messages trace serve grammar
export E0_SHARED="${E0_SHARED:-../shared}"
mkdir -p "$DIR/artifacts" "$DIR/logs"
status=0; summary=""
for t in "$@"; do
    case $t in
        gguf) max=131072 ;; tokenizer) max=4096 ;; jinja) max=32768 ;; messages) max=8192 ;; trace) max=16384 ;; serve) max=8192 ;; grammar) max=8192 ;; *) max=4096 ;;
    esac
    dict=""; [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
    mkdir -p "$DIR/corpus/$t"
    log="$DIR/logs/$t.log"
    echo "fuzz_$t: ${SECS}s (log: $log)"
    "$DIR/fuzz_$t" -max_total_time="$SECS" -print_final_stats=1 -max_len=$max -timeout=10 -rss_limit_mb=2048 \
        -detect_leaks=1 -artifact_prefix="$DIR/artifacts/$t-" $dict "$DIR/corpus/$t" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p')
    if [ $rc -ne 0 ]; then
        status=1; verdict="FINDING (exit $rc)"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz check failed|artifact_prefix|Test unit written)|ALARM|out-of-memory' "$log" | head -8
    else
        verdict=ok
    fi
    line=$(printf '%-10s %-18s execs %-10s exec/s %-6s cov %-6s ft %-7s corpus %-12s peak %s MB' \
        "$t" "$verdict" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${rss:-?}")
    echo "$line"
    summary="$summary$line
"
done
echo "---- fuzz summary (${SECS}s per target) ----"
printf '%s' "$summary"
exit $status
