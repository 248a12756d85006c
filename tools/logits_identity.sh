#!/bin/sh
# logits_identity.sh OLD_BIN NEW_BIN [SHARED] — are two builds of edge0-infer byte-identical?
#
# For every golden model in SHARED/golden (default ../shared) and every token case in its JSON,
# runs `logits` with both binaries — resident, and with experts streamed through a few slots per layer
# (4 slots: cached reads, direct reads, predicted routing) for MoE models — and compares the output files byte for byte; then the
# greedy ids of each `greedy` case. Prints one line per comparison and "N identical, N differ".
# Used to check a refactor (issue 9): a change that moves code must not move a bit.
set -u
OLD=${1:?usage: logits_identity.sh OLD_BIN NEW_BIN [SHARED]}
NEW=${2:?usage: logits_identity.sh OLD_BIN NEW_BIN [SHARED]}
SHARED=${3:-../shared}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The comparison is of F32 KV caches (the references' and what builds before -ctk/-ctv had): a
# binary that knows the flags gets -ctk f32 -ctv f32 (its default is f16).
kv_flags() { if "$1" logits --help 2>/dev/null | grep -q -- --cache-type-k; then echo "-ctk f32 -ctv f32"; fi; }
OLD_KV=$(kv_flags "$OLD"); NEW_KV=$(kv_flags "$NEW")
same=0; diff=0
note() { if [ "$1" = 0 ]; then same=$((same + 1)); echo "identical $2"; else diff=$((diff + 1)); echo "DIFFER    $2"; fi; }
for json in "$SHARED"/golden/*.golden.json; do
    [ -f "$json" ] || { echo "no golden models in $SHARED/golden" >&2; exit 1; }
    model=${json%.golden.json}.gguf; name=$(basename "$model" .gguf)
    opts="-"
    if grep -q '"architecture":"[a-z0-9]*moe"' "$json" || case "$name" in *moe*) true;; *) false;; esac; then
        opts="- experts=stream,expert_slots=4 experts=stream,expert_slots=4,expert_read=direct experts=stream,expert_slots=4,routing=predicted"
    fi
    i=0
    grep -o '"tokens": *\[[^]]*\]' "$json" | sed 's/.*\[//; s/\]//; s/ //g' | while read -r toks; do
        i=$((i + 1))
        for o in $opts; do
            set --; [ "$o" = - ] || for kv in $(echo "$o" | tr ',' ' '); do set -- "$@" --model-option "$kv"; done
            rm -f "$tmp/a" "$tmp/b"
            # shellcheck disable=SC2086 # the KV flags are words
            "$OLD" logits --model "$model" --tokens "$toks" --out "$tmp/a" $OLD_KV "$@" >/dev/null 2>&1
            # shellcheck disable=SC2086
            "$NEW" logits --model "$model" --tokens "$toks" --out "$tmp/b" $NEW_KV "$@" >/dev/null 2>&1
            cmp -s "$tmp/a" "$tmp/b" && [ -s "$tmp/a" ]; note $? "$name case $i logits ($o)"
        done
    done > "$tmp/log.$name"
    grep -o '"prompt": *\[[^]]*\], *"n": *[0-9]*' "$json" | sed 's/.*\[//; s/\], *"n": */ /; s/ *, */,/g' | while read -r toks n; do
        rm -f "$tmp/a" "$tmp/b"
        # shellcheck disable=SC2086
        "$OLD" run --model "$model" --tokens "$toks" -n "$n" --temp 0 --print-ids $OLD_KV > "$tmp/a" 2>/dev/null
        # shellcheck disable=SC2086
        "$NEW" run --model "$model" --tokens "$toks" -n "$n" --temp 0 --print-ids $NEW_KV > "$tmp/b" 2>/dev/null
        cmp -s "$tmp/a" "$tmp/b" && [ -s "$tmp/a" ]; note $? "$name greedy ($n ids)"
    done >> "$tmp/log.$name"
    cat "$tmp/log.$name"
done > "$tmp/all"
cat "$tmp/all"
same=$(grep -c '^identical' "$tmp/all"); diff=$(grep -c '^DIFFER' "$tmp/all")
echo "$same identical, $diff differ"
[ "$diff" -eq 0 ] && [ "$same" -gt 0 ]
